// PROTOCOL.md "State deltas" in the SDK, over a fake transport: the page's
// test vectors through StateDelta.Apply and through the client (in both
// encodings), the hello capability and the welcome's caps, what the client
// does with an `sd` it cannot apply (drops it, re-joins the channel with
// `since`, never invents a body), stale deltas after a leave, and the bound
// on the streams kept. RealServerTests runs the same against the server.
using System;
using System.Collections.Generic;
using NUnit.Framework;
using Parley;

namespace Parley.Tests
{
    [TestFixture]
    public class StateDeltaTests
    {
        private const string Ch = "world:7";

        // PROTOCOL.md's table: base, what the sd carries after `sid`, applied.
        private static readonly string[][] Vectors =
        {
            new[] { "{\"x\":1,\"y\":2,\"name\":\"ann\"}", "{\"body\":{\"x\":1.5}}", "{\"x\":1.5,\"y\":2,\"name\":\"ann\"}" },
            new[] { "{\"x\":1}", "{\"body\":{}}", "{\"x\":1}" },
            new[] { "{\"x\":1,\"hp\":9,\"fx\":null}", "{\"body\":{\"x\":1.0,\"emote\":\"wave\"},\"unset\":[\"fx\"]}",
                    "{\"x\":1.0,\"hp\":9,\"emote\":\"wave\"}" },
            new[] { "{\"inv\":[1,2],\"o\":{\"a\":1,\"b\":2}}", "{\"body\":{\"o\":{\"a\":1,\"b\":3}}}",
                    "{\"inv\":[1,2],\"o\":{\"a\":1,\"b\":3}}" },
            new[] { "{\"a\":1}", "{\"body\":{},\"unset\":[\"a\"]}", "{}" },
        };

        private static JsonValue J(string s) { return JsonValue.Parse(s); }

        [Test]
        public void ApplyGivesTheVectorsAppliedColumnAndChangesNeitherArgument()
        {
            foreach (var v in Vectors)
            {
                var baseBody = J(v[0]);
                var sd = J(v[1]);
                var applied = StateDelta.Apply(baseBody, sd["body"], sd["unset"]);
                Assert.AreEqual(J(v[2]), applied, v[1]);
                Assert.AreEqual(J(v[0]), baseBody, "the base is unchanged");
                Assert.AreEqual(J(v[1]), sd, "the delta is unchanged");
            }
            // A key both unset and set is set (unset applies first); a key given twice counts once, the last.
            Assert.AreEqual(J("{\"a\":3,\"b\":2}"), StateDelta.Apply(J("{\"a\":1,\"b\":2}"), J("{\"a\":3}"), J("[\"a\"]")));
            var twice = StateDelta.Apply(J("{\"a\":1,\"a\":2}"), J("{}"), null);
            Assert.AreEqual(1, twice.Count);
            Assert.AreEqual(J("{\"a\":2}"), twice);
            var refused = new[]
            {
                new[] { "null", "{}", null }, new[] { "[]", "{}", null }, new[] { "{}", "1", null }, new[] { "{}", "[]", null },
                new[] { "{}", "null", null }, new[] { "{}", "{}", "\"a\"" }, new[] { "{}", "{}", "[1]" }, new[] { "{}", "{}", "null" },
            };
            foreach (var r in refused)
            {
                var args = r;
                Assert.Throws<FormatException>(() => StateDelta.Apply(J(args[0]), J(args[1]), args[2] == null ? null : J(args[2])),
                    string.Join(" ", args));
            }
            Assert.Throws<FormatException>(() => StateDelta.Apply(J("{}"), null, null), "no delta body");
        }

        // A client that asked for deltas, joined to Ch, welcomed with `caps`.
        private sealed class DeltaRig
        {
            public readonly Rig Rig;
            public readonly Channel Channel;
            public readonly List<StateEvent> Got = new List<StateEvent>();
            public readonly List<ParleyException> Errors = new List<ParleyException>();

