// Edits, deletes and kicks (PROTOCOL.md "Moderation") over the fake transport:
// the ops with their replies and errors, the edit / delete entries in the
// channel's seq stream (live and in a gap repair from history, malformed ones
// dropped like a malformed msg), history's current versions, and `kicked`
// ending the membership without a rejoin.
using System;
using System.Collections.Generic;
using System.Linq;
using NUnit.Framework;
using Parley;

namespace Parley.Tests
{
    [TestFixture]
    public class ModerationTests
    {
        private Rig _rig;
        private Channel _ch;
        private List<string> _seen;
        private List<Message> _msgs;

        [SetUp]
        public void SetUp()
        {
            _rig = new Rig();
            _ch = _rig.Client.Channel("chat:a");
            _seen = new List<string>();
            _msgs = new List<Message>();
            _ch.MessageReceived += m => { _seen.Add("msg " + m.Seq); _msgs.Add(m); };
            _ch.MessageEdited += m =>
            {
                Assert.AreEqual(MessageKind.Edit, m.Kind);
                _seen.Add("edit " + m.Seq + ">" + m.Target + " " + m.Body);
            };
            _ch.MessageDeleted += m =>
            {
                Assert.AreEqual(MessageKind.Delete, m.Kind);
                _seen.Add("delete " + m.Seq + ">" + m.Target);
            };
        }

        private void JoinedAt(long seq)
        {
            _ch.Join();
            _rig.Welcome();
            _rig.Joined("chat:a", seq);
        }

        private static JsonValue Edit(long seq, long target, JsonValue body)
        {
            return JsonValue.Object().Set("op", "edit").Set("ch", "chat:a").Set("seq", seq).Set("target", target)
                .Set("from", "mod7").Set("ts", 5).Set("body", body);
        }

        private static JsonValue Del(long seq, long target)
        {
            return JsonValue.Object().Set("op", "delete").Set("ch", "chat:a").Set("seq", seq).Set("target", target)
                .Set("from", "mod7").Set("ts", 6);
        }

        [Test]
        public void EditAndDeleteAnswerTheirOwnSeqAndTarget()
        {
            JoinedAt(10);
            var e = _ch.Edit(7, JsonValue.Object().Set("t", "fixed"));
            var d = _ch.Delete(8);
            _rig.Poll();
            var edit = _rig.T.Last("edit");
            var del = _rig.T.Last("delete");
            Assert.AreEqual("chat:a", edit.GetString("ch"));
            Assert.AreEqual("{\"t\":\"fixed\"}", edit["body"].ToString());
            long t;
            Assert.IsTrue(edit.TryGetLong("target", out t));
            Assert.AreEqual(7, t);
            Assert.IsFalse(del.Has("body"));
            _rig.T.Deliver(JsonValue.Object().Set("op", "edited").Set("rid", edit["rid"]).Set("ch", "chat:a")
                .Set("target", 7).Set("seq", 11));
            _rig.ErrorFor(del, "forbidden");
            _rig.Poll();
            Assert.IsTrue(e.IsCompleted && !e.IsFaulted);
            Assert.AreEqual(11, e.Result.Seq);
            Assert.AreEqual(7, e.Result.Target);
            Assert.IsTrue(d.IsFaulted);
            Assert.AreEqual("forbidden", ((ParleyException)d.Exception.GetBaseException()).Code);
        }

        [Test]
        public void ARetryableRefusalIsSentAgainAndABadTargetNever()
        {
            JoinedAt(10);
            var bad = _ch.Edit(0, 1);
            Assert.IsTrue(bad.IsFaulted);
            Assert.AreEqual("bad_request", ((ParleyException)bad.Exception.GetBaseException()).Code);
            Assert.AreEqual(0, _rig.T.Ops("edit").Count);
            var d = _ch.Delete(4);
            _rig.Poll();
            _rig.ErrorFor(_rig.T.Last("delete"), "rate_limited", 50);
            _rig.Advance(500);
            Assert.AreEqual(2, _rig.T.Ops("delete").Count);
            _rig.T.Deliver(JsonValue.Object().Set("op", "deleted").Set("rid", _rig.T.Last("delete")["rid"])
                .Set("ch", "chat:a").Set("target", 4).Set("seq", 12));
            _rig.Poll();
            Assert.AreEqual(12, d.Result.Seq);
            var odd = _ch.Edit(5, "x");
            _rig.Poll();
            _rig.T.Deliver(JsonValue.Object().Set("op", "edited").Set("rid", _rig.T.Last("edit")["rid"])
                .Set("ch", "chat:a").Set("target", "5").Set("seq", 13));
            _rig.Poll();
            Assert.IsTrue(odd.IsFaulted);
            Assert.AreEqual("bad_frame", ((ParleyException)odd.Exception.GetBaseException()).Code);
        }

