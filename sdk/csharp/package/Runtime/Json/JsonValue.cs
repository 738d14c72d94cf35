// A JSON value: what a frame, a message body or a state body is. The SDK's own
// small DOM, because .NET Standard 2.0 has no JSON DOM of its own
// (System.Text.Json is a separate package, DataContractJsonSerializer needs a
// contract type per shape, and a body is "any JSON"), and a Unity package must
// build without downloading one.
//
// Immutable once built by the reader; a value the application builds may be
// changed until it is handed to the SDK. Safe to read from any thread.
using System;
using System.Collections.Generic;
using System.Globalization;

namespace Parley
{
    /// <summary>The kind of a <see cref="JsonValue"/>.</summary>
    public enum JsonType
    {
        /// <summary>null</summary>
        Null,
        /// <summary>true or false</summary>
        Bool,
        /// <summary>a number</summary>
        Number,
        /// <summary>a string</summary>
        String,
        /// <summary>an array</summary>
        Array,
        /// <summary>an object</summary>
        Object,
    }

    /// <summary>
    /// A JSON value (null, bool, number, string, array or object). Build one with
    /// <see cref="Object"/>, <see cref="Array"/> and the implicit conversions from
    /// string, bool and numbers; read one with the indexers and the As* accessors.
    /// </summary>
    public sealed class JsonValue
    {
        /// <summary>JSON null.</summary>
        public static readonly JsonValue Null = new JsonValue(JsonType.Null);
        /// <summary>JSON true.</summary>
        public static readonly JsonValue True = new JsonValue(JsonType.Bool) { _bool = true };
        /// <summary>JSON false.</summary>
        public static readonly JsonValue False = new JsonValue(JsonType.Bool);

        // Objects with more members than this get a dictionary for lookups.
        private const int IndexThreshold = 8;

        private bool _bool;
        private bool _isInteger;
        private long _long;
        private double _double;
        private string _string;
        private List<JsonValue> _items;
        private List<KeyValuePair<string, JsonValue>> _members;
        private Dictionary<string, int> _index;

        private JsonValue(JsonType type) { Type = type; }

        /// <summary>Which kind of value this is.</summary>
        public JsonType Type { get; private set; }

        /// <summary>A new, empty JSON object.</summary>
        public static JsonValue Object()
        {
            return new JsonValue(JsonType.Object) { _members = new List<KeyValuePair<string, JsonValue>>() };
        }

        /// <summary>A new JSON array holding <paramref name="items"/>.</summary>
        public static JsonValue Array(params JsonValue[] items)
        {
            var v = new JsonValue(JsonType.Array) { _items = new List<JsonValue>(items ?? new JsonValue[0]) };
            for (int i = 0; i < v._items.Count; i++) if (v._items[i] == null) v._items[i] = Null;
            return v;
        }

        /// <summary>A JSON string.</summary>
        public static JsonValue From(string s)
        {
            if (s == null) return Null;
            return new JsonValue(JsonType.String) { _string = s };
        }

        /// <summary>A JSON integer.</summary>
        public static JsonValue From(long n)
        {
            return new JsonValue(JsonType.Number) { _isInteger = true, _long = n, _double = n };
        }

        /// <summary>A JSON number; NaN and infinities have no JSON form and throw.</summary>
        public static JsonValue From(double d)
        {
            if (double.IsNaN(d) || double.IsInfinity(d)) throw new ArgumentException("JSON has no NaN or infinity");
            if (Math.Floor(d) == d && Math.Abs(d) < 9.2e18) return From((long)d);
            return new JsonValue(JsonType.Number) { _double = d };
        }

        /// <summary>JSON true or false.</summary>
        public static JsonValue From(bool b) { return b ? True : False; }

        internal static JsonValue RawNumber(long n, double d, bool isInteger)
        {
            return new JsonValue(JsonType.Number) { _isInteger = isInteger, _long = n, _double = d };
        }

