// What the SDK hands the application: plain immutable records, built on the
// Poll thread and read there.
using System.Collections.Generic;

namespace Parley
{
    /// <summary>The server's <c>welcome</c>.</summary>
    public sealed class Welcome
    {
        /// <summary>The connection id.</summary>
        public string Conn { get; internal set; }
        /// <summary>The user id the token names.</summary>
        public string User { get; internal set; }
        /// <summary>The tenant.</summary>
        public string Tenant { get; internal set; }
        /// <summary>The server's WebSocket ping period, ms.</summary>
        public int HeartbeatMs { get; internal set; }
        /// <summary>False for the first welcome of this client, true after a reconnect.</summary>
        public bool Reconnect { get; internal set; }
        /// <summary>
        /// The encoding of this connection's frames: "json" or "msgpack" (the codec's
        /// name; "json" when a TCP server did not take the hello's <c>enc</c>).
        /// </summary>
        public string Enc { get; internal set; }
        /// <summary>The capabilities the server granted (its <c>caps</c>; empty from an older server).</summary>
        public IList<string> Caps { get; internal set; }
        /// <summary>True when the server granted state deltas (<see cref="ClientOptions.StateDeltas"/>).</summary>
        public bool StateDeltas { get; internal set; }
    }

    /// <summary>A dropped connection.</summary>
    public sealed class DisconnectInfo
    {
        /// <summary>The WebSocket close code (1006: no close frame; 4000: the SDK gave up on it; 0: connecting failed).</summary>
        public int Code { get; internal set; }
        /// <summary>The close reason.</summary>
        public string Reason { get; internal set; }
        /// <summary>True when the connection had been welcomed.</summary>
        public bool WasOpen { get; internal set; }
        /// <summary>True when the client will connect again.</summary>
        public bool WillReconnect { get; internal set; }
        /// <summary>The delay before that, ms (backoff or a bye's reconnect_ms with jitter).</summary>
        public int DelayMs { get; internal set; }
    }

    /// <summary>A server's <c>bye</c> (a drain, a slow consumer, a removed tenant).</summary>
    public sealed class ByeInfo
    {
        /// <summary>Why: draining, slow_consumer, tenant_removed, ...</summary>
        public string Code { get; internal set; }
        /// <summary>The server's reconnect_ms, when given.</summary>
        public int? ReconnectMs { get; internal set; }
    }

    /// <summary>An operation the SDK will retry after a retryable error.</summary>
    public sealed class RetryInfo
    {
        /// <summary>pub, join, state, up, history, ...</summary>
        public string Op { get; internal set; }
        /// <summary>Its channel, if any.</summary>
        public string Channel { get; internal set; }
        /// <summary>rate_limited, backpressure or unavailable.</summary>
        public string Code { get; internal set; }
        /// <summary>The server's retry_ms (before jitter), when given.</summary>
        public int? RetryMs { get; internal set; }
    }

    /// <summary>A channel message, delivered once and in seq order.</summary>
    public sealed class Message
    {
        /// <summary>
        /// What the entry is (PROTOCOL.md "Moderation: delete and edit"): a message, or an
        /// edit / delete of message <see cref="Target"/>, which takes a seq of its own.
        /// </summary>
        public MessageKind Kind { get; internal set; }
        /// <summary>An edit's or delete's message (its seq); null for a message.</summary>
        public long? Target { get; internal set; }
        /// <summary>
        /// A message from history or a join's backfill in its current version: the ts of its
        /// latest edit; null when never edited (a live message is always the original).
        /// </summary>
        public long? Edited { get; internal set; }
        /// <summary>A message from history or a backfill that was deleted: a tombstone, Body null.</summary>
        public bool Deleted { get; internal set; }
        /// <summary>The channel.</summary>
        public string Channel { get; internal set; }
        /// <summary>Its seq (1, 2, 3, ... per channel).</summary>
        public long Seq { get; internal set; }
        /// <summary>The publisher's user id ("server" for the HTTP API).</summary>
        public string From { get; internal set; }
        /// <summary>The publisher's client message id.</summary>
        public string Id { get; internal set; }
        /// <summary>The server's time of acceptance, ms since the epoch.</summary>
        public long Ts { get; internal set; }
        /// <summary>The body.</summary>
        public JsonValue Body { get; internal set; }

        internal static Message FromFrame(JsonValue f)
        {
            long seq, ts, target, edited;
            f.TryGetLong("seq", out seq);
            f.TryGetLong("ts", out ts);
            var op = f.GetString("op");
            var kind = op == "edit" ? MessageKind.Edit : op == "delete" ? MessageKind.Delete : MessageKind.Msg;
            var deleted = f["deleted"];
            return new Message
            {
                Channel = f.GetString("ch"), Seq = seq, From = f.GetString("from"),
                Id = f.GetString("id"), Ts = ts, Body = f["body"] ?? JsonValue.Null, Kind = kind,
                Target = kind != MessageKind.Msg && f.TryGetLong("target", out target) ? target : (long?)null,
                Edited = kind == MessageKind.Msg && f.TryGetLong("edited", out edited) ? edited : (long?)null,
                Deleted = kind == MessageKind.Msg && deleted != null && deleted.AsBool,
            };
        }

