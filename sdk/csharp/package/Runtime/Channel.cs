// Channel: the application's view of one channel. It remembers the last seq
// it delivered, so a rejoin after a drop asks for exactly what was missed
// (`since`), drops what it already delivered, and repairs a gap in the seq
// stream from `history` before delivering anything newer. Publishes wait in a
// FIFO until the channel is joined and are resent with their client id after
// a drop or a retryable error. `state` is latest-wins per key and resent after
// a rejoin, so other members see an avatar again once it is back.
//
// Runs on the Poll thread, driven by its ParleyClient.
using System;
using System.Collections.Generic;
using System.Threading.Tasks;

namespace Parley
{
    /// <summary>One channel of a <see cref="ParleyClient"/>; get it with <see cref="ParleyClient.Channel"/>.</summary>
    public sealed class Channel
    {
        private const int MaxUpQueue = 10000;      // `up`s held while not joined
        private const int MaxTrackedRids = 1024;   // fire-and-forget rids remembered for their errors
        private const int HistoryPage = 1000;      // PROTOCOL.md caps history at 1000 per request
        private const int MaxFailedPages = 3;      // failed repair reads in a row before a gap

        private enum Status { Idle, Joining, Joined }
        private enum PubState { Queued, InFlight, Waiting, Done }

        private sealed class PublishEntry
        {
            public LinkedListNode<PublishEntry> Node;
            public string Id;
            public JsonValue Body;
            public TaskCompletionSource<Ack> Tcs;
            public int Attempts;
            public PubState State;
            public Timer Timeout;
        }

        private sealed class StateSlot
        {
            public JsonValue Body;
            public bool Dirty;
            public long LastSent = long.MinValue / 2;
            public long HoldUntil;
            public Timer Timer;
        }

        private readonly ParleyClient _client;
        private readonly string _name;
        private bool _want;
        private Status _status = Status.Idle;
        private int _joinGen;
        private long? _lastSeq;
        private readonly List<TaskCompletionSource<JoinedInfo>> _joinWaiters = new List<TaskCompletionSource<JoinedInfo>>();
        private HashSet<string> _members = new HashSet<string>();
        // Publishes in call order; _busy counts those in flight or waiting to retry,
        // so Pump looks at no more than the window's worth before the first queued one.
        private readonly LinkedList<PublishEntry> _publishes = new LinkedList<PublishEntry>();
        private int _busy;
        private readonly Dictionary<string, StateSlot> _states = new Dictionary<string, StateSlot>();
        private readonly BoundedMap<string> _stateRids = new BoundedMap<string>(MaxTrackedRids);
        private readonly Queue<JsonValue> _ups = new Queue<JsonValue>();
        private readonly BoundedMap<JsonValue> _upRids = new BoundedMap<JsonValue>(MaxTrackedRids);
        private bool _repairing;
        private int _repairGen;     // a repair's page after a leave or reset is ignored
        private int _failedPages;   // repair reads failed in a row
        private long _droppedHigh = -1; // the newest seq dropped from a full _buffer, read from history later
        // Msgs newer than a hole, held until it is filled: in seq order, each once.
        private readonly List<KeyValuePair<long, JsonValue>> _buffer = new List<KeyValuePair<long, JsonValue>>();

        internal Channel(ParleyClient client, string name)
        {
            _client = client;
            _name = name;
        }

        /// <summary>The channel name.</summary>
        public string Name { get { return _name; } }

        /// <summary>True while the server has this connection as a member.</summary>
        public bool IsJoined { get { return _status == Status.Joined; } }

        /// <summary>The seq of the last message delivered, or null before the first join.</summary>
        public long? LastSeq { get { return _lastSeq; } }

        /// <summary>User ids present (namespaces with presence), as of the latest events.</summary>
        public IList<string> Members { get { return new List<string>(_members); } }

