// The hand-written JSON reader and writer: exact round trips, escapes, numbers,
// and hostile input (malformed, truncated, deeply nested, random bytes) that
// must fail with FormatException and nothing else.
using System;
using System.Text;
using NUnit.Framework;
using Parley;

namespace Parley.Tests
{
    [TestFixture]
    public class JsonTests
    {
        [TestCase("{\"op\":\"msg\",\"seq\":57,\"body\":{\"a\":[1,2.5,-3e2,true,false,null]}}")]
        [TestCase("[]")]
        [TestCase("{}")]
        [TestCase("\"\"")]
        [TestCase("-0.125")]
        [TestCase("9007199254740993")]
        [TestCase("{\"s\":\"tab\\tquote\\\"back\\\\nl\\nctl\\u0001\"}")]
        public void RoundTripsCompactJson(string text)
        {
            var v = JsonValue.Parse(text);
            var again = JsonValue.Parse(v.ToString());
            Assert.AreEqual(v, again);
        }

        [Test]
        public void ReadsFieldsAndNumbersExactly()
        {
            var v = JsonValue.Parse(" { \"seq\" : 9007199254740993 , \"x\":1.5e3, \"neg\":-42, \"big\":1e400 } ".Replace("1e400", "2"));
            long seq;
            Assert.IsTrue(v.TryGetLong("seq", out seq));
            Assert.AreEqual(9007199254740993L, seq);
            Assert.IsFalse(v["x"].IsInteger);
            Assert.AreEqual(1500.0, v["x"].AsDouble);
            Assert.AreEqual(-42, v["neg"].AsDouble);
            Assert.IsNull(v["missing"]);
            Assert.AreEqual("9007199254740993", v["seq"].ToString());
        }

        [Test]
        public void DecodesEscapesAndSurrogatePairs()
        {
            var v = JsonValue.Parse("\"a\\u00e9\\ud83d\\ude00\\/\"");
            Assert.AreEqual("a\u00e9\U0001F600/", v.AsString);
            var raw = JsonValue.Parse("\"h\u00e9llo \U0001F600\"");
            Assert.AreEqual("h\u00e9llo \U0001F600", raw.AsString);
        }

        [Test]
        public void WritesLoneSurrogatesAndControlsAsEscapes()
        {
            var s = JsonValue.From("x\ud800y\u0002").ToString();
            Assert.AreEqual("\"x\\ud800y\\u0002\"", s);
            Assert.AreEqual("x\ud800y\u0002", JsonValue.Parse(s).AsString);
        }

        [Test]
        public void LastDuplicateKeyWins()
        {
            Assert.AreEqual(2, JsonValue.Parse("{\"a\":1,\"a\":2}")["a"].AsDouble);
            var big = new StringBuilder("{");
            for (int i = 0; i < 20; i++) big.Append("\"k").Append(i).Append("\":").Append(i).Append(',');
            big.Append("\"k3\":99}");
            Assert.AreEqual(99, JsonValue.Parse(big.ToString())["k3"].AsDouble);
        }

        [Test]
        public void BuildsObjectsWithSetAndImplicitConversions()
        {
            var v = JsonValue.Object().Set("s", "x").Set("n", 3).Set("d", 0.5).Set("b", true).Set("z", null)
                .Set("a", JsonValue.Array(1, "two"));
            Assert.AreEqual("{\"s\":\"x\",\"n\":3,\"d\":0.5,\"b\":true,\"z\":null,\"a\":[1,\"two\"]}", v.ToString());
            v.Set("n", 4);
            Assert.AreEqual(4, v["n"].AsDouble);
            Assert.Throws<ArgumentException>(() => JsonValue.From(double.NaN));
        }

        [TestCase("")]
        [TestCase("{")]
        [TestCase("{\"a\"}")]
        [TestCase("{\"a\":1,}")]
        [TestCase("[1,]")]
        [TestCase("01")]
        [TestCase("1.")]
        [TestCase("-")]
        [TestCase("1e")]
        [TestCase("tru")]
        [TestCase("nul")]
        [TestCase("\"abc")]
        [TestCase("\"\\x\"")]
        [TestCase("\"\\u12\"")]
        [TestCase("\"a\u0001b\"")]
        [TestCase("{} {}")]
        [TestCase("1e999")]
        [TestCase("NaN")]
        public void RejectsMalformedInput(string text)
        {
            Assert.Throws<FormatException>(() => JsonValue.Parse(text));
        }

        [Test]
        public void BoundsNesting()
        {
            Assert.DoesNotThrow(() => JsonValue.Parse(new string('[', 100) + new string(']', 100)));
            Assert.Throws<FormatException>(() => JsonValue.Parse(new string('[', 100000)));
            Assert.Throws<FormatException>(() => JsonValue.Parse(new string('[', 200) + new string(']', 200)));
        }

        [Test]
        public void RandomAndMutatedBytesFailOnlyWithFormatException()
        {
            var r = new Random(1234);
            var seed = Encoding.UTF8.GetBytes("[{\"op\":\"msg\",\"ch\":\"chat:a\",\"seq\":5,\"body\":{\"t\":\"h\\u00e9\",\"n\":[1.5,-2e3,true,null]}}]");
            for (int i = 0; i < 20000; i++)
            {
                byte[] b;
                if (i % 2 == 0)
                {
                    b = (byte[])seed.Clone();
                    int edits = 1 + r.Next(4);
                    for (int e = 0; e < edits; e++) b[r.Next(b.Length)] = (byte)r.Next(256);
                    if (r.Next(4) == 0) Array.Resize(ref b, r.Next(b.Length));
                }
                else
                {
                    b = new byte[r.Next(64)];
                    r.NextBytes(b);
                }
                try
                {
                    JsonReader.Parse(b, 0, b.Length);
                }
                catch (FormatException)
                {
                    // expected for most inputs
                }
            }
        }

        [Test]
        public void NeverReadsPastTheGivenCount()
        {
            var b = Encoding.UTF8.GetBytes("{\"a\":1}garbage");
            Assert.AreEqual(1, JsonReader.Parse(b, 0, 7)["a"].AsDouble);
            Assert.Throws<FormatException>(() => JsonReader.Parse(b, 0, 6));
        }
    }
}
