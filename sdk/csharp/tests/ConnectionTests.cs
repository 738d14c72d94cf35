// The connection lifecycle over a fake transport: hello/welcome, backoff with
// equal jitter, bye, 4001 handling, the token provider, dead-connection
// detection, connect timeout, and that callbacks run only inside Poll.
using System;
using System.Collections.Generic;
using System.Threading;
using NUnit.Framework;
using Parley;

namespace Parley.Tests
{
    [TestFixture]
    public class ConnectionTests
    {
        [Test]
        public void HelloCarriesTheTokenAndWelcomeCompletesConnect()
        {
            var rig = new Rig();
            var opened = new List<Welcome>();
            rig.Client.Opened += w => opened.Add(w);
            var task = rig.Client.Connect();
            Assert.AreEqual(ClientState.Connecting, rig.Client.State);
            Assert.AreEqual("ws://fake/v1/ws", rig.T.Url);
            rig.Welcome();
            var hello = rig.T.Ops("hello")[0];
            Assert.AreEqual("tok", hello.GetString("token"));
            long v;
            Assert.IsTrue(hello.TryGetLong("v", out v));
            Assert.AreEqual(1, v);
            Assert.IsTrue(task.IsCompleted);
            Assert.AreEqual("u1", task.Result.User);
            Assert.AreEqual(ClientState.Open, rig.Client.State);
            Assert.AreEqual(1, opened.Count);
            Assert.IsFalse(opened[0].Reconnect);
        }

        [Test]
        public void ReconnectDelaysFollowEqualJitterBackoffAndResetAfterWelcome()
        {
            var rig = new Rig(o => o.Reconnect = new ReconnectOptions { MinMs = 100, MaxMs = 1000, Factor = 2 });
            rig.Client.Connect();
            // Six failed attempts: the cap doubles from 100 to the 1000 ceiling.
            long[] caps = { 100, 200, 400, 800, 1000, 1000 };
            for (int i = 0; i < caps.Length; i++)
            {
                rig.T.Drop(1006);
                rig.Poll();
                var d = rig.Disconnects[rig.Disconnects.Count - 1];
                Assert.IsTrue(d.WillReconnect);
                Assert.GreaterOrEqual(d.DelayMs, caps[i] / 2, "attempt " + i);
                Assert.LessOrEqual(d.DelayMs, caps[i], "attempt " + i);
                int before = rig.Transports.Count;
                rig.Advance(d.DelayMs - 10);
                Assert.AreEqual(before, rig.Transports.Count, "reconnected before the delay");
                rig.Advance(20);
                Assert.AreEqual(before + 1, rig.Transports.Count, "no reconnect after the delay");
            }
            rig.Welcome();
            rig.T.Drop(1006);
            rig.Poll();
            Assert.LessOrEqual(rig.Disconnects[rig.Disconnects.Count - 1].DelayMs, 100, "backoff not reset by welcome");
            Assert.IsTrue(rig.Disconnects[rig.Disconnects.Count - 1].WasOpen);
        }

        [Test]
        public void ByeReconnectMsIsAFloorWithUpToHalfMoreJitter()
        {
            for (int seed = 0; seed < 20; seed++)
            {
                var rig = new Rig(o => o.Random = new Random(seed));
                var byes = new List<ByeInfo>();
                rig.Client.Bye += b => byes.Add(b);
                rig.Client.Connect();
                rig.Welcome();
                rig.T.Deliver("{\"op\":\"bye\",\"code\":\"draining\",\"reconnect_ms\":2000}");
                rig.T.Drop(1001, "going away");
                rig.Poll();
                Assert.AreEqual("draining", byes[0].Code);
                Assert.AreEqual(2000, byes[0].ReconnectMs);
                var d = rig.Disconnects[0];
                Assert.IsTrue(d.WillReconnect);
                Assert.That(d.DelayMs, Is.InRange(2000, 3000));
            }
        }

        [Test]
        public void Close4001WithAFixedTokenEndsTheClient()
        {
            var rig = new Rig();
            var closed = 0;
            rig.Client.Closed += () => closed++;
            var task = rig.Client.Connect();
            rig.T.Open();
            rig.Poll();
            rig.T.Deliver("{\"op\":\"error\",\"rid\":1,\"code\":\"unauthorized\",\"msg\":\"bad token\"}");
            rig.T.Drop(4001, "unauthorized");
            rig.Poll();
            Assert.AreEqual(ClientState.Closed, rig.Client.State);
            Assert.IsFalse(rig.Disconnects[0].WillReconnect);
            Assert.IsTrue(task.IsFaulted);
            Assert.AreEqual(ErrorCodes.Unauthorized, ((ParleyException)task.Exception.GetBaseException()).Code);
            Assert.AreEqual(1, closed);
            rig.Advance(60000);
            Assert.AreEqual(1, rig.Transports.Count);
        }

