// The default transport: System.Net.WebSockets.ClientWebSocket (in .NET
// Standard 2.0; Unity's Mono and IL2CPP on desktop, mobile and consoles have
// it, WebGL does not: README "WebGL"). One receive loop and one send loop run
// as tasks on the thread pool; ClientWebSocket allows one send and one receive
// at a time, so sends queue here. A server message larger than MaxMessageBytes
// closes the connection (1009): the server is trusted no more than any peer.
//
// Connect/Send/Close/Abort are called on the Poll thread; the loops run on
// pool threads and report through ITransportEvents.
using System;
using System.Collections.Concurrent;
using System.Net.WebSockets;
using System.Threading;
using System.Threading.Tasks;

namespace Parley
{
    /// <summary>A WebSocket transport over <see cref="ClientWebSocket"/>.</summary>
    public sealed class WebSocketTransport : IWebSocketTransport
    {
        /// <inheritdoc/>
        public string SubProtocol { get; set; }

        /// <summary>The largest server message accepted, bytes (default 16 MiB).</summary>
        public int MaxMessageBytes = 16 << 20;

        private readonly ClientWebSocket _ws = new ClientWebSocket();
        private readonly CancellationTokenSource _cts = new CancellationTokenSource();
        private readonly ConcurrentQueue<Outgoing> _sendQueue = new ConcurrentQueue<Outgoing>();
        private readonly SemaphoreSlim _sendSignal = new SemaphoreSlim(0);
        private ITransportEvents _events;
        private int _reported;

        private struct Outgoing
        {
            public byte[] Bytes;
            public bool Binary;
            public bool Close;
            public int Code;
            public string Reason;
        }

        /// <summary>The underlying socket's options (headers, proxy, keep-alive), before Connect.</summary>
        public ClientWebSocketOptions SocketOptions { get { return _ws.Options; } }

        /// <inheritdoc/>
        public void Connect(string url, ITransportEvents events)
        {
            _events = events;
            Uri uri;
            try
            {
                uri = new Uri(url);
            }
            catch (UriFormatException e)
            {
                Report(1006, "bad url: " + e.Message);
                return;
            }
            if (!string.IsNullOrEmpty(SubProtocol)) _ws.Options.AddSubProtocol(SubProtocol);
            Task.Run(() => Run(uri));
        }

        /// <inheritdoc/>
        public void Send(byte[] bytes, bool binary)
        {
            _sendQueue.Enqueue(new Outgoing { Bytes = bytes, Binary = binary });
            _sendSignal.Release();
        }

        /// <inheritdoc/>
        public void Close(int code, string reason)
        {
            _sendQueue.Enqueue(new Outgoing { Close = true, Code = code, Reason = reason });
            _sendSignal.Release();
        }

        /// <inheritdoc/>
        public void Abort()
        {
            try
            {
                _cts.Cancel();
                _ws.Abort();
            }
            catch (Exception)
            {
                // already gone
            }
            Report(1006, "aborted");
        }

        private async Task Run(Uri uri)
        {
            try
            {
                await _ws.ConnectAsync(uri, _cts.Token).ConfigureAwait(false);
            }
            catch (Exception e)
            {
                Report(1006, "connect failed: " + e.GetBaseException().Message);
                return;
            }
            _events.OnOpen();
            var sending = SendLoop();
            await ReceiveLoop().ConfigureAwait(false);
            _sendSignal.Release(); // let the send loop see the end
            try
            {
                await sending.ConfigureAwait(false);
            }
            catch (Exception)
            {
                // the receive side already reported
            }
            _ws.Dispose();
        }

        private async Task ReceiveLoop()
        {
            var buf = new byte[64 * 1024];
            int len = 0;
            try
            {
                for (;;)
                {
                    if (len == buf.Length)
                    {
                        if (buf.Length >= MaxMessageBytes)
                        {
                            Report(1009, "server message over " + MaxMessageBytes + " bytes");
                            _cts.Cancel();
                            _ws.Abort();
                            return;
                        }
                        Array.Resize(ref buf, Math.Min(buf.Length * 2, MaxMessageBytes));
                    }
                    var r = await _ws.ReceiveAsync(new ArraySegment<byte>(buf, len, buf.Length - len), _cts.Token)
                        .ConfigureAwait(false);
                    if (r.MessageType == WebSocketMessageType.Close)
                    {
                        int code = r.CloseStatus.HasValue ? (int)r.CloseStatus.Value : 1005;
                        Report(code, r.CloseStatusDescription ?? "");
                        try
                        {
                            await _ws.CloseOutputAsync(WebSocketCloseStatus.NormalClosure, "", CancellationToken.None)
                                .ConfigureAwait(false);
                        }
                        catch (Exception)
                        {
                            // the peer may already be gone
                        }
                        return;
                    }
                    len += r.Count;
                    if (!r.EndOfMessage) continue;
                    _events.OnMessage(buf, 0, len, r.MessageType == WebSocketMessageType.Binary);
                    len = 0;
                    if (buf.Length > 256 * 1024) buf = new byte[64 * 1024]; // do not keep a burst's buffer
                }
            }
            catch (Exception e)
            {
                Report(1006, e.GetBaseException().Message);
            }
        }

        private async Task SendLoop()
        {
            for (;;)
            {
                await _sendSignal.WaitAsync().ConfigureAwait(false);
                if (Volatile.Read(ref _reported) != 0) return;
                Outgoing o;
                if (!_sendQueue.TryDequeue(out o)) continue;
                try
                {
                    if (o.Close)
                    {
                        await _ws.CloseOutputAsync((WebSocketCloseStatus)o.Code, o.Reason ?? "", _cts.Token)
                            .ConfigureAwait(false);
                        return;
                    }
                    var type = o.Binary ? WebSocketMessageType.Binary : WebSocketMessageType.Text;
                    await _ws.SendAsync(new ArraySegment<byte>(o.Bytes), type, true, _cts.Token).ConfigureAwait(false);
                }
                catch (Exception e)
                {
                    Report(1006, "send failed: " + e.GetBaseException().Message);
                    try
                    {
                        _ws.Abort();
                    }
                    catch (Exception)
                    {
                        // already gone
                    }
                    return;
                }
            }
        }

        private void Report(int code, string reason)
        {
            if (Interlocked.Exchange(ref _reported, 1) != 0) return;
            var ev = _events;
            if (ev != null) ev.OnClose(code, reason);
        }
    }
}