        /// <summary>A message, once per seq and in seq order.</summary>
        public event Action<Message> MessageReceived;
        /// <summary>Another member's state.</summary>
        public event Action<StateEvent> StateReceived;
        /// <summary>Members joined or left (after a rejoin: what changed meanwhile, as one event).</summary>
        public event Action<PresenceEvent> PresenceChanged;
        /// <summary>Every (re)join answered.</summary>
        public event Action<JoinedInfo> Joined;
        /// <summary>Seqs that history no longer had: never delivered.</summary>
        public event Action<GapInfo> Gap;
        /// <summary>The channel's log started over: delivery continues from the new seqs.</summary>
        public event Action<ResetInfo> Reset;
        /// <summary>Errors of state and up, a refused join, a full up queue.</summary>
        public event Action<ParleyException> Error;
        /// <summary>An edit entry (Kind Edit: Target, the new Body), in seq order with the messages.</summary>
        public event Action<Message> MessageEdited;
        /// <summary>A delete entry (Kind Delete: Target), in seq order with the messages.</summary>
        public event Action<Message> MessageDeleted;
        /// <summary>
        /// Removed by the server (a moderator's kick, a ban): no rejoin, and what waited on the
        /// channel failed with <c>kicked</c>. <see cref="Join"/> again to try anyway.
        /// </summary>
        public event Action<KickedInfo> Kicked;

        /// <summary>
        /// Joins (and keeps rejoining after drops until <see cref="Leave"/>); completes with the
        /// first <c>joined</c>. <paramref name="since"/> resumes from a seq the application kept;
        /// without it a first join starts at the latest message and a rejoin resumes after the last delivered.
        /// </summary>
        public Task<JoinedInfo> Join(long? since = null)
        {
            if (since.HasValue)
            {
                if (since.Value < 0) throw new ArgumentOutOfRangeException("since", "since must be >= 0");
                _lastSeq = since;
            }
            _want = true;
            var tcs = new TaskCompletionSource<JoinedInfo>();
            _joinWaiters.Add(tcs);
            if (_status == Status.Joined && !since.HasValue)
                SettleJoin(new JoinedInfo { Channel = _name, Seq = _lastSeq ?? 0, Recovered = true, Epoch = 1, Members = Members });
            else if (_status != Status.Joining && _client.IsOpen)
                SendJoin();
            if (_client.State == ClientState.Idle) _client.Connect();
            return tcs.Task;
        }

        /// <summary>Leaves: no more rejoins; queued publishes fail with <c>left</c>.</summary>
        public Task Leave()
        {
            bool wasMember = _status != Status.Idle;
            _want = false;
            _status = Status.Idle;
            _joinGen++;
            var err = new ParleyException(ErrorCodes.Left, "left " + _name);
            FailJoinWaiters(err);
            foreach (var e in new List<PublishEntry>(_publishes)) Settle(e, null, err);
            ClearStates();
            _ups.Clear();
            ForgetRepair();
            _client.ForgetStreams(_name);
            var tcs = new TaskCompletionSource<bool>();
            if (wasMember && _client.IsOpen)
                _client.StartRequest(JsonValue.Object().Set("op", "leave").Set("ch", _name), false,
                    _client.Options.RequestTimeoutMs, r => tcs.TrySetResult(true), ex => tcs.TrySetResult(false));
            else tcs.TrySetResult(true);
            return tcs.Task;
        }

        /// <summary>
        /// Publishes <paramref name="body"/>; completes with the ack once the server wrote it.
        /// Resent with the same id after a drop and after rate_limited, backpressure or
        /// unavailable; fails on other errors or after PublishTimeoutMs.
        /// </summary>
        public Task<Ack> Publish(JsonValue body, string id = null)
        {
            if (!_want) return ParleyClient.Failed<Ack>(ErrorCodes.Forbidden, "join the channel first");
            var e = new PublishEntry
            {
                Id = id ?? _client.NextId(), Body = body ?? JsonValue.Null,
                Tcs = new TaskCompletionSource<Ack>(), State = PubState.Queued,
            };
            int timeoutMs = _client.Options.PublishTimeoutMs;
            if (timeoutMs > 0)
            {
                e.Timeout = _client.Later(timeoutMs, () =>
                {
                    Settle(e, null, new ParleyException(ErrorCodes.Timeout,
                        "publish " + e.Id + " not acknowledged within " + timeoutMs + " ms"));
                    Pump();
                });
            }
            e.Node = _publishes.AddLast(e);
            Pump();
            return e.Tcs.Task;
        }