        internal static JsonValue NewObject(List<KeyValuePair<string, JsonValue>> members)
        {
            var v = new JsonValue(JsonType.Object) { _members = members };
            if (members.Count > IndexThreshold) v.BuildIndex();
            return v;
        }

        internal static JsonValue NewArray(List<JsonValue> items)
        {
            return new JsonValue(JsonType.Array) { _items = items };
        }

#pragma warning disable 1591 // the conversions say what they do
        public static implicit operator JsonValue(string s) { return From(s); }
        public static implicit operator JsonValue(long n) { return From(n); }
        public static implicit operator JsonValue(int n) { return From((long)n); }
        public static implicit operator JsonValue(double d) { return From(d); }
        public static implicit operator JsonValue(bool b) { return From(b); }
#pragma warning restore 1591

        /// <summary>Parses JSON text; throws <see cref="FormatException"/> on anything else.</summary>
        public static JsonValue Parse(string text)
        {
            return JsonReader.Parse(text);
        }

        /// <summary>The compact JSON text of this value.</summary>
        public override string ToString()
        {
            return JsonWriter.ToJson(this);
        }

        // ---- objects ----

        /// <summary>Sets member <paramref name="key"/> of an object (replacing it) and returns the object.</summary>
        public JsonValue Set(string key, JsonValue value)
        {
            RequireType(JsonType.Object);
            if (key == null) throw new ArgumentNullException("key");
            value = value ?? Null;
            int at = IndexOf(key);
            if (at >= 0) { _members[at] = new KeyValuePair<string, JsonValue>(key, value); return this; }
            _members.Add(new KeyValuePair<string, JsonValue>(key, value));
            if (_index != null) _index[key] = _members.Count - 1;
            else if (_members.Count > IndexThreshold) BuildIndex();
            return this;
        }

        /// <summary>Member <paramref name="key"/> of an object; null when absent or when this is not an object.</summary>
        public JsonValue this[string key]
        {
            get
            {
                if (Type != JsonType.Object) return null;
                int at = IndexOf(key);
                return at >= 0 ? _members[at].Value : null;
            }
        }

        /// <summary>True when this is an object with member <paramref name="key"/>.</summary>
        public bool Has(string key) { return this[key] != null; }

        /// <summary>An object's members in order (empty for other kinds).</summary>
        public IEnumerable<KeyValuePair<string, JsonValue>> Members
        {
            get { return _members ?? (IEnumerable<KeyValuePair<string, JsonValue>>)new KeyValuePair<string, JsonValue>[0]; }
        }

        /// <summary>A copy of this object with its members (shallow); used to add a field before sending.</summary>
        public JsonValue ShallowCopy()
        {
            RequireType(JsonType.Object);
            return NewObject(new List<KeyValuePair<string, JsonValue>>(_members));
        }

        // A copy that shares nothing changeable with this value (scalars cannot
        // be changed, so they are shared): what the SDK keeps while handing the
        // original to the application. Depth is bounded by the readers.
        internal JsonValue DeepCopy()
        {
            switch (Type)
            {
                case JsonType.Array:
                {
                    var items = new List<JsonValue>(_items.Count);
                    foreach (var v in _items) items.Add(v.DeepCopy());
                    return NewArray(items);
                }
                case JsonType.Object:
                {
                    var members = new List<KeyValuePair<string, JsonValue>>(_members.Count);
                    foreach (var kv in _members) members.Add(new KeyValuePair<string, JsonValue>(kv.Key, kv.Value.DeepCopy()));
                    return NewObject(members);
                }
                default:
                    return this;
            }
        }

        // ---- arrays ----

        /// <summary>Appends to an array and returns the array.</summary>
        public JsonValue Add(JsonValue item)
        {
            RequireType(JsonType.Array);
            _items.Add(item ?? Null);
            return this;
        }

        /// <summary>Element <paramref name="i"/> of an array; null when out of range or not an array.</summary>
        public JsonValue this[int i]
        {
            get { return Type == JsonType.Array && i >= 0 && i < _items.Count ? _items[i] : null; }
        }