        [Test]
        public void ARefusedHelloEndsTheClientOnATransportWithoutCloseCodes()
        {
            // Raw TCP: the server answers the hello with an error and closes; no 4001.
            var rig = new Rig();
            var task = rig.Client.Connect();
            rig.T.Open();
            rig.Poll();
            rig.T.Deliver("{\"op\":\"error\",\"rid\":" + rig.T.Last("hello")["rid"] + ",\"code\":\"unauthorized\",\"msg\":\"bad token\"}");
            rig.T.Drop(1006, "connection closed");
            rig.Poll();
            Assert.AreEqual(ClientState.Closed, rig.Client.State);
            Assert.AreEqual(4001, rig.Disconnects[0].Code);
            Assert.IsFalse(rig.Disconnects[0].WillReconnect);
            Assert.AreEqual(ErrorCodes.Unauthorized, ((ParleyException)task.Exception.GetBaseException()).Code);
        }

        [Test]
        public void AHelloOverTheQuotaOnATransportWithoutCloseCodesIs4008AndRetriedWithBackoff()
        {
            // Raw TCP: a tenant at max_connections answers the hello with quota_exceeded and closes.
            var rig = new Rig(o => o.Reconnect = new ReconnectOptions { MinMs = 100, MaxMs = 1000, Factor = 2 });
            rig.Client.Connect();
            for (int attempt = 0; attempt < 3; attempt++)
            {
                rig.T.Open();
                rig.Poll();
                rig.T.Deliver("{\"op\":\"error\",\"rid\":" + rig.T.Last("hello")["rid"] +
                              ",\"code\":\"quota_exceeded\",\"msg\":\"tenant connection limit reached\"}");
                rig.T.Drop(1006, "connection closed");
                rig.Poll();
                var d = rig.Disconnects[attempt];
                Assert.AreEqual(4008, d.Code);
                Assert.IsTrue(d.WillReconnect);
                // Attempt k waits within [cap/2, cap], cap = min(maxMs, minMs * factor^k).
                long cap = Math.Min(1000, 100L << attempt);
                Assert.GreaterOrEqual(d.DelayMs, cap / 2, "attempt " + attempt);
                Assert.LessOrEqual(d.DelayMs, cap, "attempt " + attempt);
                rig.Advance(d.DelayMs);
                Assert.AreEqual(attempt + 2, rig.Transports.Count, "one new attempt per delay, not a loop");
            }
        }

        [TestCase("slow_consumer", 4010, true)]
        [TestCase("tenant_removed", 4001, false)]
        [TestCase("draining", 1006, true)]
        public void ADropAfterAByeWithoutACloseCodeGetsTheCodeTheProtocolPairsWithIt(string bye, int code, bool again)
        {
            var rig = new Rig();
            rig.Client.Connect();
            rig.Welcome();
            rig.T.Deliver("{\"op\":\"bye\",\"code\":\"" + bye + "\"}");
            rig.T.Drop(1006, "connection closed");
            rig.Poll();
            Assert.AreEqual(code, rig.Disconnects[0].Code);
            Assert.AreEqual(again, rig.Disconnects[0].WillReconnect);
        }

        [Test]
        public void AnApiKeyGoesInTheHelloInsteadOfAToken()
        {
            var rig = new Rig(o => { o.Token = null; o.ApiKey = "key-1"; });
            rig.Client.Connect();
            rig.T.Open();
            rig.Poll();
            var hello = rig.T.Last("hello");
            Assert.AreEqual("key-1", hello.GetString("api_key"));
            Assert.IsFalse(hello.Has("token"));
        }

        [Test]
        public void TheTokenProviderIsCalledBeforeEveryConnectAndThreeRefusalsEndIt()
        {
            var rig = new Rig(null, tokenProvider: true);
            rig.Client.Connect();
            for (int i = 1; i <= 3; i++)
            {
                Assert.AreEqual(i, rig.TokenCalls);
                rig.T.Open();
                rig.Poll();
                Assert.AreEqual("tok-" + i, rig.T.Last("hello").GetString("token"));
                rig.T.Drop(4001, "unauthorized");
                rig.Poll();
                if (i < 3)
                {
                    Assert.IsTrue(rig.Disconnects[i - 1].WillReconnect);
                    rig.Advance(rig.Disconnects[i - 1].DelayMs + 10);
                }
            }
            Assert.AreEqual(ClientState.Closed, rig.Client.State);
            Assert.IsFalse(rig.Disconnects[2].WillReconnect);
        }

