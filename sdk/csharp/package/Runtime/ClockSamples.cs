// The server's clock as seen from here (docs/PROTOCOL.md "Time for games"): a
// `pong` carries the server's time `ts`; a ping sent at local wall time t0 and
// answered at t1 gives rtt = t1 - t0 and offset = ts - (t0 + t1) / 2, wrong by
// at most rtt / 2. The estimate is the offset of the sample with the smallest
// rtt among the last few (NTP's rule). Also remembers when the client's own
// pings (liveness, ClockSyncMs) went out, so their pongs feed it too.
//
// Poll thread only, owned by a ParleyClient; reset at every welcome (another
// server, maybe another path).
using System.Collections.Generic;

namespace Parley
{
    /// <summary>The estimate of the server's clock (<see cref="ParleyClient.ServerClock"/>).</summary>
    public sealed class ClockEstimate
    {
        /// <summary>Server time = local wall time (ms since the epoch) + OffsetMs.</summary>
        public long OffsetMs { get; internal set; }
        /// <summary>The round trip of the sample it comes from, ms; the offset is wrong by at most half of it.</summary>
        public long RttMs { get; internal set; }
    }

    internal sealed class ClockSamples
    {
        /// <summary>Samples kept; the best (smallest rtt) of these is the estimate.</summary>
        public const int Kept = 8;
        private const int MaxTimedPings = 64;

        private readonly Queue<ClockEstimate> _samples = new Queue<ClockEstimate>();
        private readonly Dictionary<long, long> _sentAt = new Dictionary<long, long>(); // ping rid -> t0
        private readonly Queue<long> _sentOrder = new Queue<long>();

        public void Reset()
        {
            _samples.Clear();
            _sentAt.Clear();
            _sentOrder.Clear();
        }

        /// <summary>A pong's <c>ts</c> for a ping sent at t0 and answered at t1; false when unusable.</summary>
        public bool Sample(long t0, long t1, JsonValue pong)
        {
            long ts;
            if (pong == null || !pong.TryGetLong("ts", out ts) || t1 < t0) return false;
            _samples.Enqueue(new ClockEstimate { OffsetMs = ts - (t0 + t1) / 2, RttMs = t1 - t0 });
            while (_samples.Count > Kept) _samples.Dequeue();
            return true;
        }

        /// <summary>A ping of the client's own (no caller waits for its pong) went out at t0.</summary>
        public void Sent(long rid, long t0)
        {
            _sentAt[rid] = t0;
            _sentOrder.Enqueue(rid);
            while (_sentOrder.Count > MaxTimedPings) _sentAt.Remove(_sentOrder.Dequeue());
        }

        /// <summary>True when <paramref name="pong"/> answers such a ping (it is then used up).</summary>
        public bool Answered(long rid, long t1, JsonValue pong)
        {
            long t0;
            if (!_sentAt.TryGetValue(rid, out t0)) return false;
            _sentAt.Remove(rid);
            Sample(t0, t1, pong);
            return true;
        }

        /// <summary>The best sample, or null before a pong with <c>ts</c>.</summary>
        public ClockEstimate Estimate
        {
            get
            {
                ClockEstimate best = null;
                foreach (var s in _samples) if (best == null || s.RttMs < best.RttMs) best = s;
                return best;
            }
        }
    }
}