        // A log entry the client can use: an integer seq >= 1, and for an edit or delete an
        // integer target below it (an entry changing nothing it names says nothing).
        internal static bool IsEntry(JsonValue f)
        {
            long seq, target;
            if (f == null || f.Type != JsonType.Object || !f.TryGetLong("seq", out seq) || seq < 1) return false;
            var op = f.GetString("op");
            if (op != "edit" && op != "delete") return true;
            return f.TryGetLong("target", out target) && target >= 1 && target < seq;
        }
    }

    /// <summary>What an entry of a channel's log is.</summary>
    public enum MessageKind
    {
        /// <summary>A message.</summary>
        Msg,
        /// <summary>An edit of message Target: Body is its new body.</summary>
        Edit,
        /// <summary>A delete of message Target (no body).</summary>
        Delete,
    }

    /// <summary>An edit or delete written (the <c>edited</c> / <c>deleted</c> reply).</summary>
    public sealed class Moderated
    {
        /// <summary>The channel.</summary>
        public string Channel { get; internal set; }
        /// <summary>The seq the edit or delete itself took.</summary>
        public long Seq { get; internal set; }
        /// <summary>The message changed.</summary>
        public long Target { get; internal set; }
    }

    /// <summary>The server removed this connection from a channel (a <c>kicked</c> frame).</summary>
    public sealed class KickedInfo
    {
        /// <summary>The channel.</summary>
        public string Channel { get; internal set; }
        /// <summary>Why ("" when no reason was given).</summary>
        public string Reason { get; internal set; }
    }

    /// <summary>Another member's ephemeral state (latest wins per sender and key).</summary>
    public sealed class StateEvent
    {
        /// <summary>The channel.</summary>
        public string Channel { get; internal set; }
        /// <summary>The sender's user id.</summary>
        public string From { get; internal set; }
        /// <summary>The key.</summary>
        public string Key { get; internal set; }
        /// <summary>The body.</summary>
        public JsonValue Body { get; internal set; }
        /// <summary>The sender's position (interest areas), or null.</summary>
        public JsonValue Pos { get; internal set; }
        /// <summary>
        /// The server's tick at which it sent the state (PROTOCOL.md "Time for games": the next tick is
        /// this + 1; one server's, per namespace), or null (a namespace with <c>tick_ms = 0</c>, an older server).
        /// </summary>
        public long? Tick { get; internal set; }
        /// <summary>The server's time at that tick, ms since the epoch (<see cref="ParleyClient.ToLocalTime"/>), or null.</summary>
        public long? Ts { get; internal set; }
        /// <summary>The state's stream id on a connection with state deltas, or null.</summary>
        public long? Sid { get; internal set; }
    }

    /// <summary>Users who joined or left a channel.</summary>
    public sealed class PresenceEvent
    {
        /// <summary>The channel.</summary>
        public string Channel { get; internal set; }
        /// <summary>User ids that joined.</summary>
        public IList<string> Join { get; internal set; }
        /// <summary>User ids that left.</summary>
        public IList<string> Leave { get; internal set; }
    }

    /// <summary>A (re)join answered.</summary>
    public sealed class JoinedInfo
    {
        /// <summary>The channel.</summary>
        public string Channel { get; internal set; }
        /// <summary>The channel's latest seq when joined.</summary>
        public long Seq { get; internal set; }
        /// <summary>Whether history still held everything after <c>since</c>.</summary>
        public bool Recovered { get; internal set; }
        /// <summary>The channel epoch (1 unless the server accepted data loss).</summary>
        public long Epoch { get; internal set; }
        /// <summary>Members (namespaces with presence), else empty.</summary>
        public IList<string> Members { get; internal set; }
    }

    /// <summary>Seqs the SDK could not recover from history: they are never delivered.</summary>
    public sealed class GapInfo
    {
        /// <summary>The channel.</summary>
        public string Channel { get; internal set; }
        /// <summary>The first missing seq.</summary>
        public long From { get; internal set; }
        /// <summary>The last missing seq.</summary>
        public long To { get; internal set; }
    }

    /// <summary>The channel's log started over (a non-durable namespace after a restart).</summary>
    public sealed class ResetInfo
    {
        /// <summary>The channel.</summary>
        public string Channel { get; internal set; }
        /// <summary>The last seq delivered before.</summary>
        public long LastSeq { get; internal set; }
        /// <summary>The channel's seq now; delivery goes on after it.</summary>
        public long Seq { get; internal set; }
    }

    /// <summary>A publish written by the server.</summary>
    public sealed class Ack
    {
        /// <summary>The message's seq.</summary>
        public long Seq { get; internal set; }
        /// <summary>True when the server had it already (a resend after a drop).</summary>
        public bool Dup { get; internal set; }
        /// <summary>The client message id.</summary>
        public string Id { get; internal set; }
    }
}
