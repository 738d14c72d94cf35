// How frames are put on the wire. JSON (text frames) is the only codec
// PROTOCOL.md v1 has; MessagePack comes with the binary-protocol issue and
// plugs in here without touching the state machine.
//
// A codec is called from the transport's receive thread (Decode) and from the
// thread that calls Poll (Encode), so it must be stateless or thread-safe.
using System;

namespace Parley
{
    /// <summary>Turns frames into bytes and back.</summary>
    public interface ICodec
    {
        /// <summary>"json" or "msgpack": what the harness and logs call it.</summary>
        string Name { get; }

        /// <summary>True when frames go as binary WebSocket messages, false for text.</summary>
        bool Binary { get; }

        /// <summary>The wire bytes of one client frame (a JSON object).</summary>
        byte[] Encode(JsonValue frame);

        /// <summary>One server frame; throws <see cref="FormatException"/> on bytes it cannot read.</summary>
        JsonValue Decode(byte[] bytes, int offset, int count);
    }

    /// <summary>PROTOCOL.md's JSON: one UTF-8 text frame per JSON value.</summary>
    public sealed class JsonCodec : ICodec
    {
        /// <summary>The shared instance (the codec is stateless).</summary>
        public static readonly JsonCodec Instance = new JsonCodec();

        /// <inheritdoc/>
        public string Name { get { return "json"; } }

        /// <inheritdoc/>
        public bool Binary { get { return false; } }

        /// <inheritdoc/>
        public byte[] Encode(JsonValue frame) { return JsonWriter.ToUtf8(frame); }

        /// <inheritdoc/>
        public JsonValue Decode(byte[] bytes, int offset, int count) { return JsonReader.Parse(bytes, offset, count); }
    }
}