            public DeltaRig(string enc = "json", long joinedSeq = 0, bool deltas = true, JsonValue caps = null)
            {
                Rig = new Rig(o =>
                {
                    o.StateDeltas = deltas;
                    if (enc == "msgpack") o.Codec = MsgPackCodec.Instance;
                });
                Rig.Client.Error += e => Errors.Add(e);
                Channel = Rig.Client.Channel(Ch);
                Channel.StateReceived += s => Got.Add(s);
                Channel.Join();
                Rig.Welcome(caps: caps ?? JsonValue.Array("state_delta"));
                Rig.Joined(Ch, joinedSeq);
            }

            public void Deliver(string frame)
            {
                Rig.T.Deliver(frame);
                Rig.Poll();
            }

            public List<JsonValue> Joins { get { return Rig.T.Ops("join"); } }
        }

        [TestCase("json")]
        [TestCase("msgpack")]
        public void TheVectorsAndTheWholeExchangeReachTheApplicationAsFullStates(string enc)
        {
            var d = new DeltaRig(enc);
            var hello = d.Rig.T.Last("hello");
            Assert.AreEqual(J("[\"state_delta\"]"), hello["caps"]);
            Assert.IsTrue(d.Rig.Client.Welcome.StateDeltas);
            CollectionAssert.AreEqual(new[] { "state_delta" }, d.Rig.Client.Welcome.Caps);
            // The exchange of PROTOCOL.md.
            d.Deliver("{\"op\":\"state\",\"tick\":100,\"ts\":1764460800000,\"sid\":1,\"ch\":\"world:7\",\"from\":\"b\",\"key\":\"pos\",\"body\":{\"x\":1,\"y\":2}}");
            d.Deliver("{\"op\":\"sd\",\"tick\":101,\"ts\":1764460800020,\"sid\":1,\"body\":{\"x\":2}}");
            // Each vector on a stream of its own: the full bodies in one batch, the deltas in another.
            var fulls = JsonValue.Array();
            var deltas = JsonValue.Array();
            for (int k = 0; k < Vectors.Length; k++)
            {
                fulls.Add(J("{\"op\":\"state\",\"ch\":\"world:7\",\"key\":\"k\"}").Set("sid", 10 + k).Set("from", "v" + k)
                    .Set("body", J(Vectors[k][0])));
                var sd = J(Vectors[k][1]).Set("op", "sd").Set("sid", 10 + k).Set("tick", 102).Set("ts", 1764460800040)
                    .Set("pos", JsonValue.Array(k, k + 1));
                deltas.Add(sd);
            }
            d.Rig.T.Deliver(fulls);
            d.Rig.T.Deliver(deltas);
            d.Rig.Poll();
            Assert.AreEqual(0, d.Errors.Count, d.Errors.Count > 0 ? d.Errors[0].Message : "");
            Assert.AreEqual(2 + 2 * Vectors.Length, d.Got.Count);
            var first = d.Got[0];
            var second = d.Got[1];
            Assert.AreEqual(new object[] { Ch, "b", "pos", 100L, 1764460800000L, 1L },
                new object[] { first.Channel, first.From, first.Key, first.Tick, first.Ts, first.Sid });
            Assert.AreEqual(J("{\"x\":1,\"y\":2}"), first.Body);
            Assert.AreEqual(new object[] { Ch, "b", "pos", 101L, 1764460800020L, 1L },
                new object[] { second.Channel, second.From, second.Key, second.Tick, second.Ts, second.Sid });
            Assert.AreEqual(J("{\"x\":2,\"y\":2}"), second.Body);
            for (int k = 0; k < Vectors.Length; k++)
            {
                var s = d.Got[2 + Vectors.Length + k];
                Assert.AreEqual(J(Vectors[k][2]), s.Body, "vector " + (k + 1));
                Assert.AreEqual(new object[] { Ch, "v" + k, "k", 102L, 1764460800040L, 10L + k },
                    new object[] { s.Channel, s.From, s.Key, s.Tick, s.Ts, s.Sid });
                Assert.AreEqual(JsonValue.Array(k, k + 1), s.Pos);
            }
        }

