// ParleyClient: one logical connection to a Parley server (docs/PROTOCOL.md),
// kept alive across drops. It says hello, rejoins every channel the
// application joined with `since` = the last seq it delivered, resends what
// was in flight (publishes keep their client ids, so the server's dedupe makes
// a resend harmless), and reconnects with backoff and jitter, or after a
// server's `bye` with at least its `reconnect_ms`.
//
// Threads: the transport reads on its own thread and only queues what it read
// (decoded) in the inbox. Everything else, the state machine, timers and every
// application callback and Task completion, runs on the thread that calls
// Poll() (Unity's main thread when a MonoBehaviour calls it from Update()).
// The public API is not thread-safe: call it from that thread only.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Diagnostics;
using System.Threading;
using System.Threading.Tasks;

namespace Parley
{
    /// <summary>The connection's lifecycle.</summary>
    public enum ClientState
    {
        /// <summary>Created; nothing sent yet.</summary>
        Idle,
        /// <summary>Opening a socket or waiting for <c>welcome</c>.</summary>
        Connecting,
        /// <summary>Welcomed: frames flow.</summary>
        Open,
        /// <summary>Dropped; waiting to reconnect.</summary>
        Waiting,
        /// <summary>Closed for good.</summary>
        Closed,
    }

    /// <summary>
    /// A Parley client: create it, get channels with <see cref="Channel"/>, and call
    /// <see cref="Poll"/> regularly (every frame) from one thread; callbacks run inside Poll.
    /// </summary>
    public sealed class ParleyClient
    {
        /// <summary>The SDK's version (the server's, CMake's project version).</summary>
        public static string Version { get { return SdkVersion.Value; } }

        private const int CloseUnauthorized = 4001;
        private const int CloseBadVersion = 4002;
        private const int CloseQuotaExceeded = 4008;
        private const int CloseSlowConsumer = 4010;

        private readonly ClientOptions _opts;
        private readonly ReconnectOptions _reconnect;
        private readonly Random _random;
        private readonly Func<long> _clock;
        private readonly Func<long> _wall; // ms since the epoch, for the server clock estimate
        private readonly ICodec _codec;
        // What frames are sent in now: _codec from the start on a WebSocket (its
        // subprotocol); on raw TCP JSON until a welcome carrying _codec's enc.
        private ICodec _sendCodec;
        private bool _stream; // raw TCP (tcp://): no subprotocols, the hello is JSON
        private bool _helloEnc; // this connection's hello asked for _codec's enc
        private readonly Func<ITransport> _factory;
        private readonly string _idPrefix;
        private readonly Timers _timers = new Timers();
        private readonly ConcurrentQueue<Inbound> _inbox = new ConcurrentQueue<Inbound>();
        private readonly AutoResetEvent _wake = new AutoResetEvent(false);
        private readonly Queue<Action> _callbacks = new Queue<Action>();
        private readonly Dictionary<long, Call> _pending = new Dictionary<long, Call>();
        private List<Call> _outbox = new List<Call>();
        private readonly Dictionary<string, Channel> _channels = new Dictionary<string, Channel>();
        private readonly List<Channel> _channelOrder = new List<Channel>();
        private readonly List<TaskCompletionSource<Welcome>> _connectWaiters = new List<TaskCompletionSource<Welcome>>();

        private ClientState _state = ClientState.Idle;
        private ITransport _transport;
        private bool _socketOpen;
        private int _epoch; // one per connection attempt: late events of an old one are ignored
        private int _attempt;
        private int _authFailures;
        private int? _byeReconnectMs;
        private Timer _reconnectTimer, _connectTimer, _liveTimer, _clockTimer;
        private readonly StateStreams _streams = new StateStreams(); // this connection's state delta streams
        private readonly ClockSamples _clockSamples = new ClockSamples();
        private long _lastRx;
        private long _nextRid = 1;
        private long _helloRid;
        private string _helloToken;
        private string _helloRefusal; // the error code answering this connection's hello
        private string _byeCode; // the code of this connection's bye
        private long _idCounter;
        private Welcome _welcome;
        private int _welcomes;
        private bool _inPoll;
        private int _waiting; // 1 while WaitForWork blocks (any thread reads it)

        /// <summary>Creates a client; nothing happens until <see cref="Connect"/> or a channel's Join.</summary>
        public ParleyClient(ClientOptions options)
        {
            if (options == null) throw new ArgumentNullException("options");
            if (string.IsNullOrEmpty(options.Url)) throw new ArgumentException("ClientOptions.Url is required");
            if (options.Token == null && options.TokenProvider == null && options.ApiKey == null)
                throw new ArgumentException("ClientOptions.Token, TokenProvider or ApiKey is required");
            _opts = options;
            _reconnect = options.Reconnect;
            _random = options.Random ?? new Random();
            if (options.Clock != null) _clock = options.Clock;
            else
            {
                var sw = Stopwatch.StartNew();
                _clock = () => sw.ElapsedMilliseconds;
            }
            _wall = options.WallClock ?? (() => DateTimeOffset.UtcNow.ToUnixTimeMilliseconds());
            _codec = options.Codec ?? JsonCodec.Instance;
            _sendCodec = _codec;
            _factory = options.TransportFactory ?? DefaultTransport(options.Url);
            _idPrefix = options.IdPrefix ?? RandomPrefix(_random) + "-";
        }

