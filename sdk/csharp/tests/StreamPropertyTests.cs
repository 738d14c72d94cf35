// A randomised property test of one channel's stream against a model server:
// live batches with holes, repeats and swaps, drops and rejoins with since,
// history answered late or lost with the connection, and history trimmed as
// the log grows. Whatever happens, the application must see strictly rising
// seqs, each once; every seq is delivered or inside exactly one gap; and a gap
// covers only seqs history no longer held when it was reported and that never
// reached the client.
using System;
using System.Collections.Generic;
using NUnit.Framework;
using Parley;

namespace Parley.Tests
{
    [TestFixture]
    public class StreamPropertyTests
    {
        private const string Ch = "chat:p";

        private sealed class Model
        {
            public long Head;      // the log's last seq
            public long MinKept = 1; // history holds [MinKept, Head]
            public int Keep;       // history length
            public bool Joined;
            public int Cursor;     // frames of the current transport already answered
            public readonly List<JsonValue> PendingHistory = new List<JsonValue>();
            public readonly HashSet<long> Received = new HashSet<long>(); // every seq sent to the client
        }

        [Test]
        public void EverySeqOnceInOrderOrInExactlyOneJustifiedGap()
        {
            long totalDelivered = 0, totalGaps = 0, totalRepairs = 0;
            for (int seed = 1; seed <= 100; seed++)
            {
                var r = RunSeed(seed);
                totalDelivered += r.Item1;
                totalGaps += r.Item2;
                totalRepairs += r.Item3;
            }
            // The faults must have exercised the repair paths, or the test proves little.
            Assert.Greater(totalRepairs, 1000, "history repairs");
            Assert.Greater(totalGaps, 50, "gaps");
            Assert.Greater(totalDelivered, 50000, "delivered");
            Console.WriteLine("stream property: " + totalDelivered + " msgs, " + totalRepairs + " history repairs, " +
                              totalGaps + " gaps over 100 seeds");
        }

        // A repair buffer of 4 (the C++ SDK's rule: over the cap the newest held is dropped
        // and read from history once the hole is filled): nearly every repair overflows it.
        // History keeps everything here, so nothing may be reported as a gap at all.
        [Test]
        public void AFullRepairBufferLosesNothingHistoryHas()
        {
            long totalDelivered = 0, totalRepairs = 0;
            for (int seed = 1; seed <= 60; seed++)
            {
                var r = RunSeed(seed, 4, int.MaxValue);
                Assert.AreEqual(0, r.Item2, "seed " + seed + ": a gap while history kept everything");
                totalDelivered += r.Item1;
                totalRepairs += r.Item3;
            }
            Assert.Greater(totalRepairs, 1000, "history repairs");
            Console.WriteLine("stream property, repair buffer 4: " + totalDelivered + " msgs, " + totalRepairs +
                              " history repairs over 60 seeds");
        }

        private static Tuple<long, long, long> RunSeed(int seed, int repairBuffer = 10000, int keep = 0)
        {
            var rnd = new Random(seed);
            var rig = new Rig(o => { o.Random = new Random(seed); o.MaxRepairBuffer = repairBuffer; });
            var m = new Model { Keep = 20 + rnd.Next(200) };
            if (keep > 0) m.Keep = keep;
            var ch = rig.Client.Channel(Ch);
            var delivered = new List<long>();
            var gaps = new List<GapInfo>();
            long repairs = 0;
            string where = "seed " + seed;
            // The SDK catches what its callbacks throw, so they note violations instead of asserting.
            var violations = new List<string>();
            ch.MessageReceived += msg =>
            {
                if (delivered.Count > 0 && msg.Seq <= delivered[delivered.Count - 1])
                    violations.Add("seq " + msg.Seq + " after " + delivered[delivered.Count - 1]);
                delivered.Add(msg.Seq);
            };
            ch.Gap += g =>
            {
                gaps.Add(g);
                if (g.From > g.To) violations.Add("empty gap " + g.From + ".." + g.To);
                if (g.To >= m.MinKept)
                    violations.Add("gap " + g.From + ".." + g.To + " while history held from " + m.MinKept);
                for (long s = g.From; s <= g.To; s++)
                    if (m.Received.Contains(s))
                    {
                        violations.Add("seq " + s + " reached the client but is in gap " + g.From + ".." + g.To);
                        break;
                    }
            };
            ch.Reset += x => violations.Add("reset in a log that never started over");
            ch.Join();
            rig.Welcome();
            Serve(rig, m, rnd, ref repairs, true);

            for (int step = 0; step < 250; step++)
            {
                int what = rnd.Next(10);
                if (what < 6) Publish(rig, m, rnd, 1 + rnd.Next(12), faults: true);
                else if (what < 8) AnswerHistory(rig, m, rnd.Next(2) == 0);
                else if (what == 8) Publish(rig, m, rnd, 20 + rnd.Next(150), faults: false, live: rnd.Next(3) > 0);
                else Reconnect(rig, m);
                Serve(rig, m, rnd, ref repairs, true);
            }
            // Calm: one more rejoin, then answer everything until nothing is asked.
            Reconnect(rig, m);
            for (int k = 0; k < 10000 && (Serve(rig, m, rnd, ref repairs, false) || m.PendingHistory.Count > 0); k++)
                AnswerHistory(rig, m, true);

            Assert.IsEmpty(rig.Log, where);
            Assert.IsEmpty(violations, where + ": " + string.Join("; ", violations));
            // Every seq 1..Head delivered or in exactly one gap.
            var seen = new int[m.Head + 1];
            foreach (var s in delivered) seen[s]++;
            foreach (var g in gaps)
                for (long s = g.From; s <= g.To; s++) seen[s]++;
            for (long s = 1; s <= m.Head; s++)
                Assert.AreEqual(1, seen[s], where + ": seq " + s + " delivered or in a gap " + seen[s] + " times");
            return Tuple.Create((long)delivered.Count, (long)gaps.Count, repairs);
        }