        [Test]
        public void ASuccessfulWelcomeResetsTheRefusalCount()
        {
            var rig = new Rig(null, tokenProvider: true);
            rig.Client.Connect();
            for (int round = 0; round < 3; round++)
            {
                rig.T.Open();
                rig.Poll();
                rig.T.Drop(4001);
                rig.Poll();
                rig.Advance(rig.Disconnects[rig.Disconnects.Count - 1].DelayMs + 10);
                rig.Welcome();
                rig.T.Drop(1006);
                rig.Poll();
                rig.Advance(rig.Disconnects[rig.Disconnects.Count - 1].DelayMs + 10);
            }
            Assert.AreNotEqual(ClientState.Closed, rig.Client.State);
        }

        [Test]
        public void AQuietConnectionIsPingedThenDropped()
        {
            var rig = new Rig(o => o.HeartbeatMs = 2000);
            rig.Client.Connect();
            rig.Welcome();
            rig.Advance(1900);
            Assert.AreEqual(0, rig.T.Ops("ping").Count, "pinged before a quiet period");
            rig.Advance(1200);
            Assert.AreEqual(1, rig.T.Ops("ping").Count, "no ping after a quiet period");
            Assert.AreEqual(0, rig.Disconnects.Count);
            // Any traffic counts as life.
            rig.T.Deliver("{\"op\":\"pong\",\"rid\":" + rig.T.Last("ping")["rid"] + "}");
            rig.Poll();
            // Dropped after 2 periods plus min(period, 5 s) of silence: 6000 ms here.
            rig.Advance(5800);
            Assert.AreEqual(0, rig.Disconnects.Count, "dropped although the server answered");
            rig.Advance(1400);
            Assert.AreEqual(1, rig.Disconnects.Count);
            Assert.AreEqual(4000, rig.Disconnects[0].Code);
            Assert.IsTrue(rig.Transports[0].Aborted);
            Assert.IsTrue(rig.Disconnects[0].WillReconnect);
        }

        [Test]
        public void ASocketThatNeverWelcomesTimesOut()
        {
            var rig = new Rig(o => o.ConnectTimeoutMs = 3000);
            rig.Client.Connect();
            rig.T.Open();
            rig.Poll();
            rig.Advance(2900);
            Assert.AreEqual(0, rig.Disconnects.Count);
            rig.Advance(200);
            Assert.AreEqual(1, rig.Disconnects.Count);
            Assert.AreEqual("connect timeout", rig.Disconnects[0].Reason);
            Assert.IsTrue(rig.Transports[0].Aborted);
        }

        [Test]
        public void BatchesAreDispatchedInOrderAndBadFramesReportedWithoutDropping()
        {
            var rig = new Rig();
            var errors = new List<ParleyException>();
            var directs = new List<JsonValue>();
            rig.Client.Error += e => errors.Add(e);
            rig.Client.Direct += d => directs.Add(d["body"]);
            rig.Client.Connect();
            rig.Welcome();
            rig.T.Deliver("[{\"op\":\"direct\",\"from\":\"server\",\"body\":1},{\"op\":\"direct\",\"from\":\"server\",\"body\":2}]");
            rig.T.Deliver("{not json");
            rig.T.Deliver("{\"op\":\"direct\",\"from\":\"server\",\"body\":3}");
            rig.Poll();
            Assert.AreEqual("1,2,3", string.Join(",", directs));
            Assert.AreEqual(1, errors.Count);
            Assert.AreEqual(ErrorCodes.BadFrame, errors[0].Code);
            Assert.AreEqual(ClientState.Open, rig.Client.State);
        }

        [Test]
        public void CallbacksRunOnlyInsidePollOnThePollingThread()
        {
            var rig = new Rig();
            int pollThread = Thread.CurrentThread.ManagedThreadId;
            int seenThread = -1;
            rig.Client.Opened += w => seenThread = Thread.CurrentThread.ManagedThreadId;
            rig.Client.Connect();
            var t = rig.T;
            // The transport reports from another thread, as ClientWebSocket's loop does.
            var th = new Thread(() => t.Open());
            th.Start();
            th.Join();
            rig.Poll();
            var hello = t.Last("hello");
            th = new Thread(() => t.Deliver(JsonValue.Object().Set("op", "welcome").Set("rid", hello["rid"])
                .Set("conn", "c").Set("user", "u").Set("tenant", "demo").Set("heartbeat_ms", 25000)));
            th.Start();
            th.Join();
            Assert.AreEqual(-1, seenThread, "a callback ran outside Poll");
            rig.Poll();
            Assert.AreEqual(pollThread, seenThread);
        }