        [Test]
        public void WithoutTheOptionTheHelloAsksNothingAndAWelcomeWithoutCapsGrantsNothing()
        {
            var plain = new DeltaRig(deltas: false, caps: JsonValue.Array());
            Assert.IsFalse(plain.Rig.T.Last("hello").Has("caps"));
            Assert.IsFalse(plain.Rig.Client.Welcome.StateDeltas);
            // An older server: no caps in its welcome.
            var rig = new Rig(o => o.StateDeltas = true);
            rig.Client.Connect();
            rig.Welcome();
            Assert.AreEqual(J("[\"state_delta\"]"), rig.T.Last("hello")["caps"]);
            Assert.AreEqual(0, rig.Client.Welcome.Caps.Count);
            Assert.IsFalse(rig.Client.Welcome.StateDeltas);
            // A state without sid or tick (an older server) is delivered as before.
            plain.Deliver("{\"op\":\"state\",\"ch\":\"world:7\",\"from\":\"b\",\"key\":\"pos\",\"body\":{\"x\":1}}");
            Assert.AreEqual(1, plain.Got.Count);
            Assert.IsNull(plain.Got[0].Tick);
            Assert.IsNull(plain.Got[0].Ts);
            Assert.IsNull(plain.Got[0].Sid);
        }

        [Test]
        public void TheApplicationMayChangeWhatItGotTheNextDeltaAppliesToWhatTheServerSent()
        {
            var d = new DeltaRig();
            d.Deliver("{\"op\":\"state\",\"sid\":3,\"ch\":\"world:7\",\"from\":\"b\",\"key\":\"pos\",\"body\":{\"x\":1,\"y\":2,\"o\":{\"a\":1}}}");
            d.Got[0].Body.Set("y", "mine");
            d.Got[0].Body["o"].Set("a", "mine");
            d.Deliver("{\"op\":\"sd\",\"sid\":3,\"body\":{\"x\":2}}");
            d.Got[1].Body.Set("x", "mine too");
            d.Got[1].Body["o"].Set("b", "mine too");
            d.Deliver("{\"op\":\"sd\",\"sid\":3,\"body\":{}}");
            Assert.AreEqual(J("{\"x\":2,\"y\":2,\"o\":{\"a\":1}}"), d.Got[2].Body);
            Assert.AreEqual(0, d.Errors.Count);
        }

        [Test]
        public void AnSdWithoutABaseIsDroppedReportedAndTheChannelRejoinedWithSince()
        {
            var d = new DeltaRig(joinedSeq: 5);
            d.Deliver("{\"op\":\"sd\",\"sid\":99,\"body\":{\"x\":1}}");
            Assert.AreEqual(0, d.Got.Count, "no state was invented");
            Assert.AreEqual(1, d.Errors.Count);
            Assert.AreEqual(ErrorCodes.BadFrame, d.Errors[0].Code);
            var leave = d.Rig.T.Last("leave");
            Assert.IsNotNull(leave, "left");
            Assert.AreEqual(Ch, leave.GetString("ch"));
            Assert.AreEqual(2, d.Joins.Count, "joined again");
            Assert.IsFalse(d.Joins[0].Has("since"));
            long since;
            Assert.IsTrue(d.Joins[1].TryGetLong("since", out since));
            Assert.AreEqual(5, since, "after what was delivered");
            Assert.Greater(d.Rig.T.Sent.IndexOf(d.Joins[1]), d.Rig.T.Sent.IndexOf(leave), "the leave goes first");
            // Once joined again, full bodies and deltas apply as before.
            d.Deliver("{\"op\":\"left\",\"rid\":" + leave["rid"] + ",\"ch\":\"world:7\"}");
            d.Rig.Joined(Ch, 5);
            d.Deliver("{\"op\":\"state\",\"sid\":99,\"ch\":\"world:7\",\"from\":\"b\",\"key\":\"pos\",\"body\":{\"x\":1,\"y\":1}}");
            d.Deliver("{\"op\":\"sd\",\"sid\":99,\"body\":{\"y\":2}}");
            Assert.AreEqual(2, d.Got.Count);
            Assert.AreEqual(J("{\"x\":1,\"y\":1}"), d.Got[0].Body);
            Assert.AreEqual(J("{\"x\":1,\"y\":2}"), d.Got[1].Body);
            Assert.AreEqual(1, d.Errors.Count);
        }