        /// <summary>
        /// Streams ephemeral state under <paramref name="key"/> (e.g. an avatar's position): only
        /// the latest body per key is kept, sent at most every StateMinIntervalMs, and resent after a rejoin.
        /// </summary>
        public void SetState(string key, JsonValue body)
        {
            if (key == null) throw new ArgumentNullException("key");
            StateSlot s;
            if (!_states.TryGetValue(key, out s)) _states[key] = s = new StateSlot();
            s.Body = body ?? JsonValue.Null;
            s.Dirty = true;
            FlushState(key);
        }

        /// <summary>Stops streaming <paramref name="key"/> (its last body is not resent after a rejoin).</summary>
        public void ClearState(string key)
        {
            StateSlot s;
            if (!_states.TryGetValue(key, out s)) return;
            if (s.Timer != null) s.Timer.Cancel();
            _states.Remove(key);
        }

        /// <summary>
        /// Sends <paramref name="body"/> to the namespace's app server (<c>up</c>). Held while not
        /// joined (at most 10,000), resent after rate_limited; the server answers only errors.
        /// </summary>
        public void Up(JsonValue body)
        {
            if (!_want) throw new ParleyException(ErrorCodes.Forbidden, "join the channel first");
            body = body ?? JsonValue.Null;
            if (IsJoined && _client.IsOpen) { SendUp(body); return; }
            _ups.Enqueue(body);
            if (_ups.Count > MaxUpQueue)
            {
                _ups.Dequeue();
                _client.Emit(Error, new ParleyException(ErrorCodes.QueueFull, "up queue full: the oldest was dropped"));
            }
        }

        /// <summary>
        /// Edits message <paramref name="target"/> (its seq) to <paramref name="body"/>; completes
        /// with the edit's own seq once written. The author within the namespace's edit_window_s,
        /// a moderator (token claim "mod") or the game server may; else <c>forbidden</c>, and
        /// <c>not_found</c> for no such message or a deleted one. Joining is not needed. Resent
        /// after a drop and after retryable errors (no dedupe: a second edit, same effect).
        /// </summary>
        public Task<Moderated> Edit(long target, JsonValue body)
        {
            return Moderate(JsonValue.Object().Set("op", "edit").Set("ch", _name).Set("target", target)
                .Set("body", body ?? JsonValue.Null), target);
        }

        /// <summary>Deletes message <paramref name="target"/>, as <see cref="Edit"/>; a delete is final.</summary>
        public Task<Moderated> Delete(long target)
        {
            return Moderate(JsonValue.Object().Set("op", "delete").Set("ch", _name).Set("target", target), target);
        }

        private Task<Moderated> Moderate(JsonValue frame, long target)
        {
            if (target < 1) return ParleyClient.Failed<Moderated>(ErrorCodes.BadRequest, "target must be a seq (an integer >= 1)");
            if (_client.State == ClientState.Closed) return ParleyClient.Failed<Moderated>(ErrorCodes.Closed, "client is closed");
            var tcs = new TaskCompletionSource<Moderated>();
            if (_client.State == ClientState.Idle) _client.Connect();
            _client.StartRequest(frame, true, _client.Options.RequestTimeoutMs, reply =>
            {
                long seq, t;
                if (!reply.TryGetLong("seq", out seq) || seq < 1 || !reply.TryGetLong("target", out t))
                    tcs.TrySetException(new ParleyException(ErrorCodes.BadFrame,
                        "an edited / deleted reply without an integer seq and target"));
                else tcs.TrySetResult(new Moderated { Channel = _name, Seq = seq, Target = t });
            }, e => tcs.TrySetException(e));
            return tcs.Task;
        }

        /// <summary>
        /// Reads stored entries, oldest first: messages in their current version (Edited, or
        /// Deleted tombstones) and the edit / delete entries (Kind), each at its seq; at most
        /// 1000, exactly one of after / before.
        /// </summary>
        public Task<IList<Message>> History(long? after = null, long? before = null, int? limit = null)
        {
            var tcs = new TaskCompletionSource<IList<Message>>();
            RequestHistory(after, before, limit, msgs =>
            {
                var list = new List<Message>();
                foreach (var m in msgs.Items)
                {
                    if (Message.IsEntry(m)) list.Add(Message.FromFrame(m));
                }
                tcs.TrySetResult(list);
            }, e => tcs.TrySetException(e));
            return tcs.Task;
        }

