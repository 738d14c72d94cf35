// Options of a ParleyClient (the JavaScript SDK's, with the same defaults).
using System;
using System.Threading.Tasks;

namespace Parley
{
    /// <summary>How a <see cref="ParleyClient"/> connects and retries. Read when the client is created.</summary>
    public sealed class ClientOptions
    {
        /// <summary>
        /// ws://host:port/v1/ws (wss:// through a TLS proxy), or tcp://host:port for the
        /// server's raw TCP listener (<c>server.tcp_listen</c>).
        /// </summary>
        public string Url;

        /// <summary>A fixed client JWT. A close with 4001 then ends the client (a fixed token will not improve).</summary>
        public string Token;

        /// <summary>
        /// Called before every (re)connect, on the Poll thread, so it can mint a fresh
        /// token; wins over <see cref="Token"/>. After three 4001 closes in a row the client gives up.
        /// </summary>
        public Func<Task<string>> TokenProvider;

        /// <summary>
        /// A tenant API key instead of a token: a game server acting as user <c>server</c>.
        /// PROTOCOL.md allows it on TCP and Unix sockets only, never on WebSocket.
        /// </summary>
        public string ApiKey;

        /// <summary>Reconnect backoff (with equal jitter); null: never reconnect.</summary>
        public ReconnectOptions Reconnect = new ReconnectOptions();

        /// <summary>Socket open to <c>welcome</c>, ms (default 15000): past it the attempt counts as failed.</summary>
        public int ConnectTimeoutMs = 15000;

        /// <summary>join/history/leave/ping reply timeout, ms (default 30000).</summary>
        public int RequestTimeoutMs = 30000;

        /// <summary>A publish not acknowledged within this fails with <c>timeout</c> (default 60000; 0: never).</summary>
        public int PublishTimeoutMs = 60000;

        /// <summary>
        /// Unacknowledged publishes per channel (default 1). With 1, a channel's publishes
        /// are sequenced in call order even across retries; above 1 a retried one may land after a later one.
        /// </summary>
        public int MaxInFlight = 1;

        /// <summary>Minimum ms between two <c>state</c> frames of one key (default 0); latest wins.</summary>
        public int StateMinIntervalMs;

        /// <summary>A server-given retry_ms is stretched by up to this fraction (default 0.25).</summary>
        public double RetryJitter = 0.25;

        /// <summary>Attempts of one request or publish on retryable errors (default 50).</summary>
        public int MaxRetryAttempts = 50;

        /// <summary>
        /// Per channel, messages newer than a hole held while history fills it (default 10,000).
        /// Over it the newest held is dropped and read from history once the hole is filled,
        /// never reported as a gap while history still has it.
        /// </summary>
        public int MaxRepairBuffer = 10000;

        /// <summary>
        /// Dead-connection detection period, ms; 0 (default): the welcome's heartbeat_ms.
        /// After a quiet period the client sends a ping; after two periods plus up to one more
        /// (at most 5 s) it drops the socket and reconnects.
        /// </summary>
        public int HeartbeatMs;

        /// <summary>Prefix of generated publish ids (default: 8 random characters and '-').</summary>
        public string IdPrefix;

        /// <summary>Randomness for jitter and ids (tests pass a seeded one).</summary>
        public Random Random;

        /// <summary>A monotonic clock in ms (tests pass a fake one); default: Stopwatch.</summary>
        public Func<long> Clock;

        /// <summary>
        /// The wire codec: <see cref="JsonCodec"/> (default) or <see cref="MsgPackCodec"/>
        /// (asked for with its WebSocket subprotocol, or a TCP hello's <c>enc</c>).
        /// </summary>
        public ICodec Codec;

        /// <summary>
        /// Ask for PROTOCOL.md's state deltas (the <c>hello</c> capability <c>state_delta</c>; default
        /// false). Where the server grants it (<see cref="Welcome.StateDeltas"/>) and the namespace has
        /// <c>state_delta = true</c>, it sends only what changed in a state body (<c>sd</c> frames); the
        /// client applies them, so <see cref="Channel.StateReceived"/> still gets full bodies.
        /// </summary>
        public bool StateDeltas;

        /// <summary>
        /// Ping after every welcome and then every this many ms (at least 100), so
        /// <see cref="ParleyClient.ServerClock"/> stays fresh; 0 (default): only <see cref="ParleyClient.Ping"/>
        /// and the liveness pings feed it.
        /// </summary>
        public int ClockSyncMs;

        /// <summary>Wall-clock time in ms since the epoch, for the server clock estimate (tests pass a fake one); default: the system's.</summary>
        public Func<long> WallClock;

        /// <summary>Makes one transport per connection attempt (default: <see cref="WebSocketTransport"/>).</summary>
        public Func<ITransport> TransportFactory;

        /// <summary>
        /// Receives an exception thrown by an application callback (the client goes on).
        /// Default: written to Console.Error. In Unity pass Debug.LogException.
        /// </summary>
        public Action<Exception> OnCallbackException;

        /// <summary>Inbound frames handled per Poll call; 0 (default): all that are waiting.</summary>
        public int MaxFramesPerPoll;
    }
}
