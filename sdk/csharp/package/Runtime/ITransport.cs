// The one thing the SDK needs from a socket: open, send a message, close, and
// report what happened. WebSocketTransport is the default (ClientWebSocket); a
// WebGL build plugs in a browser-WebSocket bridge (README "WebGL"), and the
// tests a fake one.
namespace Parley
{
    /// <summary>
    /// Receives a transport's events. May be called from any thread; the client
    /// hands everything over to the thread that calls <see cref="ParleyClient.Poll"/>.
    /// </summary>
    public interface ITransportEvents
    {
        /// <summary>The connection is open; frames may be sent.</summary>
        void OnOpen();

        /// <summary>
        /// One complete message. The bytes are read before this returns, so the
        /// transport may reuse its buffer afterwards.
        /// </summary>
        void OnMessage(byte[] bytes, int offset, int count, bool binary);

        /// <summary>
        /// The connection is gone (or never opened). <paramref name="code"/> is the
        /// WebSocket close code, 1006 when the socket died without one. Called once.
        /// </summary>
        void OnClose(int code, string reason);
    }

    /// <summary>
    /// One connection attempt. Created by <see cref="ClientOptions.TransportFactory"/>
    /// for every (re)connect; its methods are called on the Poll thread and must not block.
    /// </summary>
    public interface ITransport
    {
        /// <summary>Starts connecting to <paramref name="url"/>; reports through <paramref name="events"/>.</summary>
        void Connect(string url, ITransportEvents events);

        /// <summary>Queues one message; messages leave in the order sent.</summary>
        void Send(byte[] bytes, bool binary);

        /// <summary>Closes after what was queued, with a close code (1000: normal).</summary>
        void Close(int code, string reason);

        /// <summary>Drops the connection at once (a dead peer may never finish a close handshake).</summary>
        void Abort();
    }
}

namespace Parley
{
    /// <summary>
    /// A WebSocket transport that can offer a subprotocol: the client sets it before
    /// Connect when its codec needs one (<see cref="MsgPackCodec.SubProtocol"/>). A
    /// WebSocket transport of your own implements this to carry MessagePack.
    /// </summary>
    public interface IWebSocketTransport : ITransport
    {
        /// <summary>The subprotocol to offer in the handshake (null: none).</summary>
        string SubProtocol { get; set; }
    }
}
