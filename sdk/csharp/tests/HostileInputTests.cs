// What a buggy or hostile server can send must not break the client: frames
// with wrong types, unknown ops, replies to nothing, history pages that move
// nothing forward. And the timer heap stays bounded under a busy publisher.
using System;
using System.Collections.Generic;
using NUnit.Framework;
using Parley;

namespace Parley.Tests
{
    [TestFixture]
    public class HostileInputTests
    {
        [Test]
        public void FramesWithWrongTypesNeverThrowOutOfPoll()
        {
            var rig = new Rig();
            var ch = rig.Client.Channel("chat:a");
            int delivered = 0;
            ch.MessageReceived += m => delivered++;
            ch.Join();
            ch.Publish(1);
            ch.MessageEdited += m => delivered++;
            ch.MessageDeleted += m => delivered++;
            rig.Welcome();
            rig.Joined("chat:a", 0);
            ch.Edit(1, 2);
            ch.Delete(1);
            var values = new[]
            {
                "null", "true", "-1", "0", "1", "2", "9223372036854775807", "1.5", "\"x\"", "\"chat:a\"",
                "[]", "{}", "[1,\"a\"]", "{\"a\":1}",
            };
            var keys = new[] { "op", "ch", "seq", "rid", "from", "id", "body", "code", "retry_ms", "reconnect_ms",
                               "msgs", "members", "join", "leave", "recovered", "epoch", "dup", "key",
                               "sid", "unset", "tick", "ts", "pos", "caps", "target", "reason", "edited", "deleted" };
            var ops = new[] { "msg", "state", "presence", "joined", "ack", "history", "error", "bye", "direct",
                              "welcome", "pong", "left", "sd", "nope", "edit", "delete", "kicked", "edited", "deleted" };
            var r = new Random(99);
            for (int i = 0; i < 5000; i++)
            {
                var f = JsonValue.Object().Set("op", ops[r.Next(ops.Length)]);
                int n = r.Next(6);
                for (int k = 0; k < n; k++) f.Set(keys[r.Next(keys.Length)], JsonValue.Parse(values[r.Next(values.Length)]));
                rig.T.Deliver(r.Next(10) == 0 ? JsonValue.Array(f, f) : f);
                if (i % 50 == 0) Assert.DoesNotThrow(() => rig.Poll());
            }
            Assert.DoesNotThrow(() => rig.Poll());
            Assert.AreEqual(0, rig.Log.Count, "an SDK handler threw: " + string.Join("; ", rig.Log));
            // Still a working client afterwards.
            Assert.AreNotEqual(ClientState.Closed, rig.Client.State);
        }

        [Test]
        public void AHistoryPageThatMovesNothingForwardEndsAsAGapInsteadOfALoop()
        {
            var rig = new Rig();
            var seqs = new List<long>();
            var gaps = new List<GapInfo>();
            JoinedAt10(rig, seqs, gaps);
            rig.T.Deliver(Rig.Msg("chat:a", 11));
            rig.T.Deliver(Rig.Msg("chat:a", 15));
            rig.Poll();
            var h = rig.T.Last("history");
            // The server answers with what was already delivered.
            rig.T.Deliver(JsonValue.Object().Set("op", "history").Set("rid", h["rid"]).Set("ch", "chat:a")
                .Set("msgs", JsonValue.Array(Rig.Msg("chat:a", 10), Rig.Msg("chat:a", 11))));
            rig.Poll();
            Assert.AreEqual(1, rig.T.Ops("history").Count, "asked again for what it will not get");
            Assert.AreEqual(1, gaps.Count);
            Assert.AreEqual(12, gaps[0].From);
            Assert.AreEqual(14, gaps[0].To);
            CollectionAssert.AreEqual(new long[] { 11, 15 }, seqs);
        }

        // chat:a joined at seq 10, its deliveries and gaps recorded.
        private static void JoinedAt10(Rig rig, List<long> seqs, List<GapInfo> gaps)
        {
            var ch = rig.Client.Channel("chat:a");
            ch.MessageReceived += m => seqs.Add(m.Seq);
            ch.Gap += g => gaps.Add(g);
            ch.Join();
            rig.Welcome();
            rig.Joined("chat:a", 10);
        }

        private static JsonValue Page(JsonValue request, long from, long to)
        {
            var msgs = JsonValue.Array();
            for (long s = from; s <= to; s++) msgs.Add(Rig.Msg("chat:a", s));
            return JsonValue.Object().Set("op", "history").Set("rid", request["rid"]).Set("ch", "chat:a").Set("msgs", msgs);
        }

        private static List<long> Range(long from, long to)
        {
            var list = new List<long>();
            for (long s = from; s <= to; s++) list.Add(s);
            return list;
        }

