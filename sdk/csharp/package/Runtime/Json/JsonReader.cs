// Parses UTF-8 JSON (RFC 8259) into JsonValue. Written by hand for the reason
// JsonValue gives; it reads the bytes the socket delivered without first
// making a string of the whole frame. Server frames are hostile input: nesting
// is bounded, every malformed input is a FormatException (never another
// exception, never a hang), and nothing is read past the given count.
//
// Stateless apart from one parse's cursor: safe on any thread, one parse per
// instance at a time.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Parley
{
    /// <summary>A strict JSON parser over UTF-8 bytes.</summary>
    public sealed class JsonReader
    {
        /// <summary>Deepest nesting of arrays and objects accepted.</summary>
        public const int MaxDepth = 128;

        private static readonly UTF8Encoding Utf8 = new UTF8Encoding(false, false);

        private readonly byte[] _b;
        private readonly int _end;
        private int _p;
        private int _depth;
        private StringBuilder _sb;

        private JsonReader(byte[] b, int offset, int count)
        {
            _b = b;
            _p = offset;
            _end = offset + count;
        }

        /// <summary>Parses JSON text.</summary>
        public static JsonValue Parse(string text)
        {
            if (text == null) throw new ArgumentNullException("text");
            var b = Utf8.GetBytes(text);
            return Parse(b, 0, b.Length);
        }

        /// <summary>Parses <paramref name="count"/> bytes of UTF-8 JSON at <paramref name="offset"/>.</summary>
        public static JsonValue Parse(byte[] bytes, int offset, int count)
        {
            if (bytes == null) throw new ArgumentNullException("bytes");
            if (offset < 0 || count < 0 || offset + count > bytes.Length) throw new ArgumentOutOfRangeException("count");
            var r = new JsonReader(bytes, offset, count);
            r.SkipSpace();
            var v = r.ReadValue();
            r.SkipSpace();
            if (r._p != r._end) throw r.Fail("trailing data");
            return v;
        }

        private FormatException Fail(string what)
        {
            return new FormatException("bad JSON at byte " + _p + ": " + what);
        }

        private void SkipSpace()
        {
            while (_p < _end)
            {
                byte c = _b[_p];
                if (c == ' ' || c == '\n' || c == '\r' || c == '\t') _p++;
                else break;
            }
        }

        private JsonValue ReadValue()
        {
            if (_p >= _end) throw Fail("unexpected end");
            byte c = _b[_p];
            switch (c)
            {
                case (byte)'{': return ReadObject();
                case (byte)'[': return ReadArray();
                case (byte)'"': return JsonValue.From(ReadString());
                case (byte)'t': Literal("true"); return JsonValue.True;
                case (byte)'f': Literal("false"); return JsonValue.False;
                case (byte)'n': Literal("null"); return JsonValue.Null;
                default:
                    if (c == '-' || (c >= '0' && c <= '9')) return ReadNumber();
                    throw Fail("unexpected character");
            }
        }

        private void Literal(string word)
        {
            if (_end - _p < word.Length) throw Fail("unexpected end");
            for (int i = 0; i < word.Length; i++)
                if (_b[_p + i] != word[i]) throw Fail("bad literal");
            _p += word.Length;
        }

        private void Enter()
        {
            if (++_depth > MaxDepth) throw Fail("nested too deeply");
        }

        private JsonValue ReadObject()
        {
            Enter();
            _p++; // {
            var members = new List<KeyValuePair<string, JsonValue>>(8); // a msg frame has 7
            SkipSpace();
            if (_p < _end && _b[_p] == '}') { _p++; _depth--; return JsonValue.NewObject(members); }
            for (;;)
            {
                SkipSpace();
                if (_p >= _end || _b[_p] != '"') throw Fail("expected a member name");
                string key = ReadKey();
                SkipSpace();
                if (_p >= _end || _b[_p] != ':') throw Fail("expected ':'");
                _p++;
                SkipSpace();
                members.Add(new KeyValuePair<string, JsonValue>(key, ReadValue()));
                SkipSpace();
                if (_p >= _end) throw Fail("unexpected end");
                if (_b[_p] == ',') { _p++; continue; }
                if (_b[_p] == '}') { _p++; break; }
                throw Fail("expected ',' or '}'");
            }
            _depth--;
            return JsonValue.NewObject(members);
        }

        private JsonValue ReadArray()
        {
            Enter();
            _p++; // [
            var items = new List<JsonValue>();
            SkipSpace();
            if (_p < _end && _b[_p] == ']') { _p++; _depth--; return JsonValue.NewArray(items); }
            for (;;)
            {
                SkipSpace();
                items.Add(ReadValue());
                SkipSpace();
                if (_p >= _end) throw Fail("unexpected end");
                if (_b[_p] == ',') { _p++; continue; }
                if (_b[_p] == ']') { _p++; break; }
                throw Fail("expected ',' or ']'");
            }
            _depth--;
            return JsonValue.NewArray(items);
        }

        private JsonValue ReadNumber()
        {
            int start = _p;
            bool integer = true;
            if (_b[_p] == '-') _p++;
            if (_p >= _end) throw Fail("bad number");
            if (_b[_p] == '0') _p++;
            else if (_b[_p] >= '1' && _b[_p] <= '9') { while (_p < _end && IsDigit(_b[_p])) _p++; }
            else throw Fail("bad number");
            if (_p < _end && _b[_p] == '.')
            {
                integer = false;
                _p++;
                if (_p >= _end || !IsDigit(_b[_p])) throw Fail("bad fraction");
                while (_p < _end && IsDigit(_b[_p])) _p++;
            }
            if (_p < _end && (_b[_p] == 'e' || _b[_p] == 'E'))
            {
                integer = false;
                _p++;
                if (_p < _end && (_b[_p] == '+' || _b[_p] == '-')) _p++;
                if (_p >= _end || !IsDigit(_b[_p])) throw Fail("bad exponent");
                while (_p < _end && IsDigit(_b[_p])) _p++;
            }
            int len = _p - start;
            if (integer && len <= 18)
            {
                // Fast path: at most 18 digits always fit in a long.
                long n = 0;
                int i = start;
                bool neg = _b[i] == '-';
                if (neg) i++;
                for (; i < _p; i++) n = n * 10 + (_b[i] - '0');
                if (neg) n = -n;
                return JsonValue.RawNumber(n, n, true);
            }
            string text = Encoding.ASCII.GetString(_b, start, len);
            if (integer)
            {
                long n;
                if (long.TryParse(text, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out n))
                    return JsonValue.RawNumber(n, n, true);
            }
            double d;
            if (!double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out d)
                || double.IsInfinity(d) || double.IsNaN(d))
                throw Fail("number out of range");
            return JsonValue.RawNumber(0, d, false);
        }

        private static bool IsDigit(byte c) { return c >= '0' && c <= '9'; }

        // Member names of the protocol's frames, so a frame's keys cost no allocation.
        private static readonly string[] KnownKeys =
        {
            "op", "ch", "seq", "from", "id", "ts", "body", "rid", "code", "msg", "key", "pos", "join", "leave",
            "members", "recovered", "epoch", "dup", "retry_ms", "reconnect_ms", "conn", "user", "tenant",
            "heartbeat_ms", "msgs", "i", "tag", "pad", "type", "text", "x", "y", "z",
        };
        private static readonly byte[][] KnownKeyBytes = EncodeKeys();

        private static byte[][] EncodeKeys()
        {
            var b = new byte[KnownKeys.Length][];
            for (int i = 0; i < b.Length; i++) b[i] = Encoding.ASCII.GetBytes(KnownKeys[i]);
            return b;
        }

        private string ReadKey()
        {
            int start = _p + 1;
            int q = start;
            while (q < _end && q - start <= 12 && _b[q] != '"' && _b[q] != '\\') q++;
            if (q < _end && _b[q] == '"')
            {
                int len = q - start;
                for (int k = 0; k < KnownKeyBytes.Length; k++)
                {
                    var kb = KnownKeyBytes[k];
                    if (kb.Length != len) continue;
                    int j = 0;
                    while (j < len && kb[j] == _b[start + j]) j++;
                    if (j == len)
                    {
                        _p = q + 1;
                        return KnownKeys[k];
                    }
                }
            }
            return ReadString();
        }

        private string ReadString()
        {
            _p++; // opening quote
            int start = _p;
            // Fast path: no escapes, so the bytes are the string's UTF-8. Locals,
            // not fields, in the loop: Mono's JIT keeps them in registers.
            var b = _b;
            int p = _p, end = _end;
            while (p < end)
            {
                byte c = b[p];
                if (c == '"')
                {
                    _p = p + 1;
                    return Utf8.GetString(b, start, p - start);
                }
                if (c == '\\' || c < 0x20) break;
                p++;
            }
            _p = p;
            if (_p < _end && _b[_p] < 0x20) throw Fail("control character in string");
            if (_p >= _end) throw Fail("unterminated string");
            if (_sb == null) _sb = new StringBuilder();
            _sb.Length = 0;
            _sb.Append(Utf8.GetString(_b, start, _p - start));
            for (;;)
            {
                if (_p >= _end) throw Fail("unterminated string");
                byte c = _b[_p];
                if (c == '"') { _p++; return _sb.ToString(); }
                if (c < 0x20) throw Fail("control character in string");
                if (c != '\\')
                {
                    int run = _p;
                    while (_p < _end && _b[_p] != '"' && _b[_p] != '\\' && _b[_p] >= 0x20) _p++;
                    _sb.Append(Utf8.GetString(_b, run, _p - run));
                    continue;
                }
                _p++;
                if (_p >= _end) throw Fail("unterminated escape");
                byte e = _b[_p++];
                switch (e)
                {
                    case (byte)'"': _sb.Append('"'); break;
                    case (byte)'\\': _sb.Append('\\'); break;
                    case (byte)'/': _sb.Append('/'); break;
                    case (byte)'b': _sb.Append('\b'); break;
                    case (byte)'f': _sb.Append('\f'); break;
                    case (byte)'n': _sb.Append('\n'); break;
                    case (byte)'r': _sb.Append('\r'); break;
                    case (byte)'t': _sb.Append('\t'); break;
                    case (byte)'u': _sb.Append((char)Hex4()); break;
                    default: throw Fail("bad escape");
                }
            }
        }

        private int Hex4()
        {
            if (_end - _p < 4) throw Fail("short \\u escape");
            int v = 0;
            for (int i = 0; i < 4; i++)
            {
                byte c = _b[_p++];
                int d = c >= '0' && c <= '9' ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
                if (d < 0) throw Fail("bad \\u escape");
                v = v * 16 + d;
            }
            return v;
        }
    }
}