        // ---- the application's API ----

        /// <summary>The connection's lifecycle state.</summary>
        public ClientState State { get { return _state; } }

        /// <summary>The last welcome, or null before the first.</summary>
        public Welcome Welcome { get { return _welcome; } }

        /// <summary>The user id of the last welcome, or null.</summary>
        public string User { get { return _welcome == null ? null : _welcome.User; } }

        /// <summary>The options the client was made with.</summary>
        public ClientOptions Options { get { return _opts; } }

        /// <summary>
        /// The estimate of the server's clock from pongs' <c>ts</c> (PROTOCOL.md "Time for games"): the
        /// sample with the smallest round trip of the last 8 of this connection; null before the first.
        /// <see cref="Ping"/>, the liveness pings and <see cref="ClientOptions.ClockSyncMs"/> feed it.
        /// </summary>
        public ClockEstimate ServerClock { get { return _clockSamples.Estimate; } }

        /// <summary>The server's time now (ms since the epoch) as estimated, or null without an estimate.</summary>
        public long? ServerNow()
        {
            var c = _clockSamples.Estimate;
            return c == null ? (long?)null : _wall() + c.OffsetMs;
        }

        /// <summary>A server time (a state's <see cref="StateEvent.Ts"/>) as local wall time (ms since the epoch), or null without an estimate.</summary>
        public long? ToLocalTime(long serverTs)
        {
            var c = _clockSamples.Estimate;
            return c == null ? (long?)null : serverTs - c.OffsetMs;
        }

        /// <summary>Every welcome (the first and each after a reconnect).</summary>
        public event Action<Welcome> Opened;
        /// <summary>Every drop, with what the client does next.</summary>
        public event Action<DisconnectInfo> Disconnected;
        /// <summary>A reconnect attempt starts (its 1-based number since the last welcome).</summary>
        public event Action<int> Reconnecting;
        /// <summary>A <c>bye</c> frame arrived (the close follows).</summary>
        public event Action<ByeInfo> Bye;
        /// <summary>A <c>direct</c> message (from the app server); its frame.</summary>
        public event Action<JsonValue> Direct;
        /// <summary>The client will retry an operation after a retryable error.</summary>
        public event Action<RetryInfo> Retry;
        /// <summary>An error no operation owns (bad frames, refused hello, a failing token provider).</summary>
        public event Action<ParleyException> Error;
        /// <summary>Every server object as decoded (debugging).</summary>
        public event Action<JsonValue> FrameReceived;
        /// <summary>The client closed for good.</summary>
        public event Action Closed;

        /// <summary>
        /// Starts connecting (if not already) and completes with the next welcome; fails
        /// when the server refuses the credentials for good or <see cref="Close"/> is called.
        /// </summary>
        public Task<Welcome> Connect()
        {
            if (_state == ClientState.Closed) return Failed<Welcome>(ErrorCodes.Closed, "client is closed");
            if (_state == ClientState.Open) return Task.FromResult(_welcome);
            var tcs = new TaskCompletionSource<Welcome>();
            _connectWaiters.Add(tcs);
            if (_state == ClientState.Idle) Open();
            return tcs.Task;
        }

        /// <summary>Closes for good: the socket closes with 1000 and pending operations fail with <c>closed</c>.</summary>
        public void Close()
        {
            if (_state == ClientState.Closed) return;
            _state = ClientState.Closed;
            CancelTimer(ref _reconnectTimer);
            CancelTimer(ref _connectTimer);
            CancelTimer(ref _liveTimer);
            CancelTimer(ref _clockTimer);
            var tr = _transport;
            _transport = null;
            _socketOpen = false;
            _epoch++;
            if (tr != null) tr.Close(1000, "client closed");
            var err = new ParleyException(ErrorCodes.Closed, "client is closed");
            var pending = new List<Call>(_pending.Values);
            _pending.Clear();
            foreach (var call in pending) call.Fail(err);
            var queued = _outbox;
            _outbox = new List<Call>();
            foreach (var call in queued) call.Fail(err);
            foreach (var ch in _channelOrder) ch.OnClientClosed(err);
            FailConnectWaiters(err);
            Emit(Closed);
        }

        /// <summary>The channel <paramref name="name"/> (created on first use; not joined until Join).</summary>
        public Channel Channel(string name)
        {
            Channel ch;
            if (!_channels.TryGetValue(name, out ch))
            {
                ch = new Channel(this, name);
                _channels[name] = ch;
                _channelOrder.Add(ch);
            }
            return ch;
        }