        [Test]
        public void LiveEntriesAreInTheSeqStreamWithMsgs()
        {
            JoinedAt(10);
            _rig.T.Deliver(JsonValue.Array(Rig.Msg("chat:a", 11), Edit(12, 11, 2), Del(13, 11), Rig.Msg("chat:a", 14)));
            _rig.Poll();
            CollectionAssert.AreEqual(new[] { "msg 11", "edit 12>11 2", "delete 13>11", "msg 14" }, _seen);
            Assert.AreEqual(14, _ch.LastSeq);
            Assert.AreEqual(0, _rig.T.Ops("history").Count, "no hole: the entries took their seqs");
            _rig.T.Deliver(Edit(12, 11, 2));
            _rig.Poll();
            Assert.AreEqual(4, _seen.Count, "a resent entry is dropped as a msg would be");
        }

        [Test]
        public void AHoleIsRepairedWithHistorysEntriesAndCurrentVersions()
        {
            JoinedAt(10);
            _rig.T.Deliver(Rig.Msg("chat:a", 15));
            _rig.Poll();
            var hist = _rig.T.Last("history");
            Assert.IsNotNull(hist);
            var edited = Rig.Msg("chat:a", 11).Set("edited", 99);
            var tomb = JsonValue.Object().Set("op", "msg").Set("ch", "chat:a").Set("seq", 12).Set("from", "u2")
                .Set("id", "m12").Set("ts", 1).Set("deleted", true);
            _rig.T.Deliver(JsonValue.Object().Set("op", "history").Set("rid", hist["rid"]).Set("ch", "chat:a")
                .Set("msgs", JsonValue.Array(edited, tomb, Edit(13, 11, "new"), Del(14, 12))));
            _rig.Poll();
            CollectionAssert.AreEqual(new[] { "msg 11", "msg 12", "edit 13>11 \"new\"", "delete 14>12", "msg 15" }, _seen);
            Assert.AreEqual(99, _msgs[0].Edited);
            Assert.IsFalse(_msgs[0].Deleted);
            Assert.IsTrue(_msgs[1].Deleted);
            Assert.IsNull(_msgs[1].Edited);
            Assert.AreEqual(JsonType.Null, _msgs[1].Body.Type);
            Assert.IsNull(_msgs[2].Edited);
        }

        [Test]
        public void HistoryHandsOverEntriesOfEveryKind()
        {
            JoinedAt(10);
            var page = _ch.History(after: 0);
            _rig.Poll();
            _rig.T.Deliver(JsonValue.Object().Set("op", "history").Set("rid", _rig.T.Last("history")["rid"])
                .Set("ch", "chat:a").Set("msgs", JsonValue.Array(Rig.Msg("chat:a", 1), Edit(2, 1, 5), Del(3, 1), Edit(4, 9, 1))));
            _rig.Poll();
            var list = page.Result;
            Assert.AreEqual(3, list.Count, "an edit of a later seq is not an entry");
            Assert.AreEqual(MessageKind.Msg, list[0].Kind);
            Assert.IsNull(list[0].Target);
            Assert.AreEqual(MessageKind.Edit, list[1].Kind);
            Assert.AreEqual(1, list[1].Target);
            Assert.AreEqual("5", list[1].Body.ToString());
            Assert.AreEqual(MessageKind.Delete, list[2].Kind);
        }

