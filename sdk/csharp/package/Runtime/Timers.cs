// Timers of the state machine (reconnect, retry, timeouts, liveness), run by
// Poll when due: a min-heap of deadlines on the SDK's clock. A cancelled
// timer stays in the heap until it comes up (cheap, and cancellation is rare).
//
// Poll thread only.
using System;
using System.Collections.Generic;

namespace Parley
{
    internal sealed class Timer
    {
        internal long Due;
        internal Action Action;
        internal bool Cancelled;
        internal long Order;

        public void Cancel() { Cancelled = true; Action = null; }
    }

    internal sealed class Timers
    {
        private readonly List<Timer> _heap = new List<Timer>();
        private long _order;

        public Timer At(long due, Action action)
        {
            var t = new Timer { Due = due, Action = action, Order = _order++ };
            _heap.Add(t);
            Up(_heap.Count - 1);
            return t;
        }

        /// <summary>The earliest live deadline, or long.MaxValue.</summary>
        public long NextDue
        {
            get
            {
                while (_heap.Count > 0 && _heap[0].Cancelled) Pop();
                return _heap.Count > 0 ? _heap[0].Due : long.MaxValue;
            }
        }

        /// <summary>Takes one timer due at <paramref name="now"/>, or null.</summary>
        public Timer TakeDue(long now)
        {
            while (_heap.Count > 0)
            {
                var t = _heap[0];
                if (t.Cancelled) { Pop(); continue; }
                if (t.Due > now) return null;
                Pop();
                return t;
            }
            return null;
        }

        public int Count { get { return _heap.Count; } }

        private void Pop()
        {
            int last = _heap.Count - 1;
            _heap[0] = _heap[last];
            _heap.RemoveAt(last);
            if (_heap.Count > 0) Down(0);
        }

        private bool Less(int a, int b)
        {
            var x = _heap[a];
            var y = _heap[b];
            return x.Due < y.Due || (x.Due == y.Due && x.Order < y.Order);
        }

        private void Up(int i)
        {
            while (i > 0)
            {
                int parent = (i - 1) / 2;
                if (!Less(i, parent)) break;
                Swap(i, parent);
                i = parent;
            }
        }

        private void Down(int i)
        {
            for (;;)
            {
                int l = 2 * i + 1, r = l + 1, m = i;
                if (l < _heap.Count && Less(l, m)) m = l;
                if (r < _heap.Count && Less(r, m)) m = r;
                if (m == i) return;
                Swap(i, m);
                i = m;
            }
        }

        private void Swap(int a, int b)
        {
            var t = _heap[a];
            _heap[a] = _heap[b];
            _heap[b] = t;
        }
    }
}