        [Test]
        public void HostileSdFramesAreRefusedNeverDeliveredAndTheStreamNeedsAFullBodyAgain()
        {
            var hostile = new[]
            {
                "{\"op\":\"sd\",\"sid\":1,\"body\":\"x\"}", "{\"op\":\"sd\",\"sid\":1,\"body\":[1]}",
                "{\"op\":\"sd\",\"sid\":1,\"body\":null}", "{\"op\":\"sd\",\"sid\":1}",
                "{\"op\":\"sd\",\"sid\":1,\"body\":{},\"unset\":\"x\"}", "{\"op\":\"sd\",\"sid\":1,\"body\":{},\"unset\":[1]}",
                "{\"op\":\"sd\",\"sid\":1,\"body\":{},\"unset\":null}", "{\"op\":\"sd\",\"sid\":\"1\",\"body\":{}}",
                "{\"op\":\"sd\",\"sid\":-1,\"body\":{}}", "{\"op\":\"sd\",\"sid\":1.5,\"body\":{}}", "{\"op\":\"sd\",\"body\":{}}",
                "{\"op\":\"sd\",\"sid\":{\"a\":1},\"body\":{}}", "{\"op\":\"sd\",\"sid\":0,\"body\":{}}",
            };
            foreach (var frame in hostile)
            {
                var d = new DeltaRig();
                d.Deliver("{\"op\":\"state\",\"sid\":1,\"ch\":\"world:7\",\"from\":\"b\",\"key\":\"pos\",\"body\":{\"x\":1}}");
                d.Deliver(frame);
                Assert.AreEqual(1, d.Got.Count, frame);
                Assert.AreEqual(1, d.Errors.Count, frame);
                Assert.AreEqual(ErrorCodes.BadFrame, d.Errors[0].Code, frame);
                Assert.AreEqual(2, d.Joins.Count, frame + ": re-joined");
                // Applying to the stream's old base without a new full body would be guessing.
                d.Rig.Joined(Ch, 0);
                d.Deliver("{\"op\":\"sd\",\"sid\":1,\"body\":{\"x\":2}}");
                Assert.AreEqual(1, d.Got.Count, frame + ": a delta on a dropped base");
                Assert.AreEqual(2, d.Errors.Count, frame);
                Assert.AreEqual(3, d.Joins.Count, frame + ": re-joined again");
                d.Rig.Joined(Ch, 0);
                d.Deliver("{\"op\":\"state\",\"sid\":1,\"ch\":\"world:7\",\"from\":\"b\",\"key\":\"pos\",\"body\":{\"x\":3}}");
                d.Deliver("{\"op\":\"sd\",\"sid\":1,\"body\":{\"y\":4}}");
                Assert.AreEqual(J("{\"x\":3,\"y\":4}"), d.Got[d.Got.Count - 1].Body, frame);
                Assert.AreEqual(0, d.Rig.Log.Count, frame + ": " + string.Join("; ", d.Rig.Log));
            }
        }