        /// <summary>An array's elements (empty for other kinds).</summary>
        public IList<JsonValue> Items
        {
            get { return _items ?? (IList<JsonValue>)new JsonValue[0]; }
        }

        /// <summary>Elements of an array or members of an object; 0 otherwise.</summary>
        public int Count
        {
            get { return _items != null ? _items.Count : _members != null ? _members.Count : 0; }
        }

        // ---- scalars ----

        /// <summary>True for a number without fraction or exponent that fits in a long.</summary>
        public bool IsInteger { get { return Type == JsonType.Number && _isInteger; } }

        /// <summary>The string, or null when this is not a string.</summary>
        public string AsString { get { return Type == JsonType.String ? _string : null; } }

        /// <summary>The boolean; false when this is not a bool.</summary>
        public bool AsBool { get { return Type == JsonType.Bool && _bool; } }

        /// <summary>The number as a double; 0 when this is not a number.</summary>
        public double AsDouble { get { return Type == JsonType.Number ? _double : 0; } }

        /// <summary>The integer, when this is an integral number.</summary>
        public bool TryGetLong(out long value)
        {
            value = _long;
            return IsInteger;
        }

        /// <summary>The integer member <paramref name="key"/>, when present and integral.</summary>
        public bool TryGetLong(string key, out long value)
        {
            var v = this[key];
            if (v != null && v.IsInteger) { value = v._long; return true; }
            value = 0;
            return false;
        }

        /// <summary>The string member <paramref name="key"/>, or null.</summary>
        public string GetString(string key)
        {
            var v = this[key];
            return v == null ? null : v.AsString;
        }

        internal long RawLong { get { return _long; } }

        /// <summary>Structural equality (numbers compare by value, object members by key).</summary>
        public override bool Equals(object obj)
        {
            var o = obj as JsonValue;
            if (o == null || o.Type != Type) return false;
            switch (Type)
            {
                case JsonType.Null: return true;
                case JsonType.Bool: return _bool == o._bool;
                case JsonType.Number: return _isInteger && o._isInteger ? _long == o._long : _double == o._double;
                case JsonType.String: return _string == o._string;
                case JsonType.Array:
                    if (_items.Count != o._items.Count) return false;
                    for (int i = 0; i < _items.Count; i++) if (!_items[i].Equals(o._items[i])) return false;
                    return true;
                default:
                    if (_members.Count != o._members.Count) return false;
                    foreach (var kv in _members)
                    {
                        var other = o[kv.Key];
                        if (other == null || !kv.Value.Equals(other)) return false;
                    }
                    return true;
            }
        }

        /// <summary>A hash consistent with <see cref="Equals(object)"/>.</summary>
        public override int GetHashCode()
        {
            switch (Type)
            {
                case JsonType.Bool: return _bool ? 1 : 2;
                case JsonType.Number: return _double.GetHashCode();
                case JsonType.String: return _string.GetHashCode();
                default: return (int)Type * 31 + Count;
            }
        }

        internal string NumberText()
        {
            return _isInteger ? _long.ToString(CultureInfo.InvariantCulture)
                              : _double.ToString("R", CultureInfo.InvariantCulture);
        }

        private void RequireType(JsonType t)
        {
            if (Type != t) throw new InvalidOperationException("not a JSON " + t.ToString().ToLowerInvariant());
            if (ReferenceEquals(this, Null) || ReferenceEquals(this, True) || ReferenceEquals(this, False))
                throw new InvalidOperationException("shared constant");
        }

        // Last occurrence wins, as with JavaScript's JSON.parse.
        private int IndexOf(string key)
        {
            if (_index != null)
            {
                int at;
                return _index.TryGetValue(key, out at) ? at : -1;
            }
            for (int i = _members.Count - 1; i >= 0; i--) if (_members[i].Key == key) return i;
            return -1;
        }

        private void BuildIndex()
        {
            _index = new Dictionary<string, int>(_members.Count, StringComparer.Ordinal);
            for (int i = 0; i < _members.Count; i++) _index[_members[i].Key] = i;
        }
    }
}