        private void RequestHistory(long? after, long? before, int? limit, Action<JsonValue> ok, Action<ParleyException> fail)
        {
            var frame = JsonValue.Object().Set("op", "history").Set("ch", _name);
            if (after.HasValue) frame.Set("after", after.Value);
            if (before.HasValue) frame.Set("before", before.Value);
            if (limit.HasValue) frame.Set("limit", limit.Value);
            _client.StartRequest(frame, true, _client.Options.RequestTimeoutMs, reply =>
            {
                var msgs = reply["msgs"];
                ok(msgs != null && msgs.Type == JsonType.Array ? msgs : JsonValue.Array());
            }, fail);
        }

        // ---- driven by ParleyClient ----

        internal void OnOpen()
        {
            if (_want) SendJoin();
        }

        internal void OnDrop()
        {
            _status = Status.Idle;
            _joinGen++;
            foreach (var s in _states.Values)
            {
                if (s.Timer != null) s.Timer.Cancel();
                s.Timer = null;
            }
        }

        internal void OnClientClosed(ParleyException err)
        {
            _want = false;
            _status = Status.Idle;
            FailJoinWaiters(err);
            foreach (var e in new List<PublishEntry>(_publishes)) Settle(e, null, err);
            ClearStates();
        }

        internal void OnEvent(JsonValue obj)
        {
            if (_status != Status.Joined) return;
            switch (obj.GetString("op"))
            {
                case "msg":
                case "edit": // edits and deletes are entries of the log: in the same seq stream
                case "delete":
                    OnMsg(obj);
                    return;
                case "state": // an `sd` arrives here applied (ParleyClient.OnStateDelta)
                    _client.Emit(StateReceived, new StateEvent
                    {
                        Channel = _name, From = obj.GetString("from"), Key = obj.GetString("key"),
                        Body = obj["body"] ?? JsonValue.Null, Pos = obj["pos"],
                        Tick = LongOrNull(obj, "tick"), Ts = LongOrNull(obj, "ts"), Sid = LongOrNull(obj, "sid"),
                    });
                    return;
                case "presence":
                {
                    var join = Strings(obj["join"]);
                    var leave = Strings(obj["leave"]);
                    foreach (var u in join) _members.Add(u);
                    foreach (var u in leave) _members.Remove(u);
                    _client.Emit(PresenceChanged, new PresenceEvent { Channel = _name, Join = join, Leave = leave });
                    return;
                }
            }
        }

        // PROTOCOL.md "Moderation: mute, kick, ban": the server removed this connection from
        // the channel. No rejoin (a moderator's decision, maybe a ban behind it): what waits
        // on the channel fails with `kicked`, Kicked says why. A `joined` of a join in flight
        // comes after it and is ignored (_joinGen).
        internal void OnKicked(JsonValue obj)
        {
            if (!_want && _status == Status.Idle) return;
            var reason = obj.GetString("reason") ?? "";
            _want = false;
            _status = Status.Idle;
            _joinGen++;
            var err = new ParleyException(ErrorCodes.Kicked, reason.Length > 0 ? reason : "kicked from " + _name);
            FailJoinWaiters(err);
            foreach (var e in new List<PublishEntry>(_publishes)) Settle(e, null, err);
            ClearStates();
            _ups.Clear();
            ForgetRepair();
            _client.ForgetStreams(_name);
            _client.Emit(Kicked, new KickedInfo { Channel = _name, Reason = reason });
        }

        // PROTOCOL.md "State deltas": the client lost track of a stream's base (an
        // `sd` it cannot apply): leave and join again, which gives it full bodies.
        // The join asks `since` the last seq delivered, so no msg is lost; events
        // between the two are dropped (Joining) and come back with the join.
        internal void Resync()
        {
            if (_status != Status.Joined || !_client.IsOpen) return;
            _client.StartRequest(JsonValue.Object().Set("op", "leave").Set("ch", _name), false,
                _client.Options.RequestTimeoutMs, r => { }, e => { });
            SendJoin();
        }

