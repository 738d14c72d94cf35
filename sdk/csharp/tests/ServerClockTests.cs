// PROTOCOL.md "Time for games" in the SDK, over a fake transport and fake
// clocks (the Rig's wall clock is Rig.WallBase + its monotonic one): a pong's
// `ts` gives the clock estimate (offset of the smallest rtt of the last 8),
// ServerNow and ToLocalTime follow it, the client's own pings (liveness,
// ClockSyncMs) feed it, and a new connection starts over (it may reach
// another server, or the same one by another path).
using NUnit.Framework;
using Parley;

namespace Parley.Tests
{
    [TestFixture]
    public class ServerClockTests
    {
        private const long Skew = 1000000; // the server's clock is 1000 s ahead

        // A ping answered after rttMs, its pong's ts off the true midpoint by errMs.
        private static long PingOnce(Rig rig, long rttMs, long errMs = 0)
        {
            var task = rig.Client.Ping();
            rig.Poll();
            var ping = rig.T.Last("ping");
            long sentWall = Rig.WallBase + rig.NowMs;
            rig.NowMs += rttMs;
            long ts = sentWall + rttMs / 2 + Skew + errMs;
            rig.T.Deliver("{\"op\":\"pong\",\"rid\":" + ping["rid"] + ",\"ts\":" + ts + "}");
            rig.Poll();
            Assert.IsTrue(task.IsCompleted, "the ping completed");
            return task.Result;
        }

        [Test]
        public void APongsTsGivesTheOffsetServerNowAndLocalTime()
        {
            var rig = new Rig();
            rig.Client.Connect();
            rig.Welcome();
            Assert.IsNull(rig.Client.ServerClock);
            Assert.IsNull(rig.Client.ServerNow());
            Assert.IsNull(rig.Client.ToLocalTime(5));
            Assert.AreEqual(20, PingOnce(rig, 20));
            var c = rig.Client.ServerClock;
            Assert.AreEqual(Skew, c.OffsetMs);
            Assert.AreEqual(20, c.RttMs);
            Assert.AreEqual(Rig.WallBase + rig.NowMs + Skew, rig.Client.ServerNow());
            Assert.AreEqual(5, rig.Client.ToLocalTime(5 + Skew));
            // A pong without ts (an older server) completes the ping and changes nothing.
            var task = rig.Client.Ping();
            rig.Poll();
            rig.T.Deliver("{\"op\":\"pong\",\"rid\":" + rig.T.Last("ping")["rid"] + "}");
            rig.Poll();
            Assert.IsTrue(task.IsCompleted);
            Assert.AreEqual(Skew, rig.Client.ServerClock.OffsetMs);
        }

        [Test]
        public void TheSampleWithTheSmallestRttOfTheLastEightWins()
        {
            var rig = new Rig();
            rig.Client.Connect();
            rig.Welcome();
            PingOnce(rig, 20);
            PingOnce(rig, 60, 25); // slower, and wrong by 25: kept out
            Assert.AreEqual(Skew, rig.Client.ServerClock.OffsetMs);
            Assert.AreEqual(20, rig.Client.ServerClock.RttMs);
            PingOnce(rig, 10, 3); // faster: wins
            Assert.AreEqual(Skew + 3, rig.Client.ServerClock.OffsetMs);
            Assert.AreEqual(10, rig.Client.ServerClock.RttMs);
            // Eight more samples push the fast one out.
            for (int i = 0; i < 8; i++) PingOnce(rig, 30 + i, -7);
            Assert.AreEqual(30, rig.Client.ServerClock.RttMs);
            Assert.AreEqual(Skew - 7, rig.Client.ServerClock.OffsetMs);
        }

        [Test]
        public void LivenessAndClockSyncPingsFeedTheClockAndANewConnectionStartsOver()
        {
            var rig = new Rig(o =>
            {
                o.HeartbeatMs = 2000;
                o.ClockSyncMs = 500;
            });
            rig.Client.Connect();
            rig.Welcome();
            Assert.AreEqual(1, rig.T.Ops("ping").Count, "a clock ping right after the welcome");
            rig.Advance(500);
            Assert.AreEqual(2, rig.T.Ops("ping").Count, "and one every ClockSyncMs");
            var ping = rig.T.Last("ping");
            rig.T.Deliver("{\"op\":\"pong\",\"rid\":" + ping["rid"] + ",\"ts\":" + (Rig.WallBase + rig.NowMs + Skew) + "}");
            rig.Poll();
            Assert.IsNotNull(rig.Client.ServerClock, "a clock ping's pong is a sample");
            Assert.AreEqual(Skew, rig.Client.ServerClock.OffsetMs);
            Assert.AreEqual(0, rig.Client.ServerClock.RttMs);
            rig.T.Drop();
            rig.Poll();
            Assert.IsNotNull(rig.Client.ServerClock, "kept while reconnecting (the server's clock did not move)");
            rig.Advance(1000);
            rig.Welcome();
            Assert.IsNull(rig.Client.ServerClock, "a new connection's clock starts over");
            Assert.AreEqual(1, rig.T.Ops("ping").Count, "the new connection is pinged at once");

            // A liveness ping's pong counts too.
            var quiet = new Rig(o => o.HeartbeatMs = 2000);
            quiet.Client.Connect();
            quiet.Welcome();
            quiet.Advance(3100);
            var live = quiet.T.Last("ping");
            Assert.IsNotNull(live, "a liveness ping");
            quiet.T.Deliver("{\"op\":\"pong\",\"rid\":" + live["rid"] + ",\"ts\":" + (Rig.WallBase + quiet.NowMs) + "}");
            quiet.Poll();
            Assert.IsNotNull(quiet.Client.ServerClock);
        }
    }
}