        /// <summary>
        /// Handles what arrived and what is due: decoded frames, timers, and every
        /// callback and Task completion. Call it every frame (Unity: from Update()).
        /// </summary>
        public void Poll()
        {
            if (_inPoll) return; // called again from a callback
            _inPoll = true;
            try
            {
                RunCallbacks();
                int budget = _opts.MaxFramesPerPoll > 0 ? _opts.MaxFramesPerPoll : int.MaxValue;
                Inbound item;
                while (budget-- > 0 && _inbox.TryDequeue(out item))
                {
                    Handle(item);
                    RunCallbacks();
                }
                long now = Now;
                Timer t;
                while ((t = _timers.TakeDue(now)) != null)
                {
                    var a = t.Action;
                    t.Action = null;
                    if (a != null) a();
                    RunCallbacks();
                }
            }
            finally
            {
                _inPoll = false;
            }
        }

        /// <summary>
        /// Blocks until something arrives, the next timer is due, <see cref="Wake"/> is
        /// called or <paramref name="maxMs"/> pass; for console programs (a game calls Poll per frame).
        /// </summary>
        public void WaitForWork(int maxMs)
        {
            if (_callbacks.Count > 0) return;
            long next = _timers.NextDue;
            long wait = maxMs;
            if (next != long.MaxValue) wait = Math.Min(wait, Math.Max(0, next - Now));
            if (wait <= 0) return;
            // Announce the wait before the last look at the inbox; Enqueue looks at
            // the flag after queueing (both with full fences), so a frame is never missed.
            Interlocked.Exchange(ref _waiting, 1);
            if (_inbox.IsEmpty) _wake.WaitOne((int)wait);
            Interlocked.Exchange(ref _waiting, 0);
        }

        /// <summary>Ends a <see cref="WaitForWork"/> early; callable from any thread.</summary>
        public void Wake() { _wake.Set(); }

        /// <summary>Round trip time of a <c>ping</c>, ms; its pong's <c>ts</c> feeds <see cref="ServerClock"/>.</summary>
        public Task<long> Ping()
        {
            long t0 = Now, w0 = _wall();
            var tcs = new TaskCompletionSource<long>();
            StartRequest(JsonValue.Object().Set("op", "ping"), false, _opts.RequestTimeoutMs, reply =>
            {
                _clockSamples.Sample(w0, _wall(), reply);
                Complete(tcs, Now - t0);
            }, err => Fault(tcs, err));
            return tcs.Task;
        }

        /// <summary>
        /// Sends a request op and completes with its reply (fails with a ParleyException on
        /// an <c>error</c> reply). Queued while disconnected; with <paramref name="retry"/> it is
        /// resent after a drop and after a retryable error's retry_ms.
        /// </summary>
        public Task<JsonValue> Request(JsonValue frame, bool retry = true)
        {
            var tcs = new TaskCompletionSource<JsonValue>();
            StartRequest(frame, retry, _opts.RequestTimeoutMs, reply => Complete(tcs, reply), err => Fault(tcs, err));
            return tcs.Task;
        }

        // ---- for Channel ----

        internal bool IsOpen { get { return _state == ClientState.Open; } }
        internal int TimerCount { get { return _timers.Count; } }
        internal long Now { get { return _clock(); } }
        internal Random Random { get { return _random; } }

        internal string NextId()
        {
            return _idPrefix + (++_idCounter).ToString(System.Globalization.CultureInfo.InvariantCulture);
        }

        internal long TakeRid() { return _nextRid++; }

        /// <summary>Delay before retrying after an error frame: its retry_ms (or 100), plus jitter.</summary>
        internal int RetryDelay(JsonValue errFrame)
        {
            long ms;
            int baseMs = errFrame != null && errFrame.TryGetLong("retry_ms", out ms) && ms > 0
                ? (int)Math.Min(ms, 3600000) : 100;
            return Backoff.WithJitter(baseMs, _opts.RetryJitter, _random);
        }

        /// <summary>A timer dropped when the client is closed.</summary>
        internal Timer Later(int ms, Action fn)
        {
            return _timers.At(Now + Math.Max(0, ms), () =>
            {
                if (_state != ClientState.Closed) fn();
            });
        }

        /// <summary>Runs <paramref name="fn"/> (application code) after the current step, inside Poll.</summary>
        internal void Post(Action fn) { _callbacks.Enqueue(fn); }

        internal void Emit(Action handler)
        {
            if (handler != null) Post(handler);
        }

        // Each subscriber runs on its own, so one that throws does not keep the
        // others from their event.
        internal void Emit<T>(Action<T> handler, T arg)
        {
            if (handler == null) return;
            var list = handler.GetInvocationList();
            if (list.Length == 1) { Post(() => handler(arg)); return; }
            foreach (var d in list)
            {
                var one = (Action<T>)d;
                Post(() => one(arg));
            }
        }

        internal void EmitRetry(string op, string ch, JsonValue errFrame)
        {
            if (Retry == null) return;
            long ms;
            int? retryMs = errFrame.TryGetLong("retry_ms", out ms) ? (int?)ms : null;
            Emit(Retry, new RetryInfo { Op = op, Channel = ch, Code = errFrame.GetString("code"), RetryMs = retryMs });
        }

        internal void EmitError(ParleyException e) { Emit(Error, e); }

