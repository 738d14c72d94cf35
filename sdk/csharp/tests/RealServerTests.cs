// The C# SDK against the real server (PARLEY_BIN; ctest csharp_sdk_server_test
// sets it, without it the fixture is ignored): PROTOCOL.md "State deltas" and
// "Time for games" over WebSocket and TCP, in JSON and MessagePack. In a
// namespace with `state_delta = true` a sender streams bodies to a member
// that asked for deltas and one that did not: both applications get the same
// full bodies in order, with tick and ts, the delta member really gets `sd`
// frames (it leaves and re-joins midway: full bodies again, then deltas) and
// the other none; a pong's ts gives a clock estimate of this machine's clock.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Linq;
using System.Threading;
using NUnit.Framework;
using Parley;

namespace Parley.Tests
{
    [TestFixture]
    [Category("server")]
    public class RealServerTests
    {
        private RealServer _server;
        private readonly List<ParleyClient> _clients = new List<ParleyClient>();

        [TestFixtureSetUp]
        public void StartServer()
        {
            if (RealServer.Binary == null) Assert.Ignore("PARLEY_BIN is not set: no server to test against");
            _server = new RealServer("state_delta = true");
        }

        [TestFixtureTearDown]
        public void StopServer()
        {
            if (_server != null) _server.Dispose();
        }

        [TearDown]
        public void CloseClients()
        {
            foreach (var c in _clients) c.Close();
            _clients.Clear();
        }

        private ParleyClient Client(string user, string transport, string enc, bool deltas)
        {
            var c = new ParleyClient(new ClientOptions
            {
                Url = transport == "tcp" ? _server.TcpUrl : _server.WsUrl,
                Token = RealServer.Token(user),
                Codec = enc == "msgpack" ? (ICodec)MsgPackCodec.Instance : JsonCodec.Instance,
                StateDeltas = deltas,
            });
            _clients.Add(c);
            return c;
        }

        // Polls every client (as a game loop would) until cond holds.
        private void Until(Func<bool> cond, string what, int ms = 10000)
        {
            var sw = Stopwatch.StartNew();
            while (!cond())
            {
                if (sw.ElapsedMilliseconds > ms) Assert.Fail("timed out after " + ms + " ms waiting for " + what + "\n" + _server.Log);
                foreach (var c in _clients) c.Poll();
                Thread.Sleep(2);
            }
        }

        private void JoinAll(string ch, params ParleyClient[] clients)
        {
            var joins = clients.Select(c => c.Channel(ch).Join()).ToArray();
            Until(() => joins.All(j => j.IsCompleted), "the joins of " + ch);
            foreach (var j in joins) Assert.IsFalse(j.IsFaulted, j.IsFaulted ? j.Exception.GetBaseException().Message : "");
        }

        // Records what a receiver's application and its wire saw.
        private sealed class Receiver
        {
            public readonly List<StateEvent> States = new List<StateEvent>();
            public readonly List<string> Errors = new List<string>();
            public int SdFrames;

            public Receiver(ParleyClient c, string ch)
            {
                c.FrameReceived += f =>
                {
                    if (f.GetString("op") == "sd") SdFrames++;
                };
                c.Channel(ch).StateReceived += s => States.Add(s);
                c.Error += e => Errors.Add(e.Code + ": " + e.Message);
            }
        }

