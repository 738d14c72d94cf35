// Errors the SDK reports: the server's error codes (PROTOCOL.md "Errors") and a
// few of its own (timeout, disconnected, closed, left, bad_frame, queue_full).
using System;

namespace Parley
{
    /// <summary>The error codes the SDK reports.</summary>
    public static class ErrorCodes
    {
#pragma warning disable 1591 // each is the PROTOCOL.md code of the same name
        public const string BadRequest = "bad_request";
        public const string Unauthorized = "unauthorized";
        public const string Forbidden = "forbidden";
        public const string TooLarge = "too_large";
        public const string RateLimited = "rate_limited";
        public const string Backpressure = "backpressure";
        public const string QuotaExceeded = "quota_exceeded";
        public const string Unavailable = "unavailable";
        public const string Internal = "internal";
#pragma warning restore 1591
        /// <summary>No reply (or ack) in time; the operation may still have happened.</summary>
        public const string Timeout = "timeout";
        /// <summary>The connection dropped while a non-resendable request was in flight.</summary>
        public const string Disconnected = "disconnected";
        /// <summary>The client was closed.</summary>
        public const string Closed = "closed";
        /// <summary>The channel was left while the operation waited.</summary>
        public const string Left = "left";
        /// <summary>The server sent a frame the codec could not read.</summary>
        public const string BadFrame = "bad_frame";
        /// <summary>A bounded queue of the SDK overflowed (its oldest entry was dropped).</summary>
        public const string QueueFull = "queue_full";
        /// <summary>The server removed this connection from the channel (a <c>kicked</c> frame).</summary>
        public const string Kicked = "kicked";

        /// <summary>Codes after which the same request may succeed after <c>retry_ms</c>.</summary>
        public static bool IsRetryable(string code)
        {
            return code == RateLimited || code == Backpressure || code == Unavailable;
        }
    }

    /// <summary>An error with a PROTOCOL.md code (or one of <see cref="ErrorCodes"/>' own).</summary>
    public class ParleyException : Exception
    {
        /// <summary>Creates an error.</summary>
        public ParleyException(string code, string message, int? retryMs = null)
            : base(string.IsNullOrEmpty(message) ? code : message)
        {
            Code = code;
            RetryMs = retryMs;
        }

        /// <summary>The error code.</summary>
        public string Code { get; private set; }

        /// <summary>The server's <c>retry_ms</c>, when it gave one.</summary>
        public int? RetryMs { get; private set; }

        /// <summary>True for rate_limited, backpressure and unavailable.</summary>
        public bool Retryable { get { return ErrorCodes.IsRetryable(Code); } }

        /// <summary>From a server <c>error</c> frame.</summary>
        public static ParleyException FromFrame(JsonValue frame)
        {
            long retry;
            int? retryMs = frame.TryGetLong("retry_ms", out retry) ? (int?)Math.Min(retry, int.MaxValue) : null;
            return new ParleyException(frame.GetString("code") ?? ErrorCodes.Internal, frame.GetString("msg"), retryMs);
        }
    }
}
