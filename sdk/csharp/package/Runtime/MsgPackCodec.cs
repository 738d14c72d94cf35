// PROTOCOL.md "Binary encoding: MessagePack", read and written by hand over
// JsonValue. Written here, not taken from a library, because Debian has no
// MessagePack library for Mono/.NET (apt-cache search msgpack: C, C++, Go,
// Java, PHP, Python, Ruby, Lua only), the Unity package must build without
// downloading one (MessagePack-CSharp is a NuGet package with code
// generation and IL2CPP set-up of its own), and the subset Parley needs is
// small: nil, bool, int, float, str, bin, array, map.
//
// The reader is for hostile server input, bounded like the server's decoder
// (docs/protocol-notes.md): nesting at most 1,024 levels (a scalar counting as
// a level, checked before recursing), no declared count or length larger than
// the bytes left, map keys str only, str strict UTF-8, no ext, floats finite,
// `bin` only inside a `body`, where it becomes {"$bin": standard padded
// base64}, the value a JSON connection gets; one value and nothing after it.
// Every malformed input is a FormatException, never another exception.
// The writer turns a body's {"$bin": canonical base64} back into `bin`, so the
// application sees and sends the same bodies in either encoding.
//
// Stateless: safe on any thread (the reader keeps its cursor per call).
using System;
using System.Collections.Generic;
using System.IO;
using System.Text;

namespace Parley
{
    /// <summary>
    /// MessagePack frames (binary WebSocket messages, subprotocol
    /// <c>parley.v1.msgpack</c>; on TCP after a <c>hello</c> with <c>"enc":"msgpack"</c>).
    /// </summary>
    public sealed class MsgPackCodec : ICodec
    {
        /// <summary>The shared instance (the codec is stateless).</summary>
        public static readonly MsgPackCodec Instance = new MsgPackCodec();

        /// <summary>The WebSocket subprotocol that selects this encoding.</summary>
        public const string SubProtocol = "parley.v1.msgpack";

        /// <summary>Deepest nesting accepted (a scalar counts as a level), as the server's.</summary>
        public const int MaxDepth = 1024;

        private static readonly UTF8Encoding StrictUtf8 = new UTF8Encoding(false, true);

        /// <inheritdoc/>
        public string Name { get { return "msgpack"; } }

        /// <inheritdoc/>
        public bool Binary { get { return true; } }

        /// <inheritdoc/>
        public byte[] Encode(JsonValue frame)
        {
            if (frame == null || frame.Type != JsonType.Object) throw new ArgumentException("a frame is an object");
            var w = new MemoryStream(128);
            Write(w, frame, false, 0);
            return w.ToArray();
        }

        /// <inheritdoc/>
        public JsonValue Decode(byte[] bytes, int offset, int count)
        {
            if (bytes == null || offset < 0 || count < 0 || offset + count > bytes.Length)
                throw new FormatException("no frame");
            var r = new Reader(bytes, offset, offset + count);
            int head = r.Peek();
            bool isMap = (head & 0xf0) == 0x80 || head == 0xde || head == 0xdf;
            bool isArray = (head & 0xf0) == 0x90 || head == 0xdc || head == 0xdd;
            if (!isMap && !isArray) throw new FormatException("a frame is a map or an array of maps");
            var v = r.Value(1, false, isArray);
            if (r.Left != 0) throw new FormatException("bytes after the frame's value");
            return v;
        }

        // ---- the reader ----

        private struct Reader
        {
            private readonly byte[] _b;
            private readonly int _end;
            private int _p;

            public Reader(byte[] b, int p, int end) { _b = b; _p = p; _end = end; }

            public int Left { get { return _end - _p; } }

            public int Peek()
            {
                if (_p >= _end) throw new FormatException("empty frame");
                return _b[_p];
            }

            private byte Byte()
            {
                if (_p >= _end) throw new FormatException("truncated value");
                return _b[_p++];
            }

            private ulong Big(int n)
            {
                if (Left < n) throw new FormatException("truncated value");
                ulong v = 0;
                for (int k = 0; k < n; k++) v = (v << 8) | _b[_p++];
                return v;
            }

            // A declared count or length: never more than the bytes left (each
            // element takes at least one), checked before anything is allocated.
            private int Count(ulong n, int minBytesEach)
            {
                if (n > (ulong)Left / (ulong)minBytesEach) throw new FormatException("declared size past the frame's end");
                return (int)n;
            }

