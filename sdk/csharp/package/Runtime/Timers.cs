// Timers of the state machine (reconnect, retry, timeouts, liveness), run by
// Poll when due: a min-heap of deadlines on the SDK's clock. A cancelled
// timer stays in the heap until it comes up or until cancelled ones are the
// majority, when the heap is rebuilt without them (every publish has a
// timeout that its ack cancels, so a busy publisher cancels thousands a second).
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
        internal Timers Owner;

        public void Cancel()
        {
            if (Cancelled) return;
            Cancelled = true;
            Action = null;
            if (Owner != null) Owner.OnCancel();
        }
    }

    internal sealed class Timers
    {
        private const int CompactAbove = 1024;
        private List<Timer> _heap = new List<Timer>();
        private long _order;
        private int _cancelled; // cancelled timers still in the heap

        public Timer At(long due, Action action)
        {
            var t = new Timer { Due = due, Action = action, Order = _order++, Owner = this };
            _heap.Add(t);
            Up(_heap.Count - 1);
            return t;
        }

        internal void OnCancel()
        {
            if (++_cancelled <= CompactAbove || _cancelled * 2 < _heap.Count) return;
            var live = new List<Timer>(_heap.Count - _cancelled + 16);
            foreach (var t in _heap)
            {
                if (t.Cancelled) t.Owner = null; // out of the heap: no longer counted
                else live.Add(t);
            }
            _heap = live;
            _cancelled = 0;
            for (int i = _heap.Count / 2 - 1; i >= 0; i--) Down(i);
        }

        /// <summary>The earliest live deadline, or long.MaxValue.</summary>
        public long NextDue
        {
            get
            {
                while (_heap.Count > 0 && _heap[0].Cancelled) PopCancelled();
                return _heap.Count > 0 ? _heap[0].Due : long.MaxValue;
            }
        }

        /// <summary>Takes one timer due at <paramref name="now"/>, or null.</summary>
        public Timer TakeDue(long now)
        {
            while (_heap.Count > 0)
            {
                var t = _heap[0];
                if (t.Cancelled) { PopCancelled(); continue; }
                if (t.Due > now) return null;
                Pop();
                t.Owner = null; // out of the heap: a late Cancel is not counted
                return t;
            }
            return null;
        }

        /// <summary>Timers in the heap, cancelled ones included.</summary>
        public int Count { get { return _heap.Count; } }

        private void PopCancelled()
        {
            _heap[0].Owner = null;
            _cancelled--;
            Pop();
        }

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