        // The C++ SDK's rule: a full repair buffer drops the newest held, never the oldest,
        // and reads it from history once the hole is filled, also on a channel gone quiet;
        // a page is not cut down to the buffer's size.
        [Test]
        public void AFullRepairBufferDropsTheNewestAndReadsItFromHistoryLater()
        {
            var rig = new Rig(o => o.MaxRepairBuffer = 5);
            var seqs = new List<long>();
            var gaps = new List<GapInfo>();
            JoinedAt10(rig, seqs, gaps);
            rig.T.Deliver(Rig.Msg("chat:a", 15)); // a hole: 11..14
            rig.Poll();
            var h = rig.T.Last("history");
            var batch = JsonValue.Array();
            for (long s = 16; s <= 30; s++) batch.Add(Rig.Msg("chat:a", s));
            rig.T.Deliver(batch); // 15..19 held, 20..30 dropped
            rig.Poll();
            rig.T.Deliver(Page(h, 11, 14));
            rig.Poll();
            CollectionAssert.AreEqual(Range(11, 19), seqs);
            Assert.AreEqual(2, rig.T.Ops("history").Count, "the dropped ones are read without a later message");
            var h2 = rig.T.Last("history");
            long after, limit;
            Assert.IsTrue(h2.TryGetLong("after", out after));
            Assert.IsTrue(h2.TryGetLong("limit", out limit));
            Assert.AreEqual(19, after);
            Assert.AreEqual(11, limit);
            rig.T.Deliver(Page(h2, 20, 30));
            rig.Poll();
            CollectionAssert.AreEqual(Range(11, 30), seqs);
            Assert.IsEmpty(gaps);
            Assert.AreEqual(2, rig.T.Ops("history").Count);
        }

        [Test]
        public void AFailedRepairReadIsAskedAgainAndAGapOnlyAfterThreeInARow()
        {
            var rig = new Rig();
            var seqs = new List<long>();
            var gaps = new List<GapInfo>();
            JoinedAt10(rig, seqs, gaps);
            rig.T.Deliver(Rig.Msg("chat:a", 15)); // a hole: 11..14
            rig.Poll();
            rig.ErrorFor(rig.T.Last("history"), "internal");
            rig.Poll();
            rig.Advance(200);
            Assert.AreEqual(2, rig.T.Ops("history").Count, "asked again");
            Assert.IsEmpty(gaps);
            rig.T.Deliver(Page(rig.T.Last("history"), 11, 14));
            rig.Poll();
            CollectionAssert.AreEqual(Range(11, 15), seqs);
            rig.T.Deliver(Rig.Msg("chat:a", 20)); // a hole: 16..19, and every read fails
            rig.Poll();
            for (int k = 0; k < 3; k++)
            {
                rig.ErrorFor(rig.T.Last("history"), "internal");
                rig.Poll();
                rig.Advance(200);
            }
            Assert.AreEqual(1, gaps.Count);
            Assert.AreEqual(16, gaps[0].From);
            Assert.AreEqual(19, gaps[0].To);
            Assert.AreEqual(20, seqs[seqs.Count - 1]);
        }

        [Test]
        public void CancelledTimersDoNotPileUp()
        {
            var timers = new Timers();
            var live = new List<Timer>();
            for (int i = 0; i < 100000; i++)
            {
                var t = timers.At(60000 + i, () => { });
                if (i % 100 == 0) live.Add(t);
                else t.Cancel();
            }
            Assert.Less(timers.Count, 5000, "cancelled timers kept");
            int ran = 0;
            Timer due;
            long last = -1;
            while ((due = timers.TakeDue(long.MaxValue)) != null)
            {
                Assert.GreaterOrEqual(due.Due, last, "out of order after compaction");
                last = due.Due;
                ran++;
            }
            Assert.AreEqual(live.Count, ran);
        }

        [Test]
        public void ManyQueuedPublishesGoOutInOrderOneAtATime()
        {
            var rig = new Rig();
            var ch = rig.Client.Channel("chat:a");
            ch.Join();
            const int n = 20000;
            var acks = new List<System.Threading.Tasks.Task<Ack>>();
            for (int i = 0; i < n; i++) acks.Add(ch.Publish(i));
            rig.Welcome();
            rig.Joined("chat:a", 0);
            var sw = System.Diagnostics.Stopwatch.StartNew();
            for (int i = 0; i < n; i++)
            {
                var pub = rig.T.Sent[rig.T.Sent.Count - 1];
                Assert.AreEqual("pub", pub.GetString("op"));
                Assert.AreEqual(i, pub["body"].AsDouble, "out of call order");
                rig.Ack(pub, i + 1);
            }
            Assert.AreEqual(n, rig.T.Ops("pub").Count, "not one at a time");
            for (int i = 0; i < n; i++) Assert.AreEqual(i + 1, acks[i].Result.Seq);
            // Linear: 20,000 acks take well under a second; the quadratic version took seconds.
            Assert.Less(sw.ElapsedMilliseconds, 10000);
        }

        [Test]
        public void ABusyPublisherKeepsFewTimers()
        {
            var rig = new Rig(o => o.MaxInFlight = 64);
            var ch = rig.Client.Channel("chat:a");
            ch.Join();
            rig.Welcome();
            rig.Joined("chat:a", 0);
            long seq = 0;
            for (int round = 0; round < 200; round++)
            {
                for (int k = 0; k < 50; k++) ch.Publish(k);
                foreach (var pub in rig.T.Ops("pub").GetRange(rig.T.Ops("pub").Count - 50, 50)) rig.Ack(pub, ++seq);
            }
            Assert.AreEqual(10000, seq);
            Assert.Less(rig.Client.TimerCount, 3000, "10,000 acked publishes left their timeouts behind");
        }
    }
}