            // `batch`: the top-level array, whose elements must be maps.
            public JsonValue Value(int depth, bool body, bool batch)
            {
                if (depth > MaxDepth) throw new FormatException("values nest too deep");
                int h = Byte();
                if (h <= 0x7f) return JsonValue.RawNumber(h, h, true);
                if (h >= 0xe0) return JsonValue.RawNumber((sbyte)h, (sbyte)h, true);
                if ((h & 0xf0) == 0x80) return Map(Count((ulong)(h & 0x0f), 2), depth, body);
                if ((h & 0xf0) == 0x90) return Array(Count((ulong)(h & 0x0f), 1), depth, body, batch);
                if ((h & 0xe0) == 0xa0) return JsonValue.From(Str(h & 0x1f));
                switch (h)
                {
                    case 0xc0: return JsonValue.Null;
                    case 0xc2: return JsonValue.False;
                    case 0xc3: return JsonValue.True;
                    case 0xc4: return Bin((int)Big(1), body);
                    case 0xc5: return Bin((int)Big(2), body);
                    case 0xc6: return Bin(Count(Big(4), 1), body);
                    case 0xca:
                    {
                        var bits = (int)Big(4);
                        return Real(BitConverter.ToSingle(BitConverter.GetBytes(bits), 0));
                    }
                    case 0xcb: return Real(BitConverter.Int64BitsToDouble((long)Big(8)));
                    case 0xcc: return Int((long)Big(1));
                    case 0xcd: return Int((long)Big(2));
                    case 0xce: return Int((long)Big(4));
                    case 0xcf:
                    {
                        ulong u = Big(8);
                        // Above long's range: a JSON number without fraction the
                        // SDK's value type can only hold as a double.
                        return u <= long.MaxValue ? Int((long)u) : JsonValue.RawNumber(0, u, false);
                    }
                    case 0xd0: return Int((sbyte)Big(1));
                    case 0xd1: return Int((short)Big(2));
                    case 0xd2: return Int((int)Big(4));
                    case 0xd3: return Int((long)Big(8));
                    case 0xd9: return JsonValue.From(Str((int)Big(1)));
                    case 0xda: return JsonValue.From(Str((int)Big(2)));
                    case 0xdb: return JsonValue.From(Str(Count(Big(4), 1)));
                    case 0xdc: return Array(Count(Big(2), 1), depth, body, batch);
                    case 0xdd: return Array(Count(Big(4), 1), depth, body, batch);
                    case 0xde: return Map(Count(Big(2), 2), depth, body);
                    case 0xdf: return Map(Count(Big(4), 2), depth, body);
                    case 0xc1: throw new FormatException("the byte 0xc1 is never used");
                    default: throw new FormatException("ext values are not allowed");
                }
            }

            private static JsonValue Int(long n) { return JsonValue.RawNumber(n, n, true); }

            private static JsonValue Real(double d)
            {
                if (double.IsNaN(d) || double.IsInfinity(d)) throw new FormatException("floats must be finite");
                return JsonValue.RawNumber(0, d, false);
            }

            private string Str(int n)
            {
                if (n > Left) throw new FormatException("truncated string");
                string s;
                try
                {
                    s = StrictUtf8.GetString(_b, _p, n);
                }
                catch (ArgumentException)
                {
                    // DecoderFallbackException is an ArgumentException.
                    throw new FormatException("strings must be valid UTF-8");
                }
                _p += n;
                return s;
            }

            private JsonValue Bin(int n, bool body)
            {
                if (!body) throw new FormatException("bin is allowed only inside a body");
                if (n > Left) throw new FormatException("truncated bin");
                var s = Convert.ToBase64String(_b, _p, n);
                _p += n;
                return JsonValue.Object().Set("$bin", s);
            }

            private JsonValue Array(int n, int depth, bool body, bool batch)
            {
                var items = new List<JsonValue>(Math.Min(n, 1024));
                for (int i = 0; i < n; i++)
                {
                    if (batch)
                    {
                        int h = Peek();
                        if (!((h & 0xf0) == 0x80 || h == 0xde || h == 0xdf)) throw new FormatException("a batch holds maps only");
                    }
                    items.Add(Value(depth + 1, body, false));
                }
                return JsonValue.NewArray(items);
            }

            private JsonValue Map(int n, int depth, bool body)
            {
                var members = new List<KeyValuePair<string, JsonValue>>(Math.Min(n, 1024));
                for (int i = 0; i < n; i++)
                {
                    int h = Byte();
                    int len;
                    if ((h & 0xe0) == 0xa0) len = h & 0x1f;
                    else if (h == 0xd9) len = (int)Big(1);
                    else if (h == 0xda) len = (int)Big(2);
                    else if (h == 0xdb) len = Count(Big(4), 1);
                    else throw new FormatException("map keys must be strings");
                    string key = Str(len);
                    members.Add(new KeyValuePair<string, JsonValue>(key, Value(depth + 1, body || key == "body", false)));
                }
                return JsonValue.NewObject(members);
            }
        }

        // ---- the writer ----

