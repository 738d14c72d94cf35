// The hand-written MessagePack codec against hand-written bytes: PROTOCOL.md's
// mapping, the `$bin` rule both ways, and hostile frames that must fail with
// FormatException and nothing else (docs/protocol-notes.md's bounds).
using System;
using System.Collections.Generic;
using System.Linq;
using System.Text;
using NUnit.Framework;
using Parley;

namespace Parley.Tests
{
    [TestFixture]
    public class MsgPackTests
    {
        private static byte[] B(params int[] xs) { return xs.Select(x => (byte)x).ToArray(); }

        private static byte[] S(string s)
        {
            var b = Encoding.UTF8.GetBytes(s);
            return new[] { (byte)(0xa0 | b.Length) }.Concat(b).ToArray();
        }

        private static byte[] Cat(params byte[][] parts) { return parts.SelectMany(p => p).ToArray(); }

        private static JsonValue Decode(byte[] b) { return MsgPackCodec.Instance.Decode(b, 0, b.Length); }

        [Test]
        public void DecodesMapsBatchesAndBinBodies()
        {
            var v = Decode(Cat(B(0x83), S("op"), S("msg"), S("seq"), B(0xce, 0, 0, 0, 7), S("body"),
                               B(0x82), S("b"), B(0xc4, 3, 0, 1, 255), S("f"), B(0xca, 0x3f, 0, 0, 0)));
            Assert.AreEqual(JsonValue.Parse("{\"op\":\"msg\",\"seq\":7,\"body\":{\"b\":{\"$bin\":\"AAH/\"},\"f\":0.5}}"), v);
            long seq;
            Assert.IsTrue(v.TryGetLong("seq", out seq));
            Assert.AreEqual(7, seq);
            var batch = Decode(Cat(B(0x92, 0x82), S("op"), S("msg"), S("body"), B(0xc4, 1, 9), B(0x81), S("op"), S("pong")));
            Assert.AreEqual(JsonType.Array, batch.Type);
            Assert.AreEqual("CQ==", batch[0]["body"]["$bin"].AsString);
        }

        [Test]
        public void RefusesWhatTheMappingRefuses()
        {
            var op = Cat(B(0x81), S("op"), S("msg"));
            var bad = new Dictionary<string, byte[]>
            {
                { "empty", B() },
                { "trailing bytes", Cat(op, B(0xc0)) },
                { "0xc1", Cat(B(0x81), S("op"), B(0xc1)) },
                { "truncated", op.Take(op.Length - 1).ToArray() },
                { "ext", Cat(B(0x81), S("body"), B(0xd4, 1, 0)) },
                { "int key", B(0x81, 0x01, 0x02) },
                { "invalid UTF-8", Cat(B(0x81), S("op"), B(0xa2, 0xc3, 0x28)) },
                { "NaN", Cat(B(0x81), S("body"), B(0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0)) },
                { "infinity", Cat(B(0x81), S("body"), B(0xca, 0x7f, 0x80, 0, 0)) },
                { "bin outside a body", Cat(B(0x81), S("id"), B(0xc4, 1, 0)) },
                { "top-level int", B(0x07) },
                { "batch of ints", B(0x92, 1, 2) },
                { "array count past the end", Cat(B(0x81), S("body"), B(0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0)) },
                { "str length past the end", Cat(B(0x81), S("op"), B(0xdb, 0xff, 0xff, 0xff, 0xff, 0x61)) },
                { "map count past the end", Cat(B(0xdf, 0xff, 0xff, 0xff, 0xff), S("a"), B(0xc0)) },
                { "too deep", Cat(B(0x81), S("body"), Enumerable.Repeat((byte)0x91, 200000).ToArray(), B(0xc0)) },
            };
            foreach (var kv in bad)
                Assert.Throws<FormatException>(() => Decode(kv.Value), kv.Key);
            Assert.IsNotNull(Decode(Cat(B(0x81), S("body"), Enumerable.Repeat((byte)0x91, 1000).ToArray(), B(0xc0))));
        }

        [Test]
        public void RandomBytesFailWithFormatExceptionOnly()
        {
            var rnd = new Random(7);
            for (int i = 0; i < 20000; i++)
            {
                var b = new byte[rnd.Next(1, 40)];
                rnd.NextBytes(b);
                try
                {
                    Decode(b);
                }
                catch (FormatException)
                {
                }
            }
        }

        [Test]
        public void EncodesBinOnlyForACanonicalDollarBinInABody()
        {
            var frame = JsonValue.Parse("{\"op\":\"pub\",\"id\":{\"$bin\":\"AAE=\"},\"body\":{\"data\":{\"$bin\":\"AAE=\"}," +
                                        "\"loose\":{\"$bin\":\"AAE\"},\"odd\":{\"$bin\":\"AAF=\"},\"two\":{\"$bin\":\"AA==\",\"x\":1}," +
                                        "\"n\":-200,\"f\":1.5,\"big\":9007199254740993,\"list\":[1,\"two\",null,true]}}");
            var wire = MsgPackCodec.Instance.Encode(frame);
            var hex = BitConverter.ToString(wire);
            Assert.IsTrue(hex.Contains(BitConverter.ToString(B(0xc4, 2, 0, 1))), hex);
            Assert.AreEqual(frame, Decode(wire));
            byte[] raw;
            Assert.IsTrue(Bin.TryRead(Bin.Of(new byte[] { 0, 1, 255 }), out raw));
            CollectionAssert.AreEqual(new byte[] { 0, 1, 255 }, raw);
            Assert.IsFalse(Bin.TryRead(JsonValue.Parse("{\"$bin\":\"AAF=\"}"), out raw));
            Assert.IsFalse(Bin.TryRead(JsonValue.Parse("{\"$bin\":\"AA E=\"}"), out raw));
        }

