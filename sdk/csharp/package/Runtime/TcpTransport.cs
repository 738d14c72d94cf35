// PROTOCOL.md's raw TCP transport (`server.tcp_listen`): each frame is a 4-byte
// big-endian length and that many bytes of UTF-8 JSON. For .NET game servers
// and bots on the same network as Parley (no WebSocket handshake or masking).
// TCP has no close codes: a connection that ends is reported as 1006, and the
// client learns a refused hello from its error frame instead (ParleyClient).
// A length over MaxMessageBytes closes the connection (1009).
//
// Connect/Send/Close/Abort are called on the Poll thread; a receive loop and a
// send loop run as tasks on the thread pool and report through ITransportEvents.
using System;
using System.Collections.Concurrent;
using System.Net.Sockets;
using System.Threading;
using System.Threading.Tasks;

namespace Parley
{
    /// <summary>A transport over raw TCP (<c>tcp://host:port</c>), length-prefixed frames.</summary>
    public sealed class TcpTransport : ITransport
    {
        /// <summary>The largest server frame accepted, bytes (default 16 MiB).</summary>
        public int MaxMessageBytes = 16 << 20;

        private readonly TcpClient _tcp = new TcpClient { NoDelay = true };
        private readonly ConcurrentQueue<byte[]> _sendQueue = new ConcurrentQueue<byte[]>();
        private readonly SemaphoreSlim _sendSignal = new SemaphoreSlim(0);
        private ITransportEvents _events;
        private NetworkStream _stream;
        private int _reported;
        private volatile bool _closing;

        /// <inheritdoc/>
        public void Connect(string url, ITransportEvents events)
        {
            _events = events;
            Uri uri;
            if (!Uri.TryCreate(url, UriKind.Absolute, out uri) || uri.Scheme != "tcp" || uri.Port <= 0)
            {
                Report(1006, "bad url (tcp://host:port): " + url);
                return;
            }
            Task.Run(() => Run(uri.Host, uri.Port));
        }

        /// <inheritdoc/>
        public void Send(byte[] bytes, bool binary)
        {
            var framed = new byte[4 + bytes.Length];
            framed[0] = (byte)(bytes.Length >> 24);
            framed[1] = (byte)(bytes.Length >> 16);
            framed[2] = (byte)(bytes.Length >> 8);
            framed[3] = (byte)bytes.Length;
            Buffer.BlockCopy(bytes, 0, framed, 4, bytes.Length);
            _sendQueue.Enqueue(framed);
            _sendSignal.Release();
        }

        /// <inheritdoc/>
        public void Close(int code, string reason)
        {
            _closing = true;
            _sendQueue.Enqueue(null); // after what is queued
            _sendSignal.Release();
        }

        /// <inheritdoc/>
        public void Abort()
        {
            Report(1006, "aborted");
            Shut();
        }

        private async Task Run(string host, int port)
        {
            try
            {
                await _tcp.ConnectAsync(host, port).ConfigureAwait(false);
                _stream = _tcp.GetStream();
            }
            catch (Exception e)
            {
                Report(1006, "connect failed: " + e.GetBaseException().Message);
                Shut();
                return;
            }
            if (Volatile.Read(ref _reported) != 0) { Shut(); return; }
            _events.OnOpen();
            var sending = SendLoop();
            await ReceiveLoop().ConfigureAwait(false);
            _sendSignal.Release();
            try
            {
                await sending.ConfigureAwait(false);
            }
            catch (Exception)
            {
                // the receive side already reported
            }
            Shut();
        }

        private async Task ReceiveLoop()
        {
            var header = new byte[4];
            var buf = new byte[64 * 1024];
            try
            {
                for (;;)
                {
                    if (!await ReadExactly(header, 4).ConfigureAwait(false))
                    {
                        Report(_closing ? 1000 : 1006, "connection closed");
                        return;
                    }
                    long len = ((long)header[0] << 24) | ((long)header[1] << 16) | ((long)header[2] << 8) | header[3];
                    if (len > MaxMessageBytes)
                    {
                        Report(1009, "server frame of " + len + " bytes, over " + MaxMessageBytes);
                        return;
                    }
                    if (len > buf.Length) buf = new byte[len];
                    if (!await ReadExactly(buf, (int)len).ConfigureAwait(false))
                    {
                        Report(1006, "connection closed inside a frame");
                        return;
                    }
                    _events.OnMessage(buf, 0, (int)len, false);
                    if (buf.Length > 256 * 1024) buf = new byte[64 * 1024]; // do not keep a burst's buffer
                }
            }
            catch (Exception e)
            {
                Report(_closing ? 1000 : 1006, e.GetBaseException().Message);
            }
        }

        // False when the peer closed before count bytes came.
        private async Task<bool> ReadExactly(byte[] buf, int count)
        {
            int got = 0;
            while (got < count)
            {
                int n = await _stream.ReadAsync(buf, got, count - got).ConfigureAwait(false);
                if (n == 0) return false;
                got += n;
            }
            return true;
        }

        private async Task SendLoop()
        {
            for (;;)
            {
                await _sendSignal.WaitAsync().ConfigureAwait(false);
                if (Volatile.Read(ref _reported) != 0) return;
                byte[] framed;
                if (!_sendQueue.TryDequeue(out framed)) continue;
                try
                {
                    if (framed == null)
                    {
                        _tcp.Client.Shutdown(SocketShutdown.Send); // the server sees the end and closes its side
                        return;
                    }
                    await _stream.WriteAsync(framed, 0, framed.Length).ConfigureAwait(false);
                }
                catch (Exception e)
                {
                    Report(1006, "send failed: " + e.GetBaseException().Message);
                    Shut();
                    return;
                }
            }
        }

        private void Shut()
        {
            try
            {
                _tcp.Close();
            }
            catch (Exception)
            {
                // already closed
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