        private static JsonValue Msg(long seq) { return Rig.Msg(Ch, seq); }

        private static void Trim(Model m) { m.MinKept = Math.Max(m.MinKept, m.Head - m.Keep + 1); }

        // New messages; while joined they go out live, with faults when asked.
        private static void Publish(Rig rig, Model m, Random rnd, int n, bool faults, bool live = true)
        {
            var seqs = new List<long>();
            for (int k = 0; k < n; k++) seqs.Add(++m.Head);
            Trim(m);
            if (!m.Joined || !live) return; // not live: as if this connection missed them (a hole)
            if (faults)
            {
                if (seqs.Count > 1 && rnd.Next(4) == 0) seqs.RemoveAt(rnd.Next(seqs.Count)); // a hole
                if (seqs.Count > 0 && rnd.Next(4) == 0) seqs.Insert(rnd.Next(seqs.Count), seqs[rnd.Next(seqs.Count)]); // a repeat
                if (seqs.Count > 1 && rnd.Next(4) == 0)
                {
                    int i = rnd.Next(seqs.Count - 1);
                    var t = seqs[i];
                    seqs[i] = seqs[i + 1];
                    seqs[i + 1] = t; // a swap
                }
            }
            SendBatches(rig, m, seqs, rnd);
        }

        private static void SendBatches(Rig rig, Model m, List<long> seqs, Random rnd)
        {
            foreach (var s in seqs) m.Received.Add(s);
            for (int i = 0; i < seqs.Count;)
            {
                int size = 1 + rnd.Next(8);
                if (size == 1) rig.T.Deliver(Msg(seqs[i++]));
                else
                {
                    var batch = JsonValue.Array();
                    for (int k = 0; k < size && i < seqs.Count; k++) batch.Add(Msg(seqs[i++]));
                    rig.T.Deliver(batch);
                }
            }
            rig.Poll();
        }

        private static void Reconnect(Rig rig, Model m)
        {
            m.Joined = false;
            m.PendingHistory.Clear(); // lost with the connection
            rig.T.Drop(1006);
            rig.Poll();
            rig.Advance(rig.Disconnects[rig.Disconnects.Count - 1].DelayMs + 10);
            rig.Welcome();
            m.Cursor = 0;
            while (m.Cursor < rig.T.Sent.Count && rig.T.Sent[m.Cursor].GetString("op") == "hello") m.Cursor++;
        }

        // Answers what the client sent since the last call: joins at once (with
        // the resume), history now or later. True when it answered anything.
        private static bool Serve(Rig rig, Model m, Random rnd, ref long repairs, bool mayDelay)
        {
            bool any = false;
            while (m.Cursor < rig.T.Sent.Count)
            {
                var f = rig.T.Sent[m.Cursor++];
                switch (f.GetString("op"))
                {
                    case "join":
                    {
                        any = true;
                        long since;
                        bool hasSince = f.TryGetLong("since", out since);
                        m.Joined = true;
                        rig.T.Deliver(JsonValue.Object().Set("op", "joined").Set("rid", f["rid"]).Set("ch", Ch)
                            .Set("seq", m.Head).Set("recovered", hasSince && since + 1 >= m.MinKept));
                        if (hasSince)
                        {
                            var resume = new List<long>();
                            for (long s = Math.Max(since + 1, m.MinKept); s <= m.Head; s++) resume.Add(s);
                            SendBatches(rig, m, resume, rnd);
                        }
                        rig.Poll();
                        break;
                    }
                    case "history":
                        any = true;
                        repairs++;
                        m.PendingHistory.Add(f);
                        break;
                }
            }
            if (!mayDelay || rnd.Next(3) > 0) AnswerHistory(rig, m, true);
            return any;
        }

        private static void AnswerHistory(Rig rig, Model m, bool all)
        {
            while (m.PendingHistory.Count > 0)
            {
                var f = m.PendingHistory[0];
                m.PendingHistory.RemoveAt(0);
                long after, limit;
                f.TryGetLong("after", out after);
                if (!f.TryGetLong("limit", out limit)) limit = 50;
                var msgs = JsonValue.Array();
                for (long s = Math.Max(after + 1, m.MinKept); s <= m.Head && msgs.Count < limit; s++)
                {
                    msgs.Add(Msg(s));
                    m.Received.Add(s);
                }
                rig.T.Deliver(JsonValue.Object().Set("op", "history").Set("rid", f["rid"]).Set("ch", Ch).Set("msgs", msgs));
                rig.Poll();
                if (!all) break;
            }
        }
    }
}