        [TestCase("ws", "json")]
        [TestCase("ws", "msgpack")]
        [TestCase("tcp", "json")]
        [TestCase("tcp", "msgpack")]
        public void DeltasAreAppliedInvisiblyAndStatesCarryTickAndTs(string transport, string enc)
        {
            string tag = transport + "-" + enc;
            string ch = "world:real-" + tag;
            var sender = Client("s-" + tag, transport, enc, false);
            var withDeltas = Client("d-" + tag, transport, enc, true);
            var plain = Client("p-" + tag, transport, enc, false);
            var d = new Receiver(withDeltas, ch);
            var p = new Receiver(plain, ch);
            JoinAll(ch, sender, withDeltas, plain);
            Assert.AreEqual(enc, withDeltas.Welcome.Enc);
            Assert.IsTrue(withDeltas.Welcome.StateDeltas, "the server granted state_delta");
            CollectionAssert.Contains(withDeltas.Welcome.Caps, "state_delta");
            Assert.IsFalse(plain.Welcome.StateDeltas);

            const int n = 12;
            var bodies = new List<JsonValue>();
            for (int k = 0; k < n; k++)
            {
                if (k == 6)
                {
                    // Left and joined again: the next body is full, then deltas again.
                    withDeltas.Channel(ch).Leave();
                    var rejoin = withDeltas.Channel(ch).Join();
                    Until(() => rejoin.IsCompleted, "the re-join");
                }
                var body = JsonValue.Object().Set("x", k * 1.5).Set("y", 7).Set("name", "ann")
                    .Set("o", JsonValue.Object().Set("hp", k >> 2)).Set("b", Bin.Of(new byte[] { 0, (byte)k }));
                if (k % 3 != 0) body.Set("fx", "spark");
                bodies.Add(body);
                sender.Channel(ch).SetState("pos", body);
                // One body per tick, delivered before the next: nothing coalesced, every body owed.
                int want = k + 1;
                Until(() => d.States.Count >= want && p.States.Count >= want, "state " + k);
            }

            foreach (var r in new[] { d, p })
            {
                string who = r == d ? "deltas" : "plain";
                CollectionAssert.AreEqual(bodies, r.States.Select(s => s.Body).ToList(), who + ": the bodies");
                CollectionAssert.AreEqual(Enumerable.Repeat(sender.User, n), r.States.Select(s => s.From), who);
                Assert.IsTrue(r.States.All(s => s.Tick.HasValue && s.Ts.HasValue && s.Key == "pos"), who + ": tick and ts");
                for (int k = 1; k < n; k++)
                {
                    Assert.Greater(r.States[k].Tick.Value, r.States[k - 1].Tick.Value, who + ": later ticks");
                    Assert.GreaterOrEqual(r.States[k].Ts.Value, r.States[k - 1].Ts.Value, who + ": ts does not go back");
                }
                CollectionAssert.IsEmpty(r.Errors, who);
            }
            // Full bodies: the stream's first and the first after the re-join.
            Assert.GreaterOrEqual(d.SdFrames, n - 2, "sd frames to the member that asked for deltas");
            Assert.AreEqual(0, p.SdFrames, "sd frames to the member that did not");
            Assert.IsTrue(d.States.All(s => s.Sid.HasValue), "a delta member's states carry their stream id");
            Assert.IsTrue(p.States.All(s => !s.Sid.HasValue));

            // pong carries the server's ts: on this machine the estimate is this clock.
            var ping = withDeltas.Ping();
            Until(() => ping.IsCompleted, "the pong");
            var clock = withDeltas.ServerClock;
            Assert.IsNotNull(clock, "a pong with ts gives an estimate");
            Assert.LessOrEqual(Math.Abs(clock.OffsetMs), clock.RttMs / 2 + 5, "offset " + clock.OffsetMs + ", rtt " + clock.RttMs);
            long now = DateTimeOffset.UtcNow.ToUnixTimeMilliseconds();
            Assert.LessOrEqual(Math.Abs(withDeltas.ServerNow().Value - now), clock.RttMs / 2 + 10);
            // And a state's ts is a moment of the recent past on this clock.
            long last = withDeltas.ToLocalTime(d.States[n - 1].Ts.Value).Value;
            Assert.That(now - last, Is.InRange(-(clock.RttMs / 2 + 5), 10000L));
        }

        [Test]
        public void ANamespaceWithoutStateDeltaSendsFullBodiesToADeltaMember()
        {
            const string ch = "chat:no-deltas"; // namespace `chat`: no state_delta
            var sender = Client("s-plain-ns", "ws", "json", false);
            var withDeltas = Client("d-plain-ns", "ws", "msgpack", true);
            var d = new Receiver(withDeltas, ch);
            JoinAll(ch, sender, withDeltas);
            Assert.IsTrue(withDeltas.Welcome.StateDeltas, "granted per connection");
            var bodies = new List<JsonValue>();
            for (int k = 0; k < 4; k++)
            {
                var body = JsonValue.Object().Set("x", k).Set("y", 1);
                bodies.Add(body);
                sender.Channel(ch).SetState("pos", body);
                int want = k + 1;
                Until(() => d.States.Count >= want, "state " + k);
            }
            CollectionAssert.AreEqual(bodies, d.States.Select(s => s.Body).ToList());
            Assert.AreEqual(0, d.SdFrames);
            Assert.IsTrue(d.States.All(s => !s.Sid.HasValue), "no stream ids where there are no deltas");
            CollectionAssert.IsEmpty(d.Errors);
        }
    }
}