        /// <summary>The channel is left or re-joined: its delta streams start over (full bodies follow).</summary>
        internal void ForgetStreams(string channel) { _streams.Forget(channel); }

        internal static void Complete<T>(TaskCompletionSource<T> tcs, T value) { tcs.TrySetResult(value); }
        internal static void Fault<T>(TaskCompletionSource<T> tcs, Exception e) { tcs.TrySetException(e); }

        internal static Task<T> Failed<T>(string code, string msg)
        {
            var tcs = new TaskCompletionSource<T>();
            tcs.SetException(new ParleyException(code, msg));
            return tcs.Task;
        }

        /// <summary>
        /// A request with retries and a timeout; <paramref name="ok"/> / <paramref name="fail"/>
        /// run on the Poll thread inside the state machine (Channel's own use) — callers
        /// that hand the result to application code Post it.
        /// </summary>
        internal void StartRequest(JsonValue frame, bool retry, int timeoutMs, Action<JsonValue> ok, Action<ParleyException> fail)
        {
            var call = new Call { Frame = frame, Retry = retry };
            int attempts = 0;
            Timer timer = null;
            call.OnReply = reply =>
            {
                call.Settled = true;
                if (timer != null) timer.Cancel();
                Post(() => ok(reply));
            };
            call.OnFail = err =>
            {
                if (call.Settled) return;
                call.Settled = true;
                if (timer != null) timer.Cancel();
                Post(() => fail(err));
            };
            call.OnError = obj =>
            {
                if (retry && ErrorCodes.IsRetryable(obj.GetString("code")) && ++attempts < _opts.MaxRetryAttempts)
                {
                    EmitRetry(frame.GetString("op"), frame.GetString("ch"), obj);
                    Later(RetryDelay(obj), () =>
                    {
                        if (!call.Settled) Submit(call);
                    });
                    return;
                }
                call.Fail(ParleyException.FromFrame(obj));
            };
            if (timeoutMs > 0)
            {
                timer = Later(timeoutMs, () =>
                {
                    Forget(call);
                    call.Fail(new ParleyException(ErrorCodes.Timeout,
                        "no reply to " + frame.GetString("op") + " within " + timeoutMs + " ms"));
                });
            }
            Submit(call);
        }

        /// <summary>Sends the call's frame with a fresh rid when open, else queues it for the next connection.</summary>
        internal void Submit(Call call)
        {
            if (_state == ClientState.Closed) { call.Fail(new ParleyException(ErrorCodes.Closed, "client is closed")); return; }
            if (!IsOpen) { _outbox.Add(call); return; }
            long rid = _nextRid++;
            call.Rid = rid;
            _pending[rid] = call;
            SendFrame(call.Frame, rid);
        }

        /// <summary>Sends a frame (with <paramref name="rid"/> when non-zero); false when no socket is open.</summary>
        internal bool SendFrame(JsonValue frame, long rid)
        {
            if (_transport == null || !_socketOpen) return false;
            var f = rid != 0 ? frame.ShallowCopy().Set("rid", rid) : frame;
            _transport.Send(_sendCodec.Encode(f), _sendCodec.Binary);
            return true;
        }

        // ---- connection lifecycle ----

        private void Open()
        {
            _state = ClientState.Connecting;
            int epoch = ++_epoch;
            _helloRefusal = null;
            _byeCode = null;
            if (_opts.TokenProvider == null) { OpenWithToken(epoch, _opts.Token); return; }
            Task<string> t;
            try
            {
                t = _opts.TokenProvider();
                if (t == null) throw new InvalidOperationException("TokenProvider returned null");
            }
            catch (Exception e)
            {
                TokenFailed(e);
                return;
            }
            if (t.IsCompleted) { TokenReady(epoch, t); return; }
            t.ContinueWith(done => Enqueue(new Inbound { Epoch = epoch, Kind = InboundKind.Token, TokenTask = done }),
                TaskContinuationOptions.ExecuteSynchronously);
        }

        private void TokenReady(int epoch, Task<string> t)
        {
            if (epoch != _epoch || _state != ClientState.Connecting) return;
            if (t.IsFaulted || t.IsCanceled || t.Result == null)
            {
                TokenFailed(t.Exception != null ? t.Exception.GetBaseException() : new InvalidOperationException("no token"));
                return;
            }
            OpenWithToken(epoch, t.Result);
        }

        private void TokenFailed(Exception e)
        {
            EmitError(new ParleyException(ErrorCodes.Unauthorized, "the token provider failed: " + e.Message));
            ScheduleReconnect(0, "token provider failed", false);
        }