        // An error frame for a state or up this channel sent; true when it was ours.
        internal bool OnFireAndForgetError(long rid, JsonValue obj)
        {
            string code = obj.GetString("code");
            string key;
            if (_stateRids.TryTake(rid, out key))
            {
                StateSlot s;
                if (_states.TryGetValue(key, out s) && ErrorCodes.IsRetryable(code))
                {
                    s.Dirty = true; // the newest body goes out once the limit allows
                    s.HoldUntil = _client.Now + _client.RetryDelay(obj);
                    _client.EmitRetry("state", _name, obj);
                    FlushState(key);
                }
                else _client.Emit(Error, ParleyException.FromFrame(obj));
                return true;
            }
            JsonValue body;
            if (_upRids.TryTake(rid, out body))
            {
                if (ErrorCodes.IsRetryable(code))
                {
                    _client.EmitRetry("up", _name, obj);
                    _client.Later(_client.RetryDelay(obj), () =>
                    {
                        if (_want) Up(body);
                    });
                }
                else _client.Emit(Error, ParleyException.FromFrame(obj));
                return true;
            }
            return false;
        }

        // ---- joining ----

        private void SendJoin()
        {
            _status = Status.Joining;
            _client.ForgetStreams(_name); // a (re-)join's states come as full bodies
            int gen = ++_joinGen;
            var frame = JsonValue.Object().Set("op", "join").Set("ch", _name);
            if (_lastSeq.HasValue) frame.Set("since", _lastSeq.Value);
            var call = new Call { Frame = frame, Retry = false }; // a drop ends this attempt; OnOpen rejoins
            call.OnReply = obj =>
            {
                if (gen == _joinGen) OnJoined(obj);
            };
            call.OnError = obj =>
            {
                if (gen != _joinGen) return;
                if (ErrorCodes.IsRetryable(obj.GetString("code")))
                {
                    _client.EmitRetry("join", _name, obj);
                    _client.Later(_client.RetryDelay(obj), () =>
                    {
                        if (gen == _joinGen && _want && _client.IsOpen) SendJoin();
                    });
                    return;
                }
                // forbidden, quota_exceeded, bad_request: joining again will not help.
                var err = ParleyException.FromFrame(obj);
                _want = false;
                _status = Status.Idle;
                FailJoinWaiters(err);
                foreach (var e in new List<PublishEntry>(_publishes)) Settle(e, null, err);
                _client.Emit(Error, err);
            };
            call.OnFail = err =>
            {
                if (err.Code == ErrorCodes.Closed) FailJoinWaiters(err);
            };
            _client.Submit(call);
        }

        private void OnJoined(JsonValue obj)
        {
            if (!_want) return;
            _status = Status.Joined;
            long seq, epoch;
            obj.TryGetLong("seq", out seq);
            if (!obj.TryGetLong("epoch", out epoch)) epoch = 1;
            var prev = _lastSeq;
            if (!prev.HasValue)
            {
                _lastSeq = seq;
            }
            else if (seq < prev.Value)
            {
                // The channel's log is behind what was delivered (e.g. a non-durable
                // namespace after a server restart): its seqs start over.
                ForgetRepair();
                _lastSeq = seq;
                _client.Emit(Reset, new ResetInfo { Channel = _name, LastSeq = prev.Value, Seq = seq });
            }
            var members = obj["members"];
            if (members != null && members.Type == JsonType.Array) ReplaceMembers(Strings(members));
            var info = new JoinedInfo
            {
                Channel = _name, Seq = seq, Recovered = obj["recovered"] != null && obj["recovered"].AsBool,
                Epoch = epoch, Members = Members,
            };
            _client.Emit(Joined, info);
            SettleJoin(info);
            Pump();
            foreach (var key in new List<string>(_states.Keys))
            {
                var s = _states[key];
                s.Dirty = true;
                FlushState(key);
            }
            while (_ups.Count > 0 && IsJoined) SendUp(_ups.Dequeue());
        }

