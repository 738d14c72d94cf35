// A channel's stream and publishes over a fake transport: rejoin with since,
// duplicates dropped, gap fill from history, gap and reset events, publishes
// queued, resent with the same id and retried after retry_ms, state latest-wins
// and resent after a rejoin, up buffered and retried.
using System;
using System.Collections.Generic;
using System.Linq;
using NUnit.Framework;
using Parley;

namespace Parley.Tests
{
    [TestFixture]
    public class ChannelTests
    {
        private Rig _rig;
        private Channel _ch;
        private List<long> _seqs;
        private List<GapInfo> _gaps;
        private List<ResetInfo> _resets;

        [SetUp]
        public void SetUp()
        {
            _rig = new Rig();
            _ch = _rig.Client.Channel("chat:a");
            _seqs = new List<long>();
            _gaps = new List<GapInfo>();
            _resets = new List<ResetInfo>();
            _ch.MessageReceived += m => _seqs.Add(m.Seq);
            _ch.Gap += g => _gaps.Add(g);
            _ch.Reset += r => _resets.Add(r);
        }

        private void Reconnect()
        {
            _rig.T.Drop(1006);
            _rig.Poll();
            _rig.Advance(_rig.Disconnects[_rig.Disconnects.Count - 1].DelayMs + 10);
            _rig.Welcome();
        }

        private void DeliverMsgs(params long[] seqs)
        {
            foreach (var s in seqs) _rig.T.Deliver(Rig.Msg("chat:a", s));
            _rig.Poll();
        }

        [Test]
        public void AFirstJoinHasNoSinceAndARejoinResumesAfterTheLastDelivered()
        {
            var joined = _ch.Join();
            _rig.Welcome();
            Assert.IsFalse(_rig.T.Last("join").Has("since"));
            _rig.Joined("chat:a", 10);
            Assert.IsTrue(joined.IsCompleted);
            Assert.AreEqual(10, joined.Result.Seq);
            DeliverMsgs(11, 12, 13);
            Reconnect();
            long since;
            Assert.IsTrue(_rig.T.Last("join").TryGetLong("since", out since));
            Assert.AreEqual(13, since);
            _rig.Joined("chat:a", 15);
            DeliverMsgs(12, 13, 14, 15, 16); // the resume resends from since; 12, 13 were delivered
            CollectionAssert.AreEqual(new long[] { 11, 12, 13, 14, 15, 16 }, _seqs);
            Assert.AreEqual(0, _gaps.Count);
        }

        [Test]
        public void JoinWithSinceResumesFromTheApplicationsSeq()
        {
            _ch.Join(since: 40);
            _rig.Welcome();
            long since;
            Assert.IsTrue(_rig.T.Last("join").TryGetLong("since", out since));
            Assert.AreEqual(40, since);
        }

        [Test]
        public void MessagesBeforeJoinedAreNotDelivered()
        {
            _ch.Join();
            _rig.Welcome();
            DeliverMsgs(5);
            Assert.AreEqual(0, _seqs.Count);
        }

        [Test]
        public void AGapIsFilledFromHistoryBeforeNewerMessagesAreDelivered()
        {
            _ch.Join();
            _rig.Welcome();
            _rig.Joined("chat:a", 10);
            DeliverMsgs(11, 14, 15);
            CollectionAssert.AreEqual(new long[] { 11 }, _seqs);
            var h = _rig.T.Last("history");
            Assert.IsNotNull(h, "no history request for the gap");
            long after, limit;
            h.TryGetLong("after", out after);
            h.TryGetLong("limit", out limit);
            Assert.AreEqual(11, after);
            Assert.AreEqual(2, limit);
            DeliverMsgs(16); // held while repairing
            _rig.T.Deliver(JsonValue.Object().Set("op", "history").Set("rid", h["rid"]).Set("ch", "chat:a")
                .Set("msgs", JsonValue.Array(Rig.Msg("chat:a", 12), Rig.Msg("chat:a", 13))));
            _rig.Poll();
            CollectionAssert.AreEqual(new long[] { 11, 12, 13, 14, 15, 16 }, _seqs);
            Assert.AreEqual(0, _gaps.Count);
        }