        [Test]
        public void AnSdSentBeforeTheServerSawALeaveIsDroppedQuietlyAndANonObjectBodyIsNoBase()
        {
            var d = new DeltaRig();
            d.Deliver("{\"op\":\"state\",\"sid\":1,\"ch\":\"world:7\",\"from\":\"b\",\"key\":\"pos\",\"body\":{\"x\":1}}");
            d.Channel.Leave();
            d.Rig.Poll();
            var leave = d.Rig.T.Last("leave");
            d.Deliver("{\"op\":\"sd\",\"sid\":1,\"body\":{\"x\":2}}"); // in flight when the leave went out
            d.Deliver("{\"op\":\"left\",\"rid\":" + leave["rid"] + ",\"ch\":\"world:7\"}");
            Assert.AreEqual(1, d.Got.Count);
            Assert.AreEqual(0, d.Errors.Count);
            Assert.AreEqual(1, d.Joins.Count, "no re-join for a channel the application left");
            d.Channel.Join();
            d.Rig.Poll();
            d.Rig.Joined(Ch, 0);
            d.Deliver("{\"op\":\"state\",\"sid\":2,\"ch\":\"world:7\",\"from\":\"b\",\"key\":\"k\",\"body\":[1,2]}");
            d.Deliver("{\"op\":\"sd\",\"sid\":2,\"body\":{\"x\":1}}");
            Assert.AreEqual(2, d.Got.Count);
            Assert.AreEqual(J("[1,2]"), d.Got[1].Body);
            Assert.AreEqual(1, d.Errors.Count, "an sd on an array base is refused");
            Assert.AreEqual(3, d.Joins.Count, "and its channel re-joined");
        }

        [Test]
        public void ADropForgetsEveryStream()
        {
            var d = new DeltaRig();
            d.Deliver("{\"op\":\"state\",\"sid\":1,\"ch\":\"world:7\",\"from\":\"b\",\"key\":\"pos\",\"body\":{\"x\":1}}");
            d.Rig.T.Drop();
            d.Rig.Poll();
            d.Rig.Advance(1000);
            d.Rig.Welcome(caps: JsonValue.Array("state_delta"));
            d.Rig.Joined(Ch, 0);
            // sid 1 was the old connection's: on this one it names nothing.
            d.Deliver("{\"op\":\"sd\",\"sid\":1,\"body\":{\"x\":2}}");
            Assert.AreEqual(1, d.Got.Count);
            Assert.AreEqual(1, d.Errors.Count);
            Assert.AreEqual(ErrorCodes.BadFrame, d.Errors[0].Code);
        }

        [Test]
        public void AtMost65536StreamsAreKeptTheLeastRecentlyUsedGoesFirst()
        {
            var streams = new StateStreams();
            Func<long, JsonValue> full = id => J("{\"op\":\"state\",\"ch\":\"world:7\",\"from\":\"b\",\"key\":\"k\",\"body\":{\"x\":0}}")
                .Set("sid", id);
            for (long sid = 1; sid <= StateStreams.MaxStreams; sid++) streams.Full(full(sid));
            Assert.AreEqual(StateStreams.MaxStreams, streams.Count);
            // Stream 1 is used again, so stream 2 is now the least recently used.
            Assert.AreEqual(StateStreams.Outcome.Applied, streams.Take(J("{\"op\":\"sd\",\"sid\":1,\"body\":{\"x\":1}}")).Kind);
            streams.Full(full(StateStreams.MaxStreams + 1));
            Assert.AreEqual(StateStreams.MaxStreams, streams.Count);
            Assert.AreEqual(StateStreams.Outcome.Unknown, streams.Take(J("{\"op\":\"sd\",\"sid\":2,\"body\":{}}")).Kind);
            var one = streams.Take(J("{\"op\":\"sd\",\"sid\":1,\"body\":{\"y\":1}}"));
            Assert.AreEqual(StateStreams.Outcome.Applied, one.Kind);
            Assert.AreEqual(J("{\"x\":1,\"y\":1}"), one.State["body"]);
            Assert.AreEqual(StateStreams.Outcome.Applied, streams.Take(J("{\"op\":\"sd\",\"sid\":3,\"body\":{}}")).Kind);
        }
    }
}
