// TcpTransport against a loopback TcpListener playing the server: frames
// reassembled from 1-byte writes, what the client sends length-prefixed, a
// length over the bound closing with 1009, a peer close reported once.
using System;
using System.Collections.Concurrent;
using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Threading;
using NUnit.Framework;
using Parley;

namespace Parley.Tests
{
    [TestFixture]
    public class TcpTransportTests
    {
        private sealed class Sink : ITransportEvents
        {
            public readonly ManualResetEventSlim Opened = new ManualResetEventSlim();
            public readonly BlockingCollection<string> Messages = new BlockingCollection<string>();
            public readonly ManualResetEventSlim ClosedEvent = new ManualResetEventSlim();
            public int CloseCode, Closes;

            public void OnOpen() { Opened.Set(); }

            public void OnMessage(byte[] bytes, int offset, int count, bool binary)
            {
                Messages.Add(Encoding.UTF8.GetString(bytes, offset, count));
            }

            public void OnClose(int code, string reason)
            {
                CloseCode = code;
                Interlocked.Increment(ref Closes);
                ClosedEvent.Set();
            }
        }

        private TcpListener _listener;
        private TcpTransport _transport;
        private Sink _sink;
        private Socket _peer;

        [SetUp]
        public void Connect()
        {
            _listener = new TcpListener(IPAddress.Loopback, 0);
            _listener.Start();
            int port = ((IPEndPoint)_listener.LocalEndpoint).Port;
            _transport = new TcpTransport { MaxMessageBytes = 1024 };
            _sink = new Sink();
            _transport.Connect("tcp://127.0.0.1:" + port, _sink);
            _peer = _listener.AcceptSocket();
            Assert.IsTrue(_sink.Opened.Wait(5000), "no OnOpen");
        }

        [TearDown]
        public void Stop()
        {
            _transport.Abort();
            _peer.Close();
            _listener.Stop();
        }

        private static byte[] Frame(string json)
        {
            var body = Encoding.UTF8.GetBytes(json);
            var f = new byte[4 + body.Length];
            f[0] = (byte)(body.Length >> 24);
            f[1] = (byte)(body.Length >> 16);
            f[2] = (byte)(body.Length >> 8);
            f[3] = (byte)body.Length;
            Buffer.BlockCopy(body, 0, f, 4, body.Length);
            return f;
        }

        [Test]
        public void FramesSplitAcrossWritesArriveWhole()
        {
            var bytes = Frame("{\"op\":\"direct\",\"body\":\"h\u00e9\"}");
            var two = new byte[bytes.Length * 2];
            Buffer.BlockCopy(bytes, 0, two, 0, bytes.Length);
            Buffer.BlockCopy(bytes, 0, two, bytes.Length, bytes.Length);
            foreach (var b in two)
            {
                _peer.Send(new[] { b });
            }
            string m;
            Assert.IsTrue(_sink.Messages.TryTake(out m, 5000));
            Assert.AreEqual("{\"op\":\"direct\",\"body\":\"h\u00e9\"}", m);
            Assert.IsTrue(_sink.Messages.TryTake(out m, 5000));
            Assert.AreEqual(0, _sink.Closes);
        }

        [Test]
        public void WhatTheClientSendsIsLengthPrefixed()
        {
            _transport.Send(Encoding.UTF8.GetBytes("{\"op\":\"ping\",\"rid\":1}"), false);
            var header = new byte[4];
            int got = 0;
            _peer.ReceiveTimeout = 5000;
            while (got < 4) got += _peer.Receive(header, got, 4 - got, SocketFlags.None);
            int len = (header[0] << 24) | (header[1] << 16) | (header[2] << 8) | header[3];
            Assert.AreEqual(21, len);
            var body = new byte[len];
            got = 0;
            while (got < len) got += _peer.Receive(body, got, len - got, SocketFlags.None);
            Assert.AreEqual("{\"op\":\"ping\",\"rid\":1}", Encoding.UTF8.GetString(body));
        }

        [Test]
        public void ALengthOverTheBoundClosesWith1009()
        {
            _peer.Send(new byte[] { 0, 0, 4, 1 }); // 1025 > 1024
            Assert.IsTrue(_sink.ClosedEvent.Wait(5000));
            Assert.AreEqual(1009, _sink.CloseCode);
            Assert.AreEqual(0, _sink.Messages.Count);
        }

        [Test]
        public void APeerCloseIsReportedOnce()
        {
            _peer.Send(new byte[] { 0, 0 }); // half a header, then gone
            _peer.Shutdown(SocketShutdown.Both);
            _peer.Close();
            Assert.IsTrue(_sink.ClosedEvent.Wait(5000));
            Assert.AreEqual(1006, _sink.CloseCode);
            _transport.Abort();
            Assert.AreEqual(1, _sink.Closes);
        }
    }
}