        private void OpenWithToken(int epoch, string token)
        {
            ITransport tr;
            try
            {
                tr = _factory();
            }
            catch (Exception e)
            {
                EmitError(new ParleyException(ErrorCodes.Disconnected, "transport: " + e.Message));
                ScheduleReconnect(0, "connect failed", false);
                return;
            }
            _transport = tr;
            _socketOpen = false;
            _stream = IsStreamUrl(_opts.Url);
            _sendCodec = _stream ? JsonCodec.Instance : _codec;
            var ws = tr as IWebSocketTransport;
            // PROTOCOL.md: a WebSocket picks its encoding by subprotocol; JSON needs none.
            if (ws != null && !_stream && _codec.Name != "json" && string.IsNullOrEmpty(ws.SubProtocol))
                ws.SubProtocol = "parley.v1." + _codec.Name;
            _helloToken = token;
            _helloRid = 0;
            _byeReconnectMs = null;
            CancelTimer(ref _connectTimer);
            _connectTimer = _timers.At(Now + _opts.ConnectTimeoutMs, () =>
            {
                _connectTimer = null;
                if (epoch == _epoch && _state == ClientState.Connecting) Abandon(4000, "connect timeout");
            });
            tr.Connect(_opts.Url, new Link(this, epoch, _stream, _sendCodec, _stream && _codec.Name != "json" ? _codec : null));
        }

        // Drops the socket at once (a dead peer may never complete a close) and
        // treats it as a drop.
        private void Abandon(int code, string reason)
        {
            var tr = _transport;
            _epoch++;
            _transport = null;
            _socketOpen = false;
            if (tr != null) tr.Abort();
            OnDrop(code, reason);
        }

        // The wake event costs a system call; it is set only when Poll's thread waits.
        private void Enqueue(Inbound item)
        {
            _inbox.Enqueue(item);
            Interlocked.MemoryBarrier();
            if (Volatile.Read(ref _waiting) != 0) _wake.Set();
        }

        private void Handle(Inbound item)
        {
            if (item.Epoch != _epoch) return; // an old connection's
            switch (item.Kind)
            {
                case InboundKind.Token:
                    TokenReady(item.Epoch, item.TokenTask);
                    return;
                case InboundKind.Open:
                    _socketOpen = true;
                    _lastRx = Now;
                    SendHello(_stream && _codec.Name != "json");
                    return;
                case InboundKind.BadFrame:
                    _lastRx = Now;
                    EmitError(new ParleyException(ErrorCodes.BadFrame, "the server sent a frame the codec cannot read: " + item.Reason));
                    return;
                case InboundKind.Frame:
                    _lastRx = Now;
                    // PROTOCOL.md: a server frame is one object or an array of objects.
                    if (item.Frame.Type == JsonType.Array)
                        foreach (var obj in item.Frame.Items) Dispatch(obj);
                    else Dispatch(item.Frame);
                    return;
                case InboundKind.Close:
                    _transport = null;
                    _socketOpen = false;
                    _epoch++;
                    OnDrop(item.Code, item.Reason ?? "");
                    return;
            }
        }

        // On a WebSocket the hello travels in the subprotocol's encoding; on raw
        // TCP it is JSON, asking for the codec's encoding with `enc`.
        private void SendHello(bool withEnc)
        {
            _helloRid = _nextRid++;
            _helloEnc = withEnc;
            var hello = JsonValue.Object().Set("op", "hello").Set("v", 1);
            if (_helloToken != null) hello.Set("token", _helloToken);
            else hello.Set("api_key", _opts.ApiKey);
            if (withEnc) hello.Set("enc", _codec.Name);
            // PROTOCOL.md "State deltas": asked for per connection; a server without it sends full bodies.
            if (_opts.StateDeltas) hello.Set("caps", JsonValue.Array("state_delta"));
            SendFrame(hello.Set("rid", _helloRid), 0);
        }

        private static bool IsStreamUrl(string url)
        {
            return url.StartsWith("tcp://", StringComparison.OrdinalIgnoreCase) ||
                   url.StartsWith("unix://", StringComparison.OrdinalIgnoreCase);
        }

        private void Dispatch(JsonValue obj)
        {
            if (obj.Type != JsonType.Object) return;
            if (FrameReceived != null) Emit(FrameReceived, obj);
            long rid;
            bool hasRid = obj.TryGetLong("rid", out rid);
            switch (obj.GetString("op"))
            {
                case "welcome":
                    if (hasRid && rid == _helloRid) OnWelcome(obj);
                    return;
                case "state":
                    if (obj.Has("sid")) _streams.Full(obj);
                    goto case "msg";
                case "sd":
                    OnStateDelta(obj);
                    return;
                case "msg":
                case "edit":
                case "delete":
                case "presence":
                {
                    Channel ch;
                    var name = obj.GetString("ch");
                    if (name != null && _channels.TryGetValue(name, out ch)) ch.OnEvent(obj);
                    return;
                }
                case "kicked":
                {
                    Channel ch;
                    var name = obj.GetString("ch");
                    if (name != null && _channels.TryGetValue(name, out ch)) ch.OnKicked(obj);
                    return;
                }
                case "direct":
                    Emit(Direct, obj);
                    return;
                case "bye":
                {
                    long ms;
                    int? reconnectMs = null;
                    if (obj.TryGetLong("reconnect_ms", out ms) && ms >= 0) reconnectMs = (int)Math.Min(ms, 3600000);
                    if (reconnectMs.HasValue) _byeReconnectMs = reconnectMs;
                    _byeCode = obj.GetString("code");
                    Emit(Bye, new ByeInfo { Code = obj.GetString("code"), ReconnectMs = reconnectMs });
                    return;
                }
                case "error":
                    OnErrorFrame(obj, hasRid, rid);
                    return;
                case "pong":
                    if (hasRid && _clockSamples.Answered(rid, _wall(), obj)) return; // one of the client's own pings
                    OnReply(obj, hasRid, rid);
                    return;
                default:
                    OnReply(obj, hasRid, rid);
                    return;
            }
        }

