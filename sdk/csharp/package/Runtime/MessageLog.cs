// MessageLog: a channel's messages by seq, with edits and deletes applied by
// the client's rule of PROTOCOL.md "Moderation: delete and edit" (the JS
// SDK's MessageLog). Pure data; the caller's thread (usually Poll()'s).
using System.Collections.Generic;

namespace Parley
{
    /// <summary>
    /// A channel's messages by seq in their current version. Feed it every entry a Channel
    /// delivers (MessageReceived, MessageEdited, MessageDeleted, live or from a resume) and the
    /// entries of History pages, in any order of pages: applying an entry twice changes nothing
    /// more, an edit or delete of a message it does not hold changes nothing (History answers
    /// that message's current version), and a delete is final.
    /// </summary>
    public sealed class MessageLog
    {
        private readonly SortedDictionary<long, Message> _bySeq = new SortedDictionary<long, Message>();
        private readonly int _max;

        /// <summary><paramref name="max"/>: messages kept; past it the oldest seqs go first.</summary>
        public MessageLog(int max = 10000) { _max = max < 1 ? 1 : max; }

        /// <summary>Messages held.</summary>
        public int Count { get { return _bySeq.Count; } }

        /// <summary>The message with this seq in its current version, or null.</summary>
        public Message Get(long seq)
        {
            Message m;
            return _bySeq.TryGetValue(seq, out m) ? m : null;
        }

        /// <summary>Every message held, oldest seq first.</summary>
        public IList<Message> Messages() { return new List<Message>(_bySeq.Values); }

        /// <summary>
        /// Applies one entry; returns the message it added or changed (its current version, a
        /// new object), or null when it changed nothing.
        /// </summary>
        public Message Apply(Message entry)
        {
            if (entry == null || entry.Seq < 1) return null;
            if (entry.Kind == MessageKind.Msg) return Put(entry);
            Message held;
            if (!entry.Target.HasValue || !_bySeq.TryGetValue(entry.Target.Value, out held) || held.Deleted) return null;
            var next = Copy(held);
            if (entry.Kind == MessageKind.Edit)
            {
                next.Body = entry.Body;
                next.Edited = entry.Ts;
            }
            else
            {
                next.Deleted = true;
                next.Body = JsonValue.Null;
                next.Edited = null;
            }
            _bySeq[held.Seq] = next;
            return next;
        }

        /// <summary>Apply of each entry of a History page (or a backfill), in order.</summary>
        public void ApplyAll(IEnumerable<Message> entries)
        {
            if (entries == null) return;
            foreach (var e in entries) Apply(e);
        }

        private Message Put(Message msg)
        {
            Message held;
            if (_bySeq.TryGetValue(msg.Seq, out held))
            {
                if (held.Deleted) return null; // final: an older version read again changes nothing
                if (held.Edited.HasValue && !msg.Deleted && (msg.Edited ?? -1) < held.Edited.Value) return null; // older
                _bySeq[msg.Seq] = msg;
                return msg;
            }
            _bySeq[msg.Seq] = msg;
            if (_bySeq.Count > _max)
            {
                long oldest = 0;
                foreach (var k in _bySeq.Keys) { oldest = k; break; }
                _bySeq.Remove(oldest);
                if (oldest == msg.Seq) return null; // older than everything kept
            }
            return msg;
        }

        private static Message Copy(Message m)
        {
            return new Message
            {
                Channel = m.Channel, Seq = m.Seq, From = m.From, Id = m.Id, Ts = m.Ts, Body = m.Body,
                Kind = m.Kind, Target = m.Target, Edited = m.Edited, Deleted = m.Deleted,
            };
        }
    }
}
