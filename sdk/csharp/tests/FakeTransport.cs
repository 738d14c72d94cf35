// A scripted transport for the state-machine tests: the test plays the server.
// Every connection attempt is one FakeTransport; what the client sends is
// decoded into Sent, and the test answers with Deliver / Open / Drop. Events go
// through the client's real inbox (Deliver encodes with the client's codec,
// JSON or MessagePack), so only the socket is fake.
//
// Test thread only (it calls the events synchronously; Poll picks them up).
using System;
using System.Collections.Generic;
using System.Text;
using Parley;

namespace Parley.Tests
{
    internal sealed class FakeTransport : ITransport
    {
        public readonly List<JsonValue> Sent = new List<JsonValue>();
        public string Url;
        public ITransportEvents Events;
        public bool Closed, Aborted;
        public int CloseCode;
        public ICodec Codec = JsonCodec.Instance;

        public void Connect(string url, ITransportEvents events) { Url = url; Events = events; }

        public void Send(byte[] bytes, bool binary)
        {
            Sent.Add(Codec.Decode(bytes, 0, bytes.Length));
        }

        public void Close(int code, string reason) { Closed = true; CloseCode = code; }

        public void Abort() { Aborted = true; }

        public void Open() { Events.OnOpen(); }

        public void Deliver(string json)
        {
            if (Codec.Binary) { Deliver(JsonValue.Parse(json)); return; }
            var b = Encoding.UTF8.GetBytes(json);
            Events.OnMessage(b, 0, b.Length, false);
        }

        public void Deliver(JsonValue v)
        {
            if (!Codec.Binary) { Deliver(v.ToString()); return; }
            var b = Encode(v);
            Events.OnMessage(b, 0, b.Length, true);
        }

        // MessagePack: the codec writes one frame (a map); a batch is an array header, then each.
        private byte[] Encode(JsonValue v)
        {
            if (v.Type != JsonType.Array) return Codec.Encode(v);
            if (v.Count > 15) throw new ArgumentException("a fake batch holds at most 15 frames");
            var parts = new List<byte> { (byte)(0x90 | v.Count) };
            foreach (var f in v.Items) parts.AddRange(Codec.Encode(f));
            return parts.ToArray();
        }

        public void Drop(int code = 1006, string reason = "") { Events.OnClose(code, reason); }

        /// <summary>Sent frames with this op.</summary>
        public List<JsonValue> Ops(string op)
        {
            return Sent.FindAll(f => f.GetString("op") == op);
        }

        public JsonValue Last(string op)
        {
            var all = Ops(op);
            return all.Count > 0 ? all[all.Count - 1] : null;
        }
    }

    /// <summary>A client wired to fake transports, a fake clock and seeded randomness.</summary>
    internal sealed class Rig
    {
        public long NowMs = 1000;
        public const long WallBase = 1764460800000; // the wall clock is WallBase + NowMs
        public readonly List<FakeTransport> Transports = new List<FakeTransport>();
        public readonly ParleyClient Client;
        public readonly List<string> Log = new List<string>();
        public readonly List<DisconnectInfo> Disconnects = new List<DisconnectInfo>();
        public int TokenCalls;

        public Rig(Action<ClientOptions> configure = null, bool tokenProvider = false)
        {
            var o = new ClientOptions
            {
                Url = "ws://fake/v1/ws",
                Clock = () => NowMs,
                WallClock = () => WallBase + NowMs,
                Random = new Random(7),
                IdPrefix = "t-",
                OnCallbackException = e => Log.Add("callback threw: " + e.Message),
            };
            // Each transport speaks the codec the test configured (read when it is made).
            o.TransportFactory = () =>
            {
                var t = new FakeTransport { Codec = o.Codec ?? JsonCodec.Instance };
                Transports.Add(t);
                return t;
            };
            if (tokenProvider)
                o.TokenProvider = () => System.Threading.Tasks.Task.FromResult("tok-" + (++TokenCalls));
            else o.Token = "tok";
            if (configure != null) configure(o);
            Client = new ParleyClient(o);
            Client.Disconnected += d => Disconnects.Add(d);
        }

        public FakeTransport T { get { return Transports[Transports.Count - 1]; } }

        public void Poll() { Client.Poll(); }

        public void Advance(long ms)
        {
            // Step so that timers due in between run in order, as a game loop would see them.
            long end = NowMs + ms;
            while (NowMs < end)
            {
                NowMs = Math.Min(end, NowMs + 10);
                Client.Poll();
            }
        }

        /// <summary>Opens the latest transport and welcomes it (answering the hello).</summary>
        public void Welcome(string user = "u1", int heartbeatMs = 25000, JsonValue caps = null)
        {
            T.Open();
            Poll();
            var hello = T.Last("hello");
            if (hello == null) throw new InvalidOperationException("no hello sent");
            var welcome = JsonValue.Object().Set("op", "welcome").Set("rid", hello["rid"]).Set("conn", "c" + Transports.Count)
                .Set("user", user).Set("tenant", "demo").Set("heartbeat_ms", heartbeatMs);
            if (caps != null) welcome.Set("caps", caps);
            T.Deliver(welcome);
            Poll();
        }

        /// <summary>Answers the latest join of <paramref name="ch"/> with joined at <paramref name="seq"/>.</summary>
        public JsonValue Joined(string ch, long seq, bool recovered = true, string extra = null)
        {
            JsonValue join = null;
            foreach (var f in T.Ops("join")) if (f.GetString("ch") == ch) join = f;
            if (join == null) throw new InvalidOperationException("no join of " + ch + " sent");
            var reply = JsonValue.Object().Set("op", "joined").Set("rid", join["rid"]).Set("ch", ch).Set("seq", seq)
                .Set("recovered", recovered);
            T.Deliver(reply);
            Poll();
            return join;
        }

        public static JsonValue Msg(string ch, long seq, string from = "u2")
        {
            return JsonValue.Object().Set("op", "msg").Set("ch", ch).Set("seq", seq).Set("from", from)
                .Set("id", "m" + seq).Set("ts", 1764460800000 + seq).Set("body", JsonValue.Object().Set("n", seq));
        }

        public void Ack(JsonValue pub, long seq, bool dup = false)
        {
            T.Deliver(JsonValue.Object().Set("op", "ack").Set("rid", pub["rid"]).Set("ch", pub["ch"])
                .Set("id", pub["id"]).Set("seq", seq).Set("dup", dup));
            Poll();
        }

        public void ErrorFor(JsonValue frame, string code, int? retryMs = null)
        {
            var e = JsonValue.Object().Set("op", "error").Set("rid", frame["rid"]).Set("code", code).Set("msg", code);
            if (retryMs.HasValue) e.Set("retry_ms", retryMs.Value);
            T.Deliver(e);
            Poll();
        }
    }
}
