// Edits, deletes and kicks through the C# SDK against the real server
// (PROTOCOL.md "Moderation"), over WebSocket in JSON and MessagePack: the
// author's edit and delete answered with their own seqs, the entries reaching
// another member live in seq order with the msgs, history answering current
// versions (Edited, a tombstone) and the entries, a stranger refused with
// `forbidden`, a delete of nothing and an edit of a deleted message with
// `not_found`, a resume with `since` replaying the entries, and a kick over
// POST /v1/kick ending the member's channel with its reason.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Linq;
using System.Net;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;
using Parley;

namespace Parley.Tests
{
    [TestFixture]
    [Category("server")]
    public class ModerationServerTests
    {
        private RealServer _server;
        private readonly List<ParleyClient> _clients = new List<ParleyClient>();

        [TestFixtureSetUp]
        public void StartServer()
        {
            if (RealServer.Binary == null) Assert.Ignore("PARLEY_BIN is not set: no server to test against");
            _server = new RealServer("");
        }

        [TestFixtureTearDown]
        public void StopServer()
        {
            if (_server != null) _server.Dispose();
        }

        [TearDown]
        public void CloseClients()
        {
            foreach (var c in _clients) c.Close();
            _clients.Clear();
        }

        private ParleyClient Client(string user, string enc)
        {
            var c = new ParleyClient(new ClientOptions
            {
                Url = _server.WsUrl, Token = RealServer.Token(user),
                Codec = enc == "msgpack" ? (ICodec)MsgPackCodec.Instance : JsonCodec.Instance,
            });
            _clients.Add(c);
            return c;
        }

        private void Until(Func<bool> cond, string what, int ms = 10000)
        {
            var sw = Stopwatch.StartNew();
            while (!cond())
            {
                if (sw.ElapsedMilliseconds > ms) Assert.Fail("timed out after " + ms + " ms waiting for " + what + "\n" + _server.Log);
                foreach (var c in _clients) c.Poll();
                Thread.Sleep(2);
            }
        }

        private T Wait<T>(Task<T> t, string what)
        {
            Until(() => t.IsCompleted, what);
            Assert.IsFalse(t.IsFaulted, t.IsFaulted ? what + ": " + t.Exception.GetBaseException().Message : "");
            return t.Result;
        }

        private string CodeOf<T>(Task<T> t, string what)
        {
            Until(() => t.IsCompleted, what);
            Assert.IsTrue(t.IsFaulted, what + " should have been refused");
            return ((ParleyException)t.Exception.GetBaseException()).Code;
        }

        private static string Describe(Message m)
        {
            if (m.Kind == MessageKind.Edit) return "edit " + m.Seq + ">" + m.Target + " " + m.Body;
            if (m.Kind == MessageKind.Delete) return "delete " + m.Seq + ">" + m.Target;
            return "msg " + m.Seq + (m.Deleted ? " deleted" : " " + m.Body) + (m.Edited.HasValue ? " edited" : "");
        }

        private static List<string> Record(Channel ch)
        {
            var seen = new List<string>();
            ch.MessageReceived += m => seen.Add(Describe(m));
            ch.MessageEdited += m => seen.Add(Describe(m));
            ch.MessageDeleted += m => seen.Add(Describe(m));
            return seen;
        }

        [TestCase("json")]
        [TestCase("msgpack")]
        public void EditAndDeleteLiveInHistoryAndOnAResume(string enc)
        {
            var name = "chat:mod-" + enc;
            var a = Client("alice", enc).Channel(name);
            var b = Client("bob", enc).Channel(name);
            var live = Record(b);
            Wait(a.Join(), "alice's join");
            Wait(b.Join(), "bob's join");
            Assert.AreEqual(1, Wait(a.Publish(JsonValue.Object().Set("t", "tpyo")), "pub 1").Seq);
            Assert.AreEqual(2, Wait(a.Publish(JsonValue.Object().Set("t", "oops")), "pub 2").Seq);
            var edited = Wait(a.Edit(1, JsonValue.Object().Set("t", "fixed")), "the edit");
            Assert.AreEqual(3, edited.Seq);
            Assert.AreEqual(1, edited.Target);
            var deleted = Wait(a.Delete(2), "the delete");
            Assert.AreEqual(4, deleted.Seq);
            Assert.AreEqual(2, deleted.Target);
            Until(() => live.Count == 4, "four entries live");
            CollectionAssert.AreEqual(new[] { "msg 1 {\"t\":\"tpyo\"}", "msg 2 {\"t\":\"oops\"}",
                "edit 3>1 {\"t\":\"fixed\"}", "delete 4>2" }, live);
            Assert.AreEqual(4, b.LastSeq);

            var page = Wait(b.History(after: 0), "history").Select(Describe).ToList();
            CollectionAssert.AreEqual(new[] { "msg 1 {\"t\":\"fixed\"} edited", "msg 2 deleted",
                "edit 3>1 {\"t\":\"fixed\"}", "delete 4>2" }, page);

            Assert.AreEqual("forbidden", CodeOf(b.Edit(1, JsonValue.Object().Set("t", "mine now")), "bob's edit"));
            Assert.AreEqual("not_found", CodeOf(a.Delete(999), "a delete of nothing"));
            Assert.AreEqual("not_found", CodeOf(a.Edit(2, "back"), "an edit of a deleted message"));

            var c = Client("carol", enc).Channel(name);
            var resumed = Record(c);
            Wait(c.Join(1), "carol's resume");
            Until(() => resumed.Count == 3, "the backfill");
            CollectionAssert.AreEqual(new[] { "msg 2 deleted", "edit 3>1 {\"t\":\"fixed\"}", "delete 4>2" }, resumed);
            Assert.AreEqual(4, c.LastSeq);
        }

        [TestCase("json")]
        [TestCase("msgpack")]
        public void AKickEndsTheChannelWithItsReason(string enc)
        {
            var name = "chat:kick-" + enc;
            var d = Client("dave", enc).Channel(name);
            var kicks = new List<KickedInfo>();
            d.Kicked += k => kicks.Add(k);
            Wait(d.Join(), "dave's join");
            string answer;
            using (var web = new WebClient())
            {
                web.Headers[HttpRequestHeader.Authorization] = "Bearer " + RealServer.ApiKey;
                web.Headers[HttpRequestHeader.ContentType] = "application/json";
                answer = web.UploadString(_server.WsUrl.Replace("ws://", "http://").Replace("/v1/ws", "/v1/kick"),
                    "{\"user\":\"dave\",\"ch\":\"" + name + "\",\"reason\":\"spamming links\"}");
            }
            StringAssert.Contains("\"kicked\":1", answer);
            Until(() => kicks.Count == 1, "the kicked frame");
            Assert.AreEqual(name, kicks[0].Channel);
            Assert.AreEqual("spamming links", kicks[0].Reason);
            Assert.IsFalse(d.IsJoined);
            Assert.AreEqual("forbidden", CodeOf(d.Publish(JsonValue.Object().Set("t", 1)), "a publish after the kick"));
        }
    }
}