        private void OnReply(JsonValue obj, bool hasRid, long rid)
        {
            Call call;
            if (!hasRid || !_pending.TryGetValue(rid, out call)) return;
            _pending.Remove(rid);
            call.OnReply(obj);
        }

        // PROTOCOL.md "State deltas": an `sd` becomes the full `state` it stands
        // for. One that cannot be applied (no base: the client lost track;
        // malformed) is dropped, never guessed at, and its channel joined again,
        // which gives it full bodies; with an unknown sid (the frame does not say
        // which channel) every joined channel.
        private void OnStateDelta(JsonValue obj)
        {
            var t = _streams.Take(obj);
            Channel ch = null;
            if (t.Channel != null) _channels.TryGetValue(t.Channel, out ch);
            if (t.Kind == StateStreams.Outcome.Applied)
            {
                if (ch != null) ch.OnEvent(t.State);
                return;
            }
            // Sent before the server saw this channel's leave (a re-join is under way,
            // or the application left): nothing to deliver. Once re-joined the server
            // owes full bodies, so a stream without a base then is a lost track.
            if (t.Kind == StateStreams.Outcome.Stale && (ch == null || !ch.IsJoined)) return;
            EmitError(new ParleyException(ErrorCodes.BadFrame, t.Why));
            if (t.Kind == StateStreams.Outcome.Unknown)
                foreach (var c in _channelOrder.ToArray()) c.Resync();
            else if (ch != null) ch.Resync();
        }

        private void OnErrorFrame(JsonValue obj, bool hasRid, long rid)
        {
            if (hasRid && rid == _helloRid)
            {
                // PROTOCOL.md: a TCP server that does not speak the `enc` asked for answers
                // bad_request and stays in JSON, unauthenticated: say hello again in JSON.
                if (_helloEnc && obj.GetString("code") == ErrorCodes.BadRequest && _socketOpen)
                {
                    EmitError(new ParleyException("unsupported_enc", "the server does not take enc " + _codec.Name +
                                                                     " (" + obj.GetString("msg") + "): continuing in JSON"));
                    SendHello(false);
                    return;
                }
                // The close that follows decides; over TCP it carries no code, so remember why.
                _helloRefusal = obj.GetString("code");
                EmitError(ParleyException.FromFrame(obj));
                return;
            }
            Call call;
            if (hasRid && _pending.TryGetValue(rid, out call))
            {
                _pending.Remove(rid);
                call.OnError(obj);
                return;
            }
            // Errors of fire-and-forget ops (state, up) are matched by their channel.
            if (hasRid)
                foreach (var ch in _channelOrder)
                    if (ch.OnFireAndForgetError(rid, obj)) return;
            EmitError(ParleyException.FromFrame(obj));
        }

        private void OnWelcome(JsonValue obj)
        {
            CancelTimer(ref _connectTimer);
            _state = ClientState.Open;
            // Raw TCP: everything after a welcome carrying our `enc` is in it (the
            // Link switched its decoding when it read this welcome).
            if (_stream && _helloEnc && obj.GetString("enc") == _codec.Name) _sendCodec = _codec;
            long hb;
            obj.TryGetLong("heartbeat_ms", out hb);
            // A welcome without `caps` (an older server) grants nothing: full bodies.
            var caps = new List<string>();
            var capsValue = obj["caps"];
            if (capsValue != null) foreach (var c in capsValue.Items) if (c.AsString != null) caps.Add(c.AsString);
            _welcome = new Welcome
            {
                Conn = obj.GetString("conn"), User = obj.GetString("user"), Tenant = obj.GetString("tenant"),
                HeartbeatMs = (int)Math.Min(Math.Max(hb, 0), int.MaxValue), Reconnect = _welcomes++ > 0,
                Enc = _sendCodec.Name, Caps = caps.AsReadOnly(), StateDeltas = caps.Contains("state_delta"),
            };
            _streams.Clear(); // sids are the old connection's
            _clockSamples.Reset();
            _attempt = 0;
            _authFailures = 0;
            StartLiveness(_opts.HeartbeatMs > 0 ? _opts.HeartbeatMs : _welcome.HeartbeatMs);
            StartClockSync();
            var w = _welcome;
            Emit(Opened, w);
            var waiters = _connectWaiters.ToArray();
            _connectWaiters.Clear();
            foreach (var tcs in waiters) Post(() => tcs.TrySetResult(w));
            // Joins first: a channel's publishes wait for its `joined`.
            foreach (var ch in _channelOrder.ToArray()) ch.OnOpen();
            var queued = _outbox;
            _outbox = new List<Call>();
            foreach (var call in queued) Submit(call);
        }