        // After a rejoin the member list is the server's again; what changed while
        // disconnected is reported as one presence event, minus this user.
        private void ReplaceMembers(IList<string> list)
        {
            var next = new HashSet<string>(list);
            string self = _client.User;
            var join = new List<string>();
            var leave = new List<string>();
            foreach (var u in next) if (!_members.Contains(u) && u != self) join.Add(u);
            foreach (var u in _members) if (!next.Contains(u) && u != self) leave.Add(u);
            bool hadList = _members.Count > 0;
            _members = next;
            if (hadList && (join.Count > 0 || leave.Count > 0))
                _client.Emit(PresenceChanged, new PresenceEvent { Channel = _name, Join = join, Leave = leave });
        }

        private void SettleJoin(JoinedInfo info)
        {
            var waiters = _joinWaiters.ToArray();
            _joinWaiters.Clear();
            foreach (var w in waiters) _client.Post(() => w.TrySetResult(info));
        }

        private void FailJoinWaiters(ParleyException err)
        {
            var waiters = _joinWaiters.ToArray();
            _joinWaiters.Clear();
            foreach (var w in waiters) _client.Post(() => w.TrySetException(err));
        }

        // ---- messages in seq order ----

        private void OnMsg(JsonValue m)
        {
            long seq;
            if (!Message.IsEntry(m) || !m.TryGetLong("seq", out seq)) return;
            if (_repairing) { Hold(m); return; }
            long last = _lastSeq ?? 0;
            if (seq <= last) return; // delivered before (a resume resends)
            if (seq == last + 1)
            {
                Deliver(m, seq);
                return;
            }
            Hold(m);
            Repair();
        }

        private void Deliver(JsonValue m, long seq)
        {
            _lastSeq = seq;
            var op = m.GetString("op");
            var handler = op == "edit" ? MessageEdited : op == "delete" ? MessageDeleted : MessageReceived;
            if (handler != null) _client.Emit(handler, Message.FromFrame(m));
        }

        // Keeps m (newer than what was delivered) in seq order, once. Over the cap the newest
        // goes and is read from history once what is held is delivered (_droppedHigh);
        // dropping the oldest would report seqs history still has as a gap.
        private void Hold(JsonValue m)
        {
            long seq = SeqOf(m);
            if (seq <= (_lastSeq ?? 0)) return;
            int lo = 0, hi = _buffer.Count;
            while (lo < hi)
            {
                int mid = (lo + hi) / 2;
                if (_buffer[mid].Key < seq) lo = mid + 1;
                else hi = mid;
            }
            if (lo < _buffer.Count && _buffer[lo].Key == seq) return;
            _buffer.Insert(lo, new KeyValuePair<long, JsonValue>(seq, m));
            if (_buffer.Count > Math.Max(1, _client.Options.MaxRepairBuffer))
            {
                _droppedHigh = Math.Max(_droppedHigh, _buffer[_buffer.Count - 1].Key);
                _buffer.RemoveAt(_buffer.Count - 1);
            }
        }

        private static long SeqOf(JsonValue m)
        {
            long s;
            m.TryGetLong("seq", out s);
            return s;
        }

        // The first seq past the hole being filled: the oldest held, or past the newest
        // dropped once nothing is held; LastSeq + 1 when there is no hole.
        private long Bound()
        {
            if (_buffer.Count > 0) return _buffer[0].Key;
            return Math.Max(_lastSeq ?? 0, _droppedHigh) + 1;
        }

        // Drops what was delivered from the held messages and delivers what now continues the stream.
        private void Drain()
        {
            int k = 0;
            while (k < _buffer.Count && _buffer[k].Key <= (_lastSeq ?? 0)) k++;
            while (k < _buffer.Count && _buffer[k].Key == (_lastSeq ?? 0) + 1)
            {
                Deliver(_buffer[k].Value, _buffer[k].Key);
                k++;
            }
            if (k > 0) _buffer.RemoveRange(0, k);
        }

        // A leave or a reset: what is held is stale, and a repair in flight ends when its
        // page comes back (a new one may start meanwhile).
        private void ForgetRepair()
        {
            _buffer.Clear();
            _droppedHigh = -1;
            _failedPages = 0;
            _repairGen++;
            _repairing = false;
        }