        // Handled like a msg without a seq: dropped; its seq is then a hole, which
        // history fills (or reports as a gap) as for any lost msg.
        [Test]
        public void MalformedEntriesAreDroppedNotDelivered()
        {
            JoinedAt(10);
            var noTarget = Edit(11, 1, 1);
            noTarget.Set("target", JsonValue.Null);
            _rig.T.Deliver(noTarget);
            _rig.T.Deliver(Del(11, 1).Set("target", "1"));
            _rig.T.Deliver(Edit(11, 11, 1));
            _rig.T.Deliver(Del(11, -3));
            _rig.T.Deliver(Edit(11, 1, 1).Set("seq", "11"));
            _rig.T.Deliver("{\"op\":\"edit\",\"ch\":\"chat:a\",\"seq\":11,\"target\":");
            _rig.T.Deliver(JsonValue.Object().Set("op", "kicked").Set("ch", 5));
            _rig.T.Deliver(JsonValue.Object().Set("op", "kicked"));
            _rig.Poll();
            CollectionAssert.IsEmpty(_seen);
            Assert.AreEqual(10, _ch.LastSeq);
            Assert.IsTrue(_ch.IsJoined, "a kicked frame without a channel name kicks nothing");
            Assert.AreNotEqual(ClientState.Closed, _rig.Client.State);
            _rig.T.Deliver(Rig.Msg("chat:a", 11));
            _rig.Poll();
            CollectionAssert.AreEqual(new[] { "msg 11" }, _seen);
        }

        [Test]
        public void KickedFailsWhatWaitsAndNeverRejoins()
        {
            JoinedAt(10);
            var kicks = new List<KickedInfo>();
            _ch.Kicked += k => kicks.Add(k);
            var ack = _ch.Publish(JsonValue.Object().Set("t", 1));
            _rig.Poll();
            Assert.AreEqual(1, _rig.T.Ops("pub").Count);
            _rig.T.Deliver(JsonValue.Object().Set("op", "kicked").Set("ch", "chat:a").Set("reason", "spamming links"));
            _rig.Poll();
            Assert.AreEqual(1, kicks.Count);
            Assert.AreEqual("chat:a", kicks[0].Channel);
            Assert.AreEqual("spamming links", kicks[0].Reason);
            Assert.IsTrue(ack.IsFaulted);
            var err = (ParleyException)ack.Exception.GetBaseException();
            Assert.AreEqual("kicked", err.Code);
            Assert.IsFalse(_ch.IsJoined);
            _rig.T.Deliver(Rig.Msg("chat:a", 11));
            _rig.T.Deliver(JsonValue.Object().Set("op", "kicked").Set("ch", "chat:a"));
            _rig.Poll();
            CollectionAssert.IsEmpty(_seen);
            Assert.AreEqual(1, kicks.Count);
            _rig.T.Drop(1006);
            _rig.Poll();
            _rig.Advance(_rig.Disconnects[_rig.Disconnects.Count - 1].DelayMs + 10);
            _rig.Welcome();
            Assert.AreEqual(0, _rig.T.Ops("join").Count, "no rejoin after a kick");
            _ch.Join();
            _rig.Poll();
            long since;
            Assert.IsTrue(_rig.T.Last("join").TryGetLong("since", out since));
            Assert.AreEqual(10, since);
        }

        // PROTOCOL.md: a join in flight gets `kicked`, then its `joined`, then a `left` without rid.
        [Test]
        public void AKickDuringAJoinFailsTheJoin()
        {
            var kicks = new List<KickedInfo>();
            _ch.Kicked += k => kicks.Add(k);
            var j = _ch.Join();
            _rig.Welcome();
            _rig.T.Deliver(JsonValue.Object().Set("op", "kicked").Set("ch", "chat:a").Set("reason", ""));
            _rig.Joined("chat:a", 3);
            _rig.T.Deliver(JsonValue.Object().Set("op", "left").Set("ch", "chat:a"));
            _rig.Poll();
            Assert.IsTrue(j.IsFaulted);
            var err = (ParleyException)j.Exception.GetBaseException();
            Assert.AreEqual("kicked", err.Code);
            Assert.AreEqual(1, kicks.Count);
            Assert.AreEqual("", kicks[0].Reason);
            Assert.IsFalse(_ch.IsJoined);
        }
    }
}