        [Test]
        public void WhatHistoryNoLongerHasIsReportedOnceAsAGap()
        {
            _ch.Join();
            _rig.Welcome();
            _rig.Joined("chat:a", 10);
            DeliverMsgs(11, 20);
            var h = _rig.T.Last("history");
            // History starts at 17: 12..16 are gone.
            _rig.T.Deliver(JsonValue.Object().Set("op", "history").Set("rid", h["rid"]).Set("ch", "chat:a")
                .Set("msgs", JsonValue.Array(Rig.Msg("chat:a", 17), Rig.Msg("chat:a", 18), Rig.Msg("chat:a", 19))));
            _rig.Poll();
            Assert.AreEqual(1, _gaps.Count);
            Assert.AreEqual(12, _gaps[0].From);
            Assert.AreEqual(16, _gaps[0].To);
            CollectionAssert.AreEqual(new long[] { 11, 17, 18, 19, 20 }, _seqs);
        }

        [Test]
        public void ALogThatStartedOverIsAReset()
        {
            _ch.Join();
            _rig.Welcome();
            _rig.Joined("chat:a", 0);
            DeliverMsgs(1, 2, 3);
            Reconnect();
            _rig.Joined("chat:a", 0, recovered: false); // a non-durable namespace after a restart
            Assert.AreEqual(1, _resets.Count);
            Assert.AreEqual(3, _resets[0].LastSeq);
            Assert.AreEqual(0, _resets[0].Seq);
            DeliverMsgs(1, 2);
            CollectionAssert.AreEqual(new long[] { 1, 2, 3, 1, 2 }, _seqs);
            Assert.AreEqual(0, _gaps.Count);
        }

        [Test]
        public void PublishesWaitForTheJoinAndAreResentWithTheSameIdAfterADrop()
        {
            _ch.Join();
            var p1 = _ch.Publish(JsonValue.Object().Set("i", 1));
            var p2 = _ch.Publish(JsonValue.Object().Set("i", 2));
            _rig.Welcome();
            Assert.AreEqual(0, _rig.T.Ops("pub").Count, "published before joined");
            _rig.Joined("chat:a", 0);
            Assert.AreEqual(1, _rig.T.Ops("pub").Count, "maxInFlight 1: one at a time");
            var first = _rig.T.Last("pub");
            Reconnect();
            _rig.Joined("chat:a", 1);
            var again = _rig.T.Last("pub");
            Assert.AreEqual(first.GetString("id"), again.GetString("id"));
            _rig.Ack(again, 1, dup: true);
            Assert.IsTrue(p1.IsCompleted);
            Assert.AreEqual(1, p1.Result.Seq);
            Assert.IsTrue(p1.Result.Dup);
            var second = _rig.T.Last("pub");
            Assert.AreNotEqual(first.GetString("id"), second.GetString("id"));
            Assert.AreEqual(2, second["body"]["i"].AsDouble);
            _rig.Ack(second, 2);
            Assert.AreEqual(2, p2.Result.Seq);
            Assert.IsFalse(p2.Result.Dup);
        }