        [Test]
        public void AFrameFromAnotherThreadEndsWaitForWorkAtOnce()
        {
            var rig = new Rig(o => o.Clock = null); // a real clock: WaitForWork really blocks
            int directs = 0;
            rig.Client.Direct += d => directs++;
            rig.Client.Connect();
            rig.Welcome();
            var sw = System.Diagnostics.Stopwatch.StartNew();
            long worst = 0;
            for (int i = 0; i < 200; i++)
            {
                var t = rig.T;
                int spin = i % 7;
                var th = new Thread(() =>
                {
                    Thread.SpinWait(spin * 1000); // before, during or after the waiter's last look
                    t.Deliver("{\"op\":\"direct\",\"body\":1}");
                });
                long t0 = sw.ElapsedMilliseconds;
                th.Start();
                while (directs <= i)
                {
                    rig.Client.WaitForWork(10000);
                    rig.Poll();
                    if (sw.ElapsedMilliseconds - t0 >= 5000) break; // fail now, not after 200 such waits
                }
                worst = Math.Max(worst, sw.ElapsedMilliseconds - t0);
                th.Join();
                if (worst >= 5000) break;
            }
            // A lost wakeup sits out the whole 10 s; a loaded machine's scheduling, far less.
            Assert.Less(worst, 5000, "a frame waited for WaitForWork's timeout");
        }

        [Test]
        public void AThrowingCallbackDoesNotBreakTheClient()
        {
            var rig = new Rig();
            int directs = 0;
            rig.Client.Direct += d => { throw new InvalidOperationException("app bug"); };
            rig.Client.Direct += d => directs++;
            rig.Client.Connect();
            rig.Welcome();
            rig.T.Deliver("{\"op\":\"direct\",\"body\":1}");
            rig.T.Deliver("{\"op\":\"direct\",\"body\":2}");
            rig.Poll();
            Assert.AreEqual(2, rig.Log.Count);
            Assert.AreEqual(2, directs, "the other subscriber missed its events");
            Assert.AreEqual(ClientState.Open, rig.Client.State);
        }

        [Test]
        public void CloseFailsWhatIsPendingAndStopsReconnecting()
        {
            var rig = new Rig();
            rig.Client.Connect();
            rig.Welcome();
            var ch = rig.Client.Channel("chat:a");
            var join = ch.Join();
            var ping = rig.Client.Ping();
            rig.Client.Close();
            rig.Poll();
            Assert.IsTrue(rig.T.Closed);
            Assert.AreEqual(1000, rig.T.CloseCode);
            Assert.IsTrue(join.IsFaulted);
            Assert.IsTrue(ping.IsFaulted);
            Assert.AreEqual(ErrorCodes.Closed, ((ParleyException)ping.Exception.GetBaseException()).Code);
            Assert.IsTrue(rig.Client.Connect().IsFaulted);
        }

        [Test]
        public void NoReconnectWhenReconnectIsOff()
        {
            var rig = new Rig(o => o.Reconnect = null);
            rig.Client.Connect();
            rig.Welcome();
            rig.T.Drop(1006);
            rig.Poll();
            Assert.IsFalse(rig.Disconnects[0].WillReconnect);
            Assert.AreEqual(ClientState.Closed, rig.Client.State);
        }

        [Test]
        public void ARetryableRequestErrorIsRetriedAfterRetryMs()
        {
            var rig = new Rig();
            var retries = new List<RetryInfo>();
            rig.Client.Retry += r => retries.Add(r);
            rig.Client.Connect();
            rig.Welcome();
            var task = rig.Client.Request(JsonValue.Object().Set("op", "history").Set("ch", "chat:a").Set("after", 0));
            var first = rig.T.Last("history");
            rig.ErrorFor(first, ErrorCodes.Unavailable, 400);
            Assert.AreEqual(1, retries.Count);
            Assert.AreEqual(400, retries[0].RetryMs);
            rig.Advance(390);
            Assert.AreEqual(1, rig.T.Ops("history").Count, "retried before retry_ms");
            rig.Advance(120); // 400 ms plus up to 25 % jitter
            Assert.AreEqual(2, rig.T.Ops("history").Count);
            rig.T.Deliver("{\"op\":\"history\",\"rid\":" + rig.T.Last("history")["rid"] + ",\"ch\":\"chat:a\",\"msgs\":[]}");
            rig.Poll();
            Assert.IsTrue(task.IsCompleted && !task.IsFaulted);
        }
    }
}
