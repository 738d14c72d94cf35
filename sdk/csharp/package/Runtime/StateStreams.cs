// State deltas (docs/PROTOCOL.md "State deltas"), the client's rule: per
// stream id (`sid`, one connection's) the channel, sender and key of its last
// full frame and the base body; an `sd` frame is the base minus `unset`, plus
// the delta's top-level fields, and reaches the application as the `state`
// it stands for. Nothing is invented: an `sd` whose stream is unknown, whose
// base was dropped, or that is malformed is refused (Take says which) and the
// client re-joins the channel, which makes the server send full bodies again.
//
// The base is never a value the application holds: a full frame's body is
// copied before it is kept, an applied body is copied before it is handed
// out, so an application that changes what it got (nested values included)
// changes nothing the next delta applies to.
//
// Poll thread only: one table per connection, owned by its ParleyClient.
using System;
using System.Collections.Generic;

namespace Parley
{
    /// <summary>PROTOCOL.md "State deltas": how an <c>sd</c> frame turns a stream's base into the next body.</summary>
    public static class StateDelta
    {
        /// <summary>
        /// The applied body: <paramref name="baseBody"/> without the keys of <paramref name="unset"/>
        /// (null: none), then every field of <paramref name="set"/> (replacing or added). A new
        /// object that shares its field values with the arguments, which are not changed.
        /// Throws <see cref="FormatException"/> when the base or the delta body is not an object,
        /// or <paramref name="unset"/> is not an array of strings.
        /// </summary>
        public static JsonValue Apply(JsonValue baseBody, JsonValue set, JsonValue unset)
        {
            if (baseBody == null || baseBody.Type != JsonType.Object) throw new FormatException("the base is not an object");
            if (set == null || set.Type != JsonType.Object) throw new FormatException("the delta body is not an object");
            HashSet<string> gone = null;
            if (unset != null)
            {
                if (unset.Type != JsonType.Array) throw new FormatException("unset is not an array of strings");
                foreach (var k in unset.Items)
                {
                    if (k.Type != JsonType.String) throw new FormatException("unset is not an array of strings");
                    if (gone == null) gone = new HashSet<string>(StringComparer.Ordinal);
                    gone.Add(k.AsString);
                }
            }
            // Set keeps one member per key (the last of a key given twice wins, as in parsing).
            var result = JsonValue.Object();
            foreach (var kv in baseBody.Members)
                if (gone == null || !gone.Contains(kv.Key)) result.Set(kv.Key, kv.Value);
            foreach (var kv in set.Members) result.Set(kv.Key, kv.Value);
            return result;
        }
    }

    internal sealed class StateStreams
    {
        /// <summary>Streams kept per connection; past it the least recently used is forgotten.</summary>
        public const int MaxStreams = 65536;

        public enum Outcome { Applied, Stale, Unknown, Malformed }

        public struct Taken
        {
            public Outcome Kind;
            public JsonValue State;  // Applied: the `state` frame the channel gets
            public string Channel;   // the stream's channel (all but Unknown)
            public string Why;
        }

        private sealed class Stream
        {
            public long Sid;
            public string Channel, From, Key;
            public JsonValue Base; // null: none (left, re-joined, a non-object body, a malformed sd)
        }

        private readonly int _max;
        private readonly Dictionary<long, LinkedListNode<Stream>> _streams = new Dictionary<long, LinkedListNode<Stream>>();
        private readonly LinkedList<Stream> _lru = new LinkedList<Stream>(); // least recently used first

        public StateStreams(int max = MaxStreams) { _max = Math.Max(1, max); }

        public int Count { get { return _streams.Count; } }

        /// <summary>A new connection: the old one's sids mean nothing.</summary>
        public void Clear()
        {
            _streams.Clear();
            _lru.Clear();
        }

        /// <summary>
        /// The channel was left or is re-joined: its bases are dropped, the sids kept, so an
        /// <c>sd</c> the server sent before it saw the leave is known as stale, not as a lost track.
        /// </summary>
        public void Forget(string channel)
        {
            foreach (var s in _lru) if (s.Channel == channel) s.Base = null;
        }

        /// <summary>A full <c>state</c> frame carrying a sid: its body becomes the stream's base.</summary>
        public void Full(JsonValue frame)
        {
            long sid;
            if (!frame.TryGetLong("sid", out sid) || sid <= 0) return;
            LinkedListNode<Stream> node;
            if (_streams.TryGetValue(sid, out node))
            {
                _lru.Remove(node);
                _streams.Remove(sid);
            }
            var body = frame["body"];
            // A body that is not an object is no base (a delta cannot apply to it),
            // but the stream stays known, so a delta on it re-joins its channel only.
            var s = new Stream
            {
                Sid = sid, Channel = frame.GetString("ch"), From = frame.GetString("from"), Key = frame.GetString("key"),
                Base = body != null && body.Type == JsonType.Object ? body.DeepCopy() : null,
            };
            _streams[sid] = _lru.AddLast(s);
            if (_streams.Count > _max)
            {
                _streams.Remove(_lru.First.Value.Sid);
                _lru.RemoveFirst();
            }
        }

        /// <summary>An <c>sd</c> frame: the state it stands for, or why it cannot be applied.</summary>
        public Taken Take(JsonValue sd)
        {
            long sid;
            LinkedListNode<Stream> node;
            if (!sd.TryGetLong("sid", out sid) || !_streams.TryGetValue(sid, out node))
            {
                var raw = sd["sid"];
                return new Taken
                {
                    Kind = Outcome.Unknown,
                    Why = "an sd frame for stream " + (raw == null ? "(none)" : raw.ToString()) + ", which this connection does not know",
                };
            }
            var s = node.Value;
            if (s.Base == null)
                return new Taken
                {
                    Kind = Outcome.Stale, Channel = s.Channel,
                    Why = "an sd frame for stream " + sid + " of " + s.Channel + " before its full body",
                };
            JsonValue body;
            try
            {
                body = StateDelta.Apply(s.Base, sd["body"], sd["unset"]);
            }
            catch (FormatException e)
            {
                s.Base = null; // no longer to be trusted; the re-join's full body replaces it
                return new Taken
                {
                    Kind = Outcome.Malformed, Channel = s.Channel,
                    Why = "a malformed sd frame for stream " + sid + " of " + s.Channel + ": " + e.Message,
                };
            }
            s.Base = body;
            _lru.Remove(node);
            _lru.AddLast(node);
            var state = JsonValue.Object().Set("op", "state").Set("ch", s.Channel).Set("from", s.From).Set("key", s.Key)
                .Set("sid", sid).Set("body", body.DeepCopy());
            foreach (var name in CopiedFields)
            {
                var v = sd[name];
                if (v != null) state.Set(name, v);
            }
            return new Taken { Kind = Outcome.Applied, State = state, Channel = s.Channel };
        }

        // What an `sd` carries of the `state` it stands for besides the body.
        private static readonly string[] CopiedFields = { "pos", "tick", "ts" };
    }
}