        [Test]
        public void RetryablePublishErrorsWaitForRetryMsAndOthersFail()
        {
            var retries = new List<RetryInfo>();
            _rig.Client.Retry += r => retries.Add(r);
            _ch.Join();
            _rig.Welcome();
            _rig.Joined("chat:a", 0);
            var p = _ch.Publish(1);
            var pub = _rig.T.Last("pub");
            _rig.ErrorFor(pub, ErrorCodes.RateLimited, 200);
            Assert.AreEqual("pub", retries[0].Op);
            Assert.AreEqual("chat:a", retries[0].Channel);
            Assert.AreEqual(ErrorCodes.RateLimited, retries[0].Code);
            _rig.Advance(190);
            Assert.AreEqual(1, _rig.T.Ops("pub").Count, "retried before retry_ms");
            _rig.Advance(70);
            Assert.AreEqual(2, _rig.T.Ops("pub").Count);
            _rig.ErrorFor(_rig.T.Last("pub"), ErrorCodes.Backpressure, 50);
            _rig.Advance(80);
            Assert.AreEqual(3, _rig.T.Ops("pub").Count);
            Assert.AreEqual(pub.GetString("id"), _rig.T.Last("pub").GetString("id"));
            _rig.Ack(_rig.T.Last("pub"), 1);
            Assert.AreEqual(1, p.Result.Seq);

            var bad = _ch.Publish(2);
            _rig.ErrorFor(_rig.T.Last("pub"), ErrorCodes.TooLarge);
            Assert.IsTrue(bad.IsFaulted);
            Assert.AreEqual(ErrorCodes.TooLarge, ((ParleyException)bad.Exception.GetBaseException()).Code);
        }

        [Test]
        public void APublishGivesUpAfterMaxRetryAttempts()
        {
            var rig = new Rig(o => o.MaxRetryAttempts = 3);
            var ch = rig.Client.Channel("chat:a");
            ch.Join();
            rig.Welcome();
            rig.Joined("chat:a", 0);
            var p = ch.Publish(1);
            for (int i = 0; i < 3; i++)
            {
                rig.ErrorFor(rig.T.Last("pub"), ErrorCodes.RateLimited, 10);
                rig.Advance(20);
            }
            Assert.IsTrue(p.IsFaulted);
            Assert.AreEqual(3, rig.T.Ops("pub").Count);
        }

        [Test]
        public void APublishNotAckedInTimeFailsWithTimeout()
        {
            var rig = new Rig(o => o.PublishTimeoutMs = 5000);
            var ch = rig.Client.Channel("chat:a");
            ch.Join();
            rig.Welcome();
            rig.Joined("chat:a", 0);
            var p = ch.Publish(1);
            rig.Advance(4900);
            Assert.IsFalse(p.IsCompleted);
            rig.Advance(200);
            Assert.AreEqual(ErrorCodes.Timeout, ((ParleyException)p.Exception.GetBaseException()).Code);
        }

        [Test]
        public void LeaveFailsQueuedPublishesAndStopsRejoining()
        {
            _ch.Join();
            var p = _ch.Publish(1);
            _ch.Leave();
            _rig.Welcome();
            Assert.AreEqual(0, _rig.T.Ops("join").Count);
            Assert.AreEqual(ErrorCodes.Left, ((ParleyException)p.Exception.GetBaseException()).Code);
            Assert.IsTrue(_ch.Publish(2).IsFaulted);
        }

        [Test]
        public void StateIsLatestWinsAndResentAfterARejoin()
        {
            _ch.Join();
            _ch.SetState("pos", JsonValue.Object().Set("x", 1));
            _ch.SetState("pos", JsonValue.Object().Set("x", 2));
            _rig.Welcome();
            Assert.AreEqual(0, _rig.T.Ops("state").Count, "state sent before joined");
            _rig.Joined("chat:a", 0);
            var states = _rig.T.Ops("state");
            Assert.AreEqual(1, states.Count);
            Assert.AreEqual(2, states[0]["body"]["x"].AsDouble);
            Reconnect();
            _rig.Joined("chat:a", 0);
            Assert.AreEqual(1, _rig.T.Ops("state").Count);
            Assert.AreEqual(2, _rig.T.Last("state")["body"]["x"].AsDouble);
        }