        // Fills the hole between the last delivered seq and the first held message (or the
        // newest dropped) from history; what history no longer has is reported as a `gap`.
        // One round per history reply; it ends when nothing is held or dropped.
        private void Repair()
        {
            _repairing = true;
            Drain();
            long bound = Bound();
            long last = _lastSeq ?? 0;
            if (bound == last + 1 || !_want)
            {
                _repairing = false;
                _droppedHigh = -1;
                _failedPages = 0;
                return;
            }
            int gen = _repairGen;
            RequestHistory(last, null, (int)Math.Min(HistoryPage, bound - last - 1),
                msgs =>
                {
                    if (gen == _repairGen) OnRepairPage(msgs);
                },
                err =>
                {
                    if (gen != _repairGen) return;
                    if (err.Code == ErrorCodes.Closed || err.Code == ErrorCodes.Left) { _repairing = false; return; }
                    if (!_want) { _repairing = false; return; }
                    if (++_failedPages < MaxFailedPages)
                    {
                        // A read that failed (timed out, refused) is not history's answer: what
                        // it asked for may still be there. Asked again; a gap only after
                        // MaxFailedPages failures in a row.
                        _client.Later(_client.RetryDelay(null), () =>
                        {
                            if (gen == _repairGen && _repairing && _want) Repair();
                        });
                        return;
                    }
                    OnRepairPage(JsonValue.Array());
                });
        }

        private void OnRepairPage(JsonValue msgs)
        {
            if (!_want) { _repairing = false; return; }
            _failedPages = 0;
            var page = new List<KeyValuePair<long, JsonValue>>();
            foreach (var h in msgs.Items)
            {
                long s;
                // Only what is past what was delivered: a page of seqs already delivered is
                // history having nothing after ours (asking again would loop).
                if (Message.IsEntry(h) && h.TryGetLong("seq", out s) && s > (_lastSeq ?? 0))
                    page.Add(new KeyValuePair<long, JsonValue>(s, h));
            }
            page.Sort((a, b) => a.Key.CompareTo(b.Key));
            // Only what neither the page nor what is held covers is a gap: the page may start
            // late (history trimmed), may reach past the first held seq, and what is held may
            // have gained earlier seqs while the page was read (a resume after a reconnect).
            long next = (_lastSeq ?? 0) + 1;
            long oldest = page.Count > 0 ? page[0].Key : long.MaxValue;
            long to = Math.Min(oldest, Bound()) - 1;
            if (to >= next)
            {
                _client.Emit(Gap, new GapInfo { Channel = _name, From = next, To = to });
                _lastSeq = to;
            }
            // The page in order: what continues the stream is delivered at once (with what is
            // held behind it), so a page is never cut down to the buffer's size; only what
            // lies past a hole is held.
            foreach (var h in page)
            {
                if (h.Key == (_lastSeq ?? 0) + 1)
                {
                    Deliver(h.Value, h.Key);
                    Drain();
                }
                else Hold(h.Value);
            }
            Repair();
        }

        // ---- publishing ----

        private static bool IsBusy(PubState s) { return s == PubState.InFlight || s == PubState.Waiting; }

        private void SetState(PublishEntry e, PubState next)
        {
            if (IsBusy(e.State)) _busy--;
            if (IsBusy(next)) _busy++;
            e.State = next;
        }

        private void Pump()
        {
            if (_status != Status.Joined || !_client.IsOpen) return;
            int window = Math.Max(1, _client.Options.MaxInFlight);
            for (var node = _publishes.First; node != null && _busy < window;)
            {
                var e = node.Value;
                node = node.Next; // Submit may settle e (a closed client) and unlink it
                if (e.State != PubState.Queued) continue;
                SetState(e, PubState.InFlight);
                e.Attempts++;
                var entry = e;
                var call = new Call
                {
                    Frame = JsonValue.Object().Set("op", "pub").Set("ch", _name).Set("id", e.Id).Set("body", e.Body),
                    Retry = false,
                };
                call.OnReply = ack =>
                {
                    long seq;
                    ack.TryGetLong("seq", out seq);
                    var dup = ack["dup"];
                    Settle(entry, new Ack { Seq = seq, Dup = dup != null && dup.AsBool, Id = entry.Id }, null);
                    Pump();
                };
                call.OnError = obj => OnPublishError(entry, obj);
                call.OnFail = err =>
                {
                    if (entry.State == PubState.Done) return;
                    if (err.Code == ErrorCodes.Closed) { Settle(entry, null, err); return; }
                    SetState(entry, PubState.Queued); // dropped in flight: resent, same id, after the rejoin
                };
                _client.Submit(call);
            }
        }