        // The server pings WebSocket clients itself, but ClientWebSocket answers
        // those pings without telling anyone; this catches the cases where the
        // host never notices a dead connection (a laptop that slept, a NAT that
        // forgot the flow): after a quiet heartbeat period, ask; after two periods
        // plus up to one more (at most 5 s) of slack, drop.
        private void StartLiveness(int heartbeatMs)
        {
            CancelTimer(ref _liveTimer);
            int period = heartbeatMs > 0 ? heartbeatMs : 25000;
            int every = Math.Max(100, period / 2);
            long limit = 2L * period + Math.Min(period, 5000);
            int epoch = _epoch;
            Action check = null;
            check = () =>
            {
                _liveTimer = null;
                if (epoch != _epoch || !IsOpen) return;
                long quiet = Now - _lastRx;
                if (quiet > limit) { Abandon(4000, "no traffic from the server"); return; }
                if (quiet > period) TimedPing();
                _liveTimer = Later(every, check);
            };
            _liveTimer = Later(every, check);
        }

        // ClockSyncMs > 0: a ping at once and then every ClockSyncMs, so ServerClock
        // stays fresh (a game interpolating by server time wants that).
        private void StartClockSync()
        {
            CancelTimer(ref _clockTimer);
            int every = _opts.ClockSyncMs;
            if (every <= 0) return;
            int epoch = _epoch;
            Action sync = null;
            sync = () =>
            {
                _clockTimer = null;
                if (epoch != _epoch || !IsOpen) return;
                TimedPing();
                _clockTimer = Later(Math.Max(100, every), sync);
            };
            sync();
        }

        // A ping whose pong only feeds the clock estimate (liveness, ClockSyncMs).
        private void TimedPing()
        {
            long rid = TakeRid();
            if (SendFrame(JsonValue.Object().Set("op", "ping"), rid)) _clockSamples.Sent(rid, _wall());
        }

        private void OnDrop(int code, string reason)
        {
            if (_state == ClientState.Closed) return;
            CancelTimer(ref _connectTimer);
            CancelTimer(ref _liveTimer);
            CancelTimer(ref _clockTimer);
            _streams.Clear();
            bool wasOpen = _state == ClientState.Open;
            // What was in flight goes back to the outbox (to be resent) or fails.
            var dropped = new ParleyException(ErrorCodes.Disconnected, "connection closed (" + code + ")");
            var pending = new List<Call>(_pending.Values);
            pending.Sort((a, b) => a.Rid.CompareTo(b.Rid));
            _pending.Clear();
            var resend = new List<Call>();
            foreach (var call in pending)
            {
                if (call.Retry) resend.Add(call);
                else call.Fail(dropped);
            }
            resend.AddRange(_outbox);
            _outbox = resend;
            foreach (var ch in _channelOrder) ch.OnDrop();

            // A transport without close codes (TCP): the close code PROTOCOL.md pairs
            // with the hello's error frame or the bye that came before it.
            if (code < 4000)
            {
                if (_state == ClientState.Connecting && _helloRefusal == ErrorCodes.Unauthorized) code = CloseUnauthorized;
                else if (_state == ClientState.Connecting && _helloRefusal == ErrorCodes.BadRequest) code = CloseBadVersion;
                else if (_state == ClientState.Connecting && _helloRefusal == ErrorCodes.QuotaExceeded) code = CloseQuotaExceeded;
                else if (_byeCode == "slow_consumer") code = CloseSlowConsumer;
                else if (_byeCode == "tenant_removed") code = CloseUnauthorized;
            }
            _helloRefusal = null;
            _byeCode = null;
            string fatal = null;
            if (code == CloseBadVersion) fatal = ErrorCodes.BadRequest;
            if (code == CloseUnauthorized)
            {
                // A token provider may mint a fresh token; a fixed token will not change.
                _authFailures++;
                if (_opts.TokenProvider == null || _authFailures >= 3) fatal = ErrorCodes.Unauthorized;
            }
            if (fatal != null || _reconnect == null)
            {
                Emit(Disconnected, new DisconnectInfo { Code = code, Reason = reason, WasOpen = wasOpen, WillReconnect = false });
                FailConnectWaiters(new ParleyException(fatal ?? ErrorCodes.Disconnected,
                    "connection closed (" + code + " " + reason + ")"));
                Close();
                return;
            }
            ScheduleReconnect(code, reason, wasOpen);
        }

        private void ScheduleReconnect(int code, string reason, bool wasOpen)
        {
            if (_state == ClientState.Closed) return;
            if (_reconnect == null)
            {
                Emit(Disconnected, new DisconnectInfo { Code = code, Reason = reason, WasOpen = wasOpen, WillReconnect = false });
                FailConnectWaiters(new ParleyException(ErrorCodes.Disconnected, reason));
                Close();
                return;
            }
            _state = ClientState.Waiting;
            int delayMs = _byeReconnectMs.HasValue && _byeReconnectMs.Value > 0
                ? Backoff.WithJitter(_byeReconnectMs.Value, 0.5, _random)
                : Backoff.Delay(_attempt++, _reconnect, _random);
            _byeReconnectMs = null;
            Emit(Disconnected, new DisconnectInfo
            {
                Code = code, Reason = reason, WasOpen = wasOpen, WillReconnect = true, DelayMs = delayMs,
            });
            CancelTimer(ref _reconnectTimer);
            _reconnectTimer = Later(delayMs, () =>
            {
                _reconnectTimer = null;
                if (_state != ClientState.Waiting) return;
                Emit(Reconnecting, _attempt);
                Open();
            });
        }