        private static void Write(Stream w, JsonValue v, bool body, int depth)
        {
            if (depth >= MaxDepth) throw new ArgumentException("values nest too deep for MessagePack (1,024 levels)");
            if (v == null) { w.WriteByte(0xc0); return; }
            switch (v.Type)
            {
                case JsonType.Null: w.WriteByte(0xc0); return;
                case JsonType.Bool: w.WriteByte(v.AsBool ? (byte)0xc3 : (byte)0xc2); return;
                case JsonType.Number:
                    if (v.IsInteger) WriteInt(w, v.RawLong);
                    else
                    {
                        w.WriteByte(0xcb);
                        Big(w, (ulong)BitConverter.DoubleToInt64Bits(v.AsDouble), 8);
                    }
                    return;
                case JsonType.String: WriteStr(w, v.AsString); return;
                case JsonType.Array:
                    Head(w, v.Count, 0x90, 0xdc, 0xdd);
                    foreach (var e in v.Items) Write(w, e, body, depth + 1);
                    return;
                case JsonType.Object:
                {
                    byte[] raw;
                    if (body && Bin.TryRead(v, out raw))
                    {
                        if (raw.Length <= 0xff) { w.WriteByte(0xc4); Big(w, (ulong)raw.Length, 1); }
                        else if (raw.Length <= 0xffff) { w.WriteByte(0xc5); Big(w, (ulong)raw.Length, 2); }
                        else { w.WriteByte(0xc6); Big(w, (ulong)raw.Length, 4); }
                        w.Write(raw, 0, raw.Length);
                        return;
                    }
                    Head(w, v.Count, 0x80, 0xde, 0xdf);
                    foreach (var m in v.Members)
                    {
                        WriteStr(w, m.Key);
                        Write(w, m.Value, body || m.Key == "body", depth + 1);
                    }
                    return;
                }
            }
        }

        private static void Big(Stream w, ulong n, int bytes)
        {
            for (int k = bytes - 1; k >= 0; k--) w.WriteByte((byte)(n >> (8 * k)));
        }

        private static void WriteInt(Stream w, long n)
        {
            if (n >= 0)
            {
                if (n < 128) w.WriteByte((byte)n);
                else if (n <= 0xff) { w.WriteByte(0xcc); Big(w, (ulong)n, 1); }
                else if (n <= 0xffff) { w.WriteByte(0xcd); Big(w, (ulong)n, 2); }
                else if (n <= 0xffffffffL) { w.WriteByte(0xce); Big(w, (ulong)n, 4); }
                else { w.WriteByte(0xcf); Big(w, (ulong)n, 8); }
                return;
            }
            if (n >= -32) w.WriteByte((byte)(sbyte)n);
            else if (n >= sbyte.MinValue) { w.WriteByte(0xd0); Big(w, (ulong)n, 1); }
            else if (n >= short.MinValue) { w.WriteByte(0xd1); Big(w, (ulong)n, 2); }
            else if (n >= int.MinValue) { w.WriteByte(0xd2); Big(w, (ulong)n, 4); }
            else { w.WriteByte(0xd3); Big(w, (ulong)n, 8); }
        }

        private static void Head(Stream w, int n, byte fix, byte b16, byte b32)
        {
            if (n < 16) w.WriteByte((byte)(fix | n));
            else if (n <= 0xffff) { w.WriteByte(b16); Big(w, (ulong)n, 2); }
            else { w.WriteByte(b32); Big(w, (ulong)n, 4); }
        }

        private static void WriteStr(Stream w, string s)
        {
            // Invalid UTF-16 (a lone surrogate) becomes U+FFFD, as JsonWriter's does.
            var b = Encoding.UTF8.GetBytes(s);
            int n = b.Length;
            if (n < 32) w.WriteByte((byte)(0xa0 | n));
            else if (n <= 0xff) { w.WriteByte(0xd9); Big(w, (ulong)n, 1); }
            else if (n <= 0xffff) { w.WriteByte(0xda); Big(w, (ulong)n, 2); }
            else { w.WriteByte(0xdb); Big(w, (ulong)n, 4); }
            w.Write(b, 0, n);
        }
    }

    /// <summary>
    /// Binary values in bodies: {"$bin": standard padded base64}, what a JSON
    /// connection receives for a MessagePack <c>bin</c> and what goes out as
    /// <c>bin</c> on a MessagePack one (PROTOCOL.md's <c>$bin</c> rule).
    /// </summary>
    public static class Bin
    {
        /// <summary>{"$bin": base64 of <paramref name="bytes"/>}.</summary>
        public static JsonValue Of(byte[] bytes)
        {
            if (bytes == null) throw new ArgumentNullException("bytes");
            return JsonValue.Object().Set("$bin", Convert.ToBase64String(bytes));
        }

        /// <summary>The bytes of a {"$bin": canonical base64} value; false for anything else.</summary>
        public static bool TryRead(JsonValue v, out byte[] bytes)
        {
            bytes = null;
            if (v == null || v.Type != JsonType.Object || v.Count != 1) return false;
            var s = v["$bin"];
            if (s == null || s.Type != JsonType.String) return false;
            var text = s.AsString;
            if (text.Length % 4 != 0) return false;
            foreach (char c in text)
                if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '='))
                    return false;
            byte[] b;
            try
            {
                b = Convert.FromBase64String(text);
            }
            catch (FormatException)
            {
                return false;
            }
            // Canonical: the bytes give back the same text (no stray bits under
            // the padding, padding only at the end).
            if (Convert.ToBase64String(b) != text) return false;
            bytes = b;
            return true;
        }
    }
}
