#!/usr/bin/env python3
# A member with a small receive buffer reads nothing while another publishes 12 MB
# into their room, then reads it all: every msg must arrive whole, once, in seq order
# (the floor's path for bytes a socket does not take at once: the pending buffer, or
# with --io-uring the kernel finishing a short send before the connection's next
# frames). Usage: floor_slow_reader.py PORT
import base64, json, os, socket, struct, sys, time
port = int(sys.argv[1])
def conn(rcvbuf=0):
    s = socket.socket()
    if rcvbuf: s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)  # before connect: the window follows
    s.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(f"GET /v1/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
    buf = b""
    while b"\r\n\r\n" not in buf: buf += s.recv(4096)
    assert buf.startswith(b"HTTP/1.1 101"), buf
    return s, bytearray(buf.split(b"\r\n\r\n", 1)[1])
def send(s, obj):
    p = json.dumps(obj).encode(); m = os.urandom(4)
    h = bytes([0x81]) + (bytes([0x80 | len(p)]) if len(p) < 126 else bytes([0x80 | 126]) + struct.pack(">H", len(p)) if len(p) < 65536 else bytes([0x80 | 127]) + struct.pack(">Q", len(p)))
    s.sendall(h + m + bytes(b ^ m[i % 4] for i, b in enumerate(p)))
def frames(s, buf, want):
    out = []
    while len(out) < want:
        while True:
            if len(buf) >= 2:
                n = buf[1] & 0x7f; off = 2
                if n == 126: n = struct.unpack(">H", buf[2:4])[0]; off = 4
                elif n == 127: n = struct.unpack(">Q", buf[2:10])[0]; off = 10
                if len(buf) >= off + n:
                    assert buf[0] == 0x81, buf[:4]
                    out.append(json.loads(buf[off:off + n])); del buf[:off + n]; break
            d = s.recv(1 << 20)
            if not d: raise SystemExit(f"closed after {len(out)} frames")
            buf += d
    return out
a, abuf = conn(131072); b, bbuf = conn()
send(a, {"op": "hello", "rid": 1}); send(a, {"op": "join", "ch": "r", "rid": 2})
frames(a, abuf, 2)
send(b, {"op": "hello", "rid": 1}); send(b, {"op": "join", "ch": "r", "rid": 2}); frames(b, bbuf, 2)
N = 400; body = "x" * 30000
for i in range(N):
    send(b, {"op": "pub", "ch": "r", "id": f"m{i}", "rid": 10 + i, "body": body + str(i)})
    frames(b, bbuf, 2)  # ack + own echo: b keeps up
time.sleep(0.5)
got = frames(a, abuf, N)  # the server had to wait on a full socket for most of them
seqs = [f["seq"] for f in got]
assert seqs == list(range(1, N + 1)), seqs[:10]
assert all(f["body"] == body + str(i) for i, f in enumerate(got))
send(a, {"op": "ping", "rid": 99}); assert frames(a, abuf, 1)[0]["op"] == "pong"
print(f"ok: {N} frames of {len(body)} bytes in order to a member that read nothing while they were sent")
