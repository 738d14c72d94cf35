// MessageLog: the client's rule of PROTOCOL.md "Moderation" applied to entries
// fed live or from history pages in any order; a delete is final.
using NUnit.Framework;
using Parley;

namespace Parley.Tests
{
    [TestFixture]
    public class MessageLogTests
    {
        private static Message M(string json) { return Message.FromFrame(JsonValue.Parse(json)); }

        private static readonly Message M1 = M("{\"op\":\"msg\",\"ch\":\"c\",\"seq\":1,\"from\":\"u1\",\"ts\":10,\"body\":{\"t\":\"tpyo\"}}");
        private static readonly Message M2 = M("{\"op\":\"msg\",\"ch\":\"c\",\"seq\":2,\"from\":\"u1\",\"ts\":11,\"body\":{\"t\":\"oops\"}}");
        private static readonly Message E = M("{\"op\":\"edit\",\"ch\":\"c\",\"seq\":3,\"target\":1,\"from\":\"u1\",\"ts\":60,\"body\":{\"t\":\"fixed\"}}");
        private static readonly Message D = M("{\"op\":\"delete\",\"ch\":\"c\",\"seq\":4,\"target\":2,\"from\":\"u1\",\"ts\":61}");
        private static readonly Message C1 = M("{\"op\":\"msg\",\"ch\":\"c\",\"seq\":1,\"from\":\"u1\",\"ts\":10,\"edited\":60,\"body\":{\"t\":\"fixed\"}}");
        private static readonly Message C2 = M("{\"op\":\"msg\",\"ch\":\"c\",\"seq\":2,\"from\":\"u1\",\"ts\":11,\"deleted\":true}");

        private static void ExpectCurrent(MessageLog log)
        {
            Assert.AreEqual(2, log.Count);
            var ms = log.Messages();
            Assert.AreEqual("{\"t\":\"fixed\"}", ms[0].Body.ToString());
            Assert.AreEqual(60, ms[0].Edited);
            Assert.IsTrue(ms[1].Deleted);
            Assert.AreEqual(JsonType.Null, ms[1].Body.Type);
        }

        [Test]
        public void AppliesEditsAndDeletesLiveAndFromHistoryAlike()
        {
            var live = new MessageLog();
            live.ApplyAll(new[] { M1, M2, E, D });
            ExpectCurrent(live);
            var paged = new MessageLog();
            paged.ApplyAll(new[] { C1, C2, E, D });
            ExpectCurrent(paged);
            paged.ApplyAll(new[] { D, E, M1, M2, C2, C1 });
            ExpectCurrent(paged);
            live.ApplyAll(new[] { M1, M2 });
            ExpectCurrent(live);
            Assert.AreEqual("{\"t\":\"tpyo\"}", M1.Body.ToString(), "the entries fed in are not changed");
        }

        [Test]
        public void ADeleteIsFinalAndEntriesForUnheldMessagesChangeNothing()
        {
            var log = new MessageLog();
            log.Apply(M1);
            Assert.IsNull(log.Apply(M("{\"op\":\"edit\",\"ch\":\"c\",\"seq\":5,\"target\":9,\"ts\":1,\"body\":1}")));
            Assert.IsNotNull(log.Apply(M("{\"op\":\"delete\",\"ch\":\"c\",\"seq\":6,\"target\":1,\"ts\":2}")));
            Assert.IsNull(log.Apply(M("{\"op\":\"edit\",\"ch\":\"c\",\"seq\":7,\"target\":1,\"ts\":3,\"body\":2}")),
                "an edit after a delete (two game servers racing)");
            Assert.IsTrue(log.Get(1).Deleted);
            Assert.IsNull(log.Get(9));
        }

        [Test]
        public void KeepsTheNewestSeqsUpToItsMax()
        {
            var log = new MessageLog(2);
            for (int s = 1; s <= 4; s++) log.Apply(M("{\"op\":\"msg\",\"ch\":\"c\",\"seq\":" + s + ",\"body\":" + s + "}"));
            Assert.AreEqual(2, log.Count);
            Assert.IsNull(log.Get(2));
            Assert.IsNotNull(log.Get(3));
            Assert.IsNull(log.Apply(M1), "older than what is kept");
            Assert.AreEqual(2, log.Count);
        }
    }
}