        [Test]
        public void ARateLimitedStateSendsTheNewestBodyOnceAllowed()
        {
            _ch.Join();
            _rig.Welcome();
            _rig.Joined("chat:a", 0);
            _ch.SetState("pos", 1);
            var first = _rig.T.Last("state");
            _rig.ErrorFor(first, ErrorCodes.RateLimited, 100);
            _ch.SetState("pos", 2);
            _ch.SetState("pos", 3);
            Assert.AreEqual(1, _rig.T.Ops("state").Count, "sent while rate limited");
            _rig.Advance(140);
            Assert.AreEqual(2, _rig.T.Ops("state").Count);
            Assert.AreEqual(3, _rig.T.Last("state")["body"].AsDouble);
        }

        [Test]
        public void StateMinIntervalCoalescesToTheLatest()
        {
            var rig = new Rig(o => o.StateMinIntervalMs = 100);
            var ch = rig.Client.Channel("chat:a");
            ch.Join();
            rig.Welcome();
            rig.Joined("chat:a", 0);
            for (int i = 1; i <= 5; i++) ch.SetState("pos", i);
            Assert.AreEqual(1, rig.T.Ops("state").Count);
            rig.Advance(110);
            Assert.AreEqual(2, rig.T.Ops("state").Count);
            Assert.AreEqual(5, rig.T.Last("state")["body"].AsDouble);
        }

        [Test]
        public void UpIsHeldUntilJoinedAndRetriedWhenRateLimited()
        {
            _ch.Join();
            _ch.Up(JsonValue.Object().Set("a", 1));
            _ch.Up(JsonValue.Object().Set("a", 2));
            _rig.Welcome();
            Assert.AreEqual(0, _rig.T.Ops("up").Count);
            _rig.Joined("chat:a", 0);
            var ups = _rig.T.Ops("up");
            Assert.AreEqual(2, ups.Count);
            Assert.AreEqual(1, ups[0]["body"]["a"].AsDouble);
            _rig.ErrorFor(ups[1], ErrorCodes.RateLimited, 50);
            _rig.Advance(70);
            Assert.AreEqual(3, _rig.T.Ops("up").Count);
            Assert.AreEqual(2, _rig.T.Last("up")["body"]["a"].AsDouble);
            var errors = new List<ParleyException>();
            _ch.Error += e => errors.Add(e);
            _rig.ErrorFor(_rig.T.Last("up"), ErrorCodes.BadRequest);
            Assert.AreEqual(ErrorCodes.BadRequest, errors.Single().Code);
        }

        [Test]
        public void UpBeforeJoinIsRefused()
        {
            Assert.Throws<ParleyException>(() => _ch.Up(1));
        }

        [Test]
        public void ARefusedJoinFailsAndIsNotRetried()
        {
            var joined = _ch.Join();
            var p = _ch.Publish(1);
            _rig.Welcome();
            _rig.ErrorFor(_rig.T.Last("join"), ErrorCodes.Forbidden);
            Assert.IsTrue(joined.IsFaulted);
            Assert.IsTrue(p.IsFaulted);
            Reconnect();
            Assert.AreEqual(0, _rig.T.Ops("join").Count);
        }

        [Test]
        public void PresenceAfterARejoinIsReportedAsTheDifference()
        {
            var presence = new List<PresenceEvent>();
            _ch.PresenceChanged += p => presence.Add(p);
            _ch.Join();
            _rig.Welcome();
            _rig.T.Deliver("{\"op\":\"joined\",\"rid\":" + _rig.T.Last("join")["rid"] +
                           ",\"ch\":\"chat:a\",\"seq\":0,\"recovered\":true,\"members\":[\"u1\",\"u2\",\"u3\"]}");
            _rig.Poll();
            Reconnect();
            _rig.T.Deliver("{\"op\":\"joined\",\"rid\":" + _rig.T.Last("join")["rid"] +
                           ",\"ch\":\"chat:a\",\"seq\":0,\"recovered\":true,\"members\":[\"u1\",\"u3\",\"u4\"]}");
            _rig.Poll();
            Assert.AreEqual(1, presence.Count);
            CollectionAssert.AreEqual(new[] { "u4" }, presence[0].Join);
            CollectionAssert.AreEqual(new[] { "u2" }, presence[0].Leave);
        }
    }
}