        private void OnPublishError(PublishEntry e, JsonValue obj)
        {
            if (e.State == PubState.Done) return;
            if (ErrorCodes.IsRetryable(obj.GetString("code")) && e.Attempts < _client.Options.MaxRetryAttempts)
            {
                SetState(e, PubState.Waiting);
                _client.EmitRetry("pub", _name, obj);
                _client.Later(_client.RetryDelay(obj), () =>
                {
                    if (e.State != PubState.Waiting) return;
                    SetState(e, PubState.Queued);
                    Pump();
                });
                return;
            }
            Settle(e, null, ParleyException.FromFrame(obj));
            Pump();
        }

        private void Settle(PublishEntry e, Ack value, ParleyException err)
        {
            if (e.State == PubState.Done) return;
            SetState(e, PubState.Done);
            if (e.Timeout != null) e.Timeout.Cancel();
            if (e.Node.List != null) _publishes.Remove(e.Node);
            var tcs = e.Tcs;
            if (err != null) _client.Post(() => tcs.TrySetException(err));
            else _client.Post(() => tcs.TrySetResult(value));
        }

        // ---- state and up ----

        private void FlushState(string key)
        {
            StateSlot s;
            if (!_states.TryGetValue(key, out s) || !s.Dirty || s.Timer != null) return;
            if (_status != Status.Joined || !_client.IsOpen) return; // sent after the rejoin
            long now = _client.Now;
            long at = Math.Max(s.LastSent + _client.Options.StateMinIntervalMs, s.HoldUntil);
            if (at > now)
            {
                s.Timer = _client.Later((int)(at - now), () =>
                {
                    s.Timer = null;
                    FlushState(key);
                });
                return;
            }
            long rid = _client.TakeRid();
            var frame = JsonValue.Object().Set("op", "state").Set("ch", _name).Set("key", key).Set("body", s.Body);
            if (_client.SendFrame(frame, rid))
            {
                _stateRids.Add(rid, key);
                s.Dirty = false;
                s.LastSent = now;
            }
        }

        private void ClearStates()
        {
            foreach (var s in _states.Values) if (s.Timer != null) s.Timer.Cancel();
            _states.Clear();
        }

        private void SendUp(JsonValue body)
        {
            long rid = _client.TakeRid();
            if (_client.SendFrame(JsonValue.Object().Set("op", "up").Set("ch", _name).Set("body", body), rid))
                _upRids.Add(rid, body);
            else _ups.Enqueue(body);
        }

        private static long? LongOrNull(JsonValue obj, string key)
        {
            long v;
            return obj.TryGetLong(key, out v) ? v : (long?)null;
        }

        private static IList<string> Strings(JsonValue arr)
        {
            var list = new List<string>();
            if (arr == null) return list;
            foreach (var v in arr.Items) if (v.AsString != null) list.Add(v.AsString);
            return list;
        }
    }

    // rid -> value, forgetting the oldest past a bound (errors for old
    // fire-and-forget frames are then reported on the client instead).
    internal sealed class BoundedMap<T>
    {
        private readonly int _max;
        private readonly Dictionary<long, T> _map = new Dictionary<long, T>();
        private readonly Queue<long> _order = new Queue<long>();

        public BoundedMap(int max) { _max = max; }

        public void Add(long rid, T value)
        {
            _map[rid] = value;
            _order.Enqueue(rid);
            while (_order.Count > _max) _map.Remove(_order.Dequeue());
        }

        public bool TryTake(long rid, out T value)
        {
            if (!_map.TryGetValue(rid, out value)) return false;
            _map.Remove(rid);
            return true;
        }
    }
}
