// The WebSocket transport of a Unity WebGL build, where ClientWebSocket does
// not exist: the browser's WebSocket, through Plugins/WebGL/ParleySocket.jslib.
// The default transport factory picks it in WebGL players; nothing else in
// the SDK changes (WebGL runs one thread, so the browser's callbacks come
// between frames and Poll hands them to the game as on other platforms).
//
// Built here with UNITY_WEBGL defined against a stub of Unity's
// MonoPInvokeCallback attribute (sdk/csharp/CMakeLists.txt) but never run:
// no Unity WebGL player runs on this machine.
//
// Runs on the browser's one thread: the jslib calls back synchronously there.
#if UNITY_WEBGL && !UNITY_EDITOR
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using AOT;

namespace Parley
{
    /// <summary>A WebSocket transport over the browser's WebSocket (Unity WebGL players).</summary>
    public sealed class WebGLTransport : IWebSocketTransport
    {
        /// <inheritdoc/>
        public string SubProtocol { get; set; }

        private delegate void OpenCallback(int id);
        private delegate void MessageCallback(int id, IntPtr data, int length, int binary);
        private delegate void CloseCallback(int id, int code, IntPtr reason);

        [DllImport("__Internal")]
        private static extern void ParleyWsOpen(int id, string url, string protocol, OpenCallback onOpen, MessageCallback onMessage,
                                                CloseCallback onClose);

        [DllImport("__Internal")]
        private static extern void ParleyWsSend(int id, byte[] data, int length, int binary);

        [DllImport("__Internal")]
        private static extern void ParleyWsClose(int id, int code);

        private static readonly Dictionary<int, WebGLTransport> Live = new Dictionary<int, WebGLTransport>();
        private static int _nextId;

        private readonly int _id = ++_nextId;
        private ITransportEvents _events;

        /// <inheritdoc/>
        public void Connect(string url, ITransportEvents events)
        {
            _events = events;
            Live[_id] = this;
            ParleyWsOpen(_id, url, SubProtocol ?? "", OnOpen, OnMessage, OnClose);
        }

        /// <inheritdoc/>
        public void Send(byte[] bytes, bool binary) { ParleyWsSend(_id, bytes, bytes.Length, binary ? 1 : 0); }

        /// <inheritdoc/>
        public void Close(int code, string reason) { Drop(code, reason ?? ""); }

        /// <inheritdoc/>
        public void Abort() { Drop(4000, "aborted"); }

        // A browser socket cannot be dropped without its close handshake, so the
        // drop is reported at once and the socket forgotten.
        private void Drop(int code, string reason)
        {
            if (!Live.Remove(_id)) return;
            ParleyWsClose(_id, code);
            _events.OnClose(code == 1000 ? 1000 : 1006, reason);
        }

        [MonoPInvokeCallback(typeof(OpenCallback))]
        private static void OnOpen(int id)
        {
            WebGLTransport t;
            if (Live.TryGetValue(id, out t)) t._events.OnOpen();
        }

        [MonoPInvokeCallback(typeof(MessageCallback))]
        private static void OnMessage(int id, IntPtr data, int length, int binary)
        {
            WebGLTransport t;
            if (!Live.TryGetValue(id, out t)) return;
            var bytes = new byte[length];
            Marshal.Copy(data, bytes, 0, length);
            t._events.OnMessage(bytes, 0, length, binary != 0);
        }

        [MonoPInvokeCallback(typeof(CloseCallback))]
        private static void OnClose(int id, int code, IntPtr reason)
        {
            WebGLTransport t;
            if (!Live.TryGetValue(id, out t)) return;
            Live.Remove(id);
            t._events.OnClose(code, Utf8At(reason));
        }

        private static string Utf8At(IntPtr p)
        {
            if (p == IntPtr.Zero) return "";
            int n = 0;
            while (Marshal.ReadByte(p, n) != 0) n++;
            var b = new byte[n];
            Marshal.Copy(p, b, 0, n);
            return System.Text.Encoding.UTF8.GetString(b);
        }
    }
}
#endif
