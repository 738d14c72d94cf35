// Writes JsonValue as compact UTF-8 JSON. Hand-written for the reason JsonValue
// gives. Strings are escaped so that any .NET string (even a lone surrogate)
// becomes valid JSON text.
//
// One instance per thread (it keeps a buffer); the static helpers are safe anywhere.
using System;
using System.Text;

namespace Parley
{
    /// <summary>A compact JSON writer.</summary>
    public sealed class JsonWriter
    {
        private static readonly UTF8Encoding Utf8 = new UTF8Encoding(false, false);
        private const string HexDigits = "0123456789abcdef";
        private readonly StringBuilder _sb = new StringBuilder(256);

        /// <summary>The JSON text of <paramref name="v"/>.</summary>
        public static string ToJson(JsonValue v)
        {
            var w = new JsonWriter();
            w.Write(v);
            return w._sb.ToString();
        }

        /// <summary>The UTF-8 JSON of <paramref name="v"/>.</summary>
        public static byte[] ToUtf8(JsonValue v)
        {
            return Utf8.GetBytes(ToJson(v));
        }

        private void Write(JsonValue v)
        {
            switch (v.Type)
            {
                case JsonType.Null: _sb.Append("null"); break;
                case JsonType.Bool: _sb.Append(v.AsBool ? "true" : "false"); break;
                case JsonType.Number: _sb.Append(v.NumberText()); break;
                case JsonType.String: WriteString(v.AsString); break;
                case JsonType.Array:
                    _sb.Append('[');
                    for (int i = 0; i < v.Count; i++)
                    {
                        if (i > 0) _sb.Append(',');
                        Write(v.Items[i]);
                    }
                    _sb.Append(']');
                    break;
                default:
                    _sb.Append('{');
                    bool first = true;
                    foreach (var kv in v.Members)
                    {
                        if (!first) _sb.Append(',');
                        first = false;
                        WriteString(kv.Key);
                        _sb.Append(':');
                        Write(kv.Value);
                    }
                    _sb.Append('}');
                    break;
            }
        }

        private void WriteString(string s)
        {
            _sb.Append('"');
            for (int i = 0; i < s.Length; i++)
            {
                char c = s[i];
                switch (c)
                {
                    case '"': _sb.Append("\\\""); break;
                    case '\\': _sb.Append("\\\\"); break;
                    case '\n': _sb.Append("\\n"); break;
                    case '\r': _sb.Append("\\r"); break;
                    case '\t': _sb.Append("\\t"); break;
                    default:
                        bool lone = char.IsSurrogate(c) &&
                            !(char.IsHighSurrogate(c) && i + 1 < s.Length && char.IsLowSurrogate(s[i + 1])) &&
                            !(char.IsLowSurrogate(c) && i > 0 && char.IsHighSurrogate(s[i - 1]));
                        if (c < 0x20 || lone)
                        {
                            _sb.Append("\\u");
                            _sb.Append(HexDigits[(c >> 12) & 15]).Append(HexDigits[(c >> 8) & 15])
                               .Append(HexDigits[(c >> 4) & 15]).Append(HexDigits[c & 15]);
                        }
                        else _sb.Append(c);
                        break;
                }
            }
            _sb.Append('"');
        }
    }
}