        // Records what the client asked for and sent.
        private sealed class WireTransport : IWebSocketTransport
        {
            public string SubProtocol { get; set; }
            public ITransportEvents Events;
            public readonly List<KeyValuePair<byte[], bool>> Sent = new List<KeyValuePair<byte[], bool>>();
            public void Connect(string url, ITransportEvents events) { Events = events; }
            public void Send(byte[] bytes, bool binary) { Sent.Add(new KeyValuePair<byte[], bool>(bytes, binary)); }
            public void Close(int code, string reason) { }
            public void Abort() { }

            public JsonValue Frame(int k)
            {
                var f = Sent[k];
                return f.Value ? MsgPackCodec.Instance.Decode(f.Key, 0, f.Key.Length) : JsonReader.Parse(f.Key, 0, f.Key.Length);
            }

            public void Json(string text, bool binary = false)
            {
                var b = binary ? MsgPackCodec.Instance.Encode(JsonValue.Parse(text)) : Encoding.UTF8.GetBytes(text);
                Events.OnMessage(b, 0, b.Length, binary);
            }
        }

        private static ParleyClient Client(string url, WireTransport t, List<string> errors)
        {
            var c = new ParleyClient(new ClientOptions
            {
                Url = url, Token = "T", Codec = MsgPackCodec.Instance, TransportFactory = () => t,
            });
            c.Error += e => errors.Add(e.Code);
            return c;
        }

        [Test]
        public void WebSocketOffersTheSubprotocolAndSaysHelloInMsgpack()
        {
            var t = new WireTransport();
            var errors = new List<string>();
            var c = Client("ws://h/v1/ws", t, errors);
            string enc = null;
            c.Opened += w => enc = w.Enc;
            c.Connect();
            c.Poll();
            Assert.AreEqual("parley.v1.msgpack", t.SubProtocol);
            t.Events.OnOpen();
            c.Poll();
            Assert.AreEqual(1, t.Sent.Count);
            Assert.IsTrue(t.Sent[0].Value);
            var hello = t.Frame(0);
            Assert.AreEqual("hello", hello.GetString("op"));
            Assert.IsFalse(hello.Has("enc"));
            t.Json("{\"op\":\"welcome\",\"rid\":" + hello["rid"] + ",\"conn\":\"c1\",\"enc\":\"msgpack\"}", true);
            c.Poll();
            Assert.AreEqual("msgpack", enc);
            // A text message on a MessagePack WebSocket is malformed: reported, not a crash.
            t.Json("{\"op\":\"pong\"}");
            c.Poll();
            CollectionAssert.AreEqual(new[] { ErrorCodes.BadFrame }, errors);
        }

        [Test]
        public void TcpSaysHelloInJsonAndSwitchesAfterTheWelcome()
        {
            var t = new WireTransport();
            var errors = new List<string>();
            var c = Client("tcp://h:1", t, errors);
            c.Connect();
            c.Poll();
            Assert.IsNull(t.SubProtocol);
            t.Events.OnOpen();
            c.Poll();
            Assert.IsFalse(t.Sent[0].Value);
            var hello = t.Frame(0);
            Assert.AreEqual("msgpack", hello.GetString("enc"));
            t.Json("{\"op\":\"welcome\",\"rid\":" + hello["rid"] + ",\"conn\":\"c1\",\"enc\":\"msgpack\"}");
            // What follows the welcome is MessagePack both ways (the TCP transport
            // reports every message as not binary).
            t.Json("{\"op\":\"pong\",\"rid\":999}", false);
            c.Poll();
            CollectionAssert.AreEqual(new[] { ErrorCodes.BadFrame }, errors, "JSON after the welcome");
            c.Ping();
            c.Poll();
            Assert.IsTrue(t.Sent[t.Sent.Count - 1].Value);
            Assert.AreEqual("ping", t.Frame(t.Sent.Count - 1).GetString("op"));
            var b = MsgPackCodec.Instance.Encode(JsonValue.Parse("{\"op\":\"pong\",\"rid\":1000}"));
            t.Events.OnMessage(b, 0, b.Length, false);
            c.Poll();
            Assert.AreEqual(1, errors.Count, "MessagePack after the welcome reads");
        }

        [Test]
        public void TcpFallsBackToJsonWhenTheServerRefusesEnc()
        {
            var t = new WireTransport();
            var errors = new List<string>();
            var c = Client("tcp://h:1", t, errors);
            string enc = null;
            c.Opened += w => enc = w.Enc;
            c.Connect();
            c.Poll();
            t.Events.OnOpen();
            c.Poll();
            var hello = t.Frame(0);
            t.Json("{\"op\":\"error\",\"rid\":" + hello["rid"] + ",\"code\":\"bad_request\",\"msg\":\"unsupported enc\"}");
            c.Poll();
            Assert.AreEqual(2, t.Sent.Count);
            var again = t.Frame(1);
            Assert.IsFalse(again.Has("enc"));
            t.Json("{\"op\":\"welcome\",\"rid\":" + again["rid"] + ",\"conn\":\"c1\"}");
            c.Poll();
            Assert.AreEqual("json", enc);
            Assert.AreEqual(ClientState.Open, c.State);
            c.Ping();
            c.Poll();
            Assert.IsFalse(t.Sent[t.Sent.Count - 1].Value);
        }
    }
}