        private void FailConnectWaiters(ParleyException err)
        {
            var waiters = _connectWaiters.ToArray();
            _connectWaiters.Clear();
            foreach (var tcs in waiters) Post(() => tcs.TrySetException(err));
        }

        private void Forget(Call call)
        {
            if (call.Rid != 0) _pending.Remove(call.Rid);
            _outbox.Remove(call);
        }

        private static void CancelTimer(ref Timer t)
        {
            if (t != null) t.Cancel();
            t = null;
        }

        private void RunCallbacks()
        {
            while (_callbacks.Count > 0)
            {
                var fn = _callbacks.Dequeue();
                try
                {
                    fn();
                }
                catch (Exception e)
                {
                    if (_opts.OnCallbackException != null) _opts.OnCallbackException(e);
                    else Console.Error.WriteLine("Parley: a callback threw: " + e);
                }
            }
        }

        // ws:// and wss:// go over ClientWebSocket (the browser's WebSocket in a WebGL
        // player), tcp:// over PROTOCOL.md's length-prefixed TCP.
        private static Func<ITransport> DefaultTransport(string url)
        {
            if (url.StartsWith("tcp://", StringComparison.OrdinalIgnoreCase)) return () => new TcpTransport();
#if UNITY_WEBGL && !UNITY_EDITOR
            return () => new WebGLTransport();
#else
            return () => new WebSocketTransport();
#endif
        }

        private static string RandomPrefix(Random r)
        {
            const string digits = "0123456789abcdefghijklmnopqrstuvwxyz";
            var c = new char[8];
            for (int i = 0; i < c.Length; i++) c[i] = digits[r.Next(digits.Length)];
            return new string(c);
        }

        // ---- what the transport thread hands over ----

        private enum InboundKind { Token, Open, Frame, BadFrame, Close }

        private sealed class Inbound
        {
            public int Epoch;
            public InboundKind Kind;
            public JsonValue Frame;
            public int Code;
            public string Reason;
            public Task<string> TokenTask;
        }

        // One connection's event sink: decodes on the transport's thread (keeping
        // that work off the game's main thread) and queues for Poll.
        private sealed class Link : ITransportEvents
        {
            private readonly ParleyClient _c;
            private readonly int _epoch;
            private int _closed;
            // The codec of the messages read now, and (raw TCP) the one to switch
            // to after a welcome that carries its enc. Read and changed only on
            // the transport's receive thread, which reads one message at a time.
            private ICodec _wire;
            private ICodec _afterWelcome;
            private readonly bool _stream;

            public Link(ParleyClient c, int epoch, bool stream, ICodec wire, ICodec afterWelcome)
            {
                _c = c;
                _epoch = epoch;
                _stream = stream;
                _wire = wire;
                _afterWelcome = afterWelcome;
            }

            public void OnOpen() { _c.Enqueue(new Inbound { Epoch = _epoch, Kind = InboundKind.Open }); }

            public void OnMessage(byte[] bytes, int offset, int count, bool binary)
            {
                JsonValue v;
                try
                {
                    // A WebSocket's message type says its encoding; the wrong one is malformed.
                    if (!_stream && binary != _wire.Binary)
                        throw new FormatException(binary ? "a binary message on a JSON connection"
                                                         : "a text message on a MessagePack connection");
                    v = _wire.Decode(bytes, offset, count);
                }
                catch (FormatException e)
                {
                    _c.Enqueue(new Inbound { Epoch = _epoch, Kind = InboundKind.BadFrame, Reason = e.Message });
                    return;
                }
                if (_afterWelcome != null && v.Type == JsonType.Object && v.GetString("op") == "welcome" &&
                    v.GetString("enc") == _afterWelcome.Name)
                {
                    _wire = _afterWelcome;
                    _afterWelcome = null;
                }
                _c.Enqueue(new Inbound { Epoch = _epoch, Kind = InboundKind.Frame, Frame = v });
            }

            public void OnClose(int code, string reason)
            {
                if (Interlocked.Exchange(ref _closed, 1) != 0) return;
                _c.Enqueue(new Inbound { Epoch = _epoch, Kind = InboundKind.Close, Code = code, Reason = reason });
            }
        }
    }

    // A request waiting for its reply (or for a connection to be sent on).
    internal sealed class Call
    {
        public JsonValue Frame;
        public bool Retry;
        public long Rid;
        public bool Settled;
        public Action<JsonValue> OnReply;
        public Action<JsonValue> OnError;
        public Action<ParleyException> OnFail;

        public void Fail(ParleyException e) { OnFail(e); }
    }
}
