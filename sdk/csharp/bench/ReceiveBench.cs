// The C# SDK's receive path, measured as sdk/conformance/BENCH.md defines it:
// server frames (JSON, as the socket delivers them) replayed from memory into
// the client through its public transport seam (ITransportEvents.OnMessage,
// where the real transports hand over what they read), decoded, queued,
// ordered by the channel and delivered to the application's MessageReceived
// handler, with the Poll() pump run after each replayed frame as a game loop
// would. All on this one thread, no network. The stand-in transport answers
// hello and join as the server would, so the client is in its ordinary joined
// state. Also reported: the rate per second of the process's CPU time, which
// a shared machine disturbs less than wall time.
//
//   taskset -c 1 mono parley-receive-bench.exe [--msgs 200000] [--batch 1] [--runs 5] [--enc json|msgpack]
// (without --enc both encodings: the same frames as MessagePack, binary messages.)
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Text;
using Parley;

internal static class ReceiveBench
{
    private const string Ch = "chat:bench";

    // Answers hello and join like the server; the bench feeds the rest.
    private sealed class ReplayTransport : ITransport
    {
        public ITransportEvents Events;
        public ICodec Codec;

        public void Connect(string url, ITransportEvents events)
        {
            Events = events;
            events.OnOpen();
        }

        public void Send(byte[] bytes, bool binary)
        {
            var f = binary ? MsgPackCodec.Instance.Decode(bytes, 0, bytes.Length) : JsonReader.Parse(bytes, 0, bytes.Length);
            string op = f.GetString("op");
            if (op == "hello")
                Deliver("{\"op\":\"welcome\",\"rid\":" + f["rid"] + ",\"conn\":\"c1\",\"user\":\"u-bench\",\"tenant\":\"demo\",\"heartbeat_ms\":25000}");
            else if (op == "join")
                Deliver("{\"op\":\"joined\",\"rid\":" + f["rid"] + ",\"ch\":\"" + Ch + "\",\"seq\":0,\"recovered\":true}");
        }

        public void Close(int code, string reason) { }
        public void Abort() { }

        private void Deliver(string json)
        {
            var b = Codec.Binary ? Codec.Encode(JsonValue.Parse(json)) : Encoding.UTF8.GetBytes(json);
            Events.OnMessage(b, 0, b.Length, Codec.Binary);
        }
    }

    private static int Main(string[] args)
    {
        int msgs = Arg(args, "msgs", 200000);
        int runs = Arg(args, "runs", 5);
        var batches = Array.IndexOf(args, "--batch") >= 0 ? new[] { Arg(args, "batch", 1) } : new[] { 1, 16 };
        int e = Array.IndexOf(args, "--enc");
        var encs = e >= 0 && e + 1 < args.Length ? new[] { args[e + 1] } : new[] { "json", "msgpack" };
        foreach (string enc in encs)
        foreach (int batch in batches)
        {
            ICodec codec = enc == "msgpack" ? (ICodec)MsgPackCodec.Instance : JsonCodec.Instance;
            var rates = new List<double>();
            var cpuRates = new List<double>();
            for (int r = 0; r < runs; r++)
            {
                double cpu;
                rates.Add(Run(msgs, batch, codec, out cpu));
                cpuRates.Add(cpu);
            }
            var sorted = new List<double>(rates);
            sorted.Sort();
            cpuRates.Sort();
            var runList = JsonValue.Array();
            foreach (var x in rates) runList.Add(Math.Round(x));
            Console.WriteLine(JsonValue.Object().Set("sdk", "csharp").Set("runtime", "mono " + MonoVersion())
                .Set("enc", codec.Name).Set("batch", batch).Set("msgs", msgs)
                .Set("msgs_per_sec", Math.Round(sorted[sorted.Count / 2])).Set("runs", runList)
                .Set("msgs_per_cpu_sec", Math.Round(cpuRates[cpuRates.Count / 2])));
        }
        return 0;
    }

    // One run in a fresh client: 20,000 messages of warm-up, then msgs timed.
    private static double Run(int msgs, int batch, ICodec codec, out double cpuRate)
    {
        ReplayTransport t = null;
        var client = new ParleyClient(new ClientOptions
        {
            Url = "ws://bench.invalid/v1/ws", Token = "t", Codec = codec,
            TransportFactory = () => t = new ReplayTransport { Codec = codec },
        });
        var ch = client.Channel(Ch);
        long count = 0, lastSeq = 0, sum = 0;
        ch.MessageReceived += m =>
        {
            count++;
            lastSeq = m.Seq;
            long i;
            m.Body.TryGetLong("i", out i);
            sum += i;
        };
        var joined = ch.Join();
        for (int k = 0; k < 10 && !joined.IsCompleted; k++) client.Poll();
        if (!joined.IsCompleted) throw new InvalidOperationException("the stand-in did not get the client joined");

        int warm = Math.Min(20000, msgs);
        bool bin = codec.Binary;
        foreach (var f in Frames(1, warm, batch, codec))
        {
            t.Events.OnMessage(f, 0, f.Length, bin);
            client.Poll();
        }
        var timed = Frames(warm + 1, msgs, batch, codec); // encoded before the clock starts
        count = 0;
        sum = 0;
        var proc = Process.GetCurrentProcess();
        var cpu0 = proc.TotalProcessorTime;
        var sw = Stopwatch.StartNew();
        foreach (var f in timed)
        {
            t.Events.OnMessage(f, 0, f.Length, bin);
            client.Poll();
        }
        sw.Stop();
        proc.Refresh();
        cpuRate = msgs / (proc.TotalProcessorTime - cpu0).TotalSeconds;
        client.Close();
        long expectSum = ((long)warm + 1 + warm + msgs) * msgs / 2;
        if (count != msgs || lastSeq != warm + msgs || sum != expectSum)
            throw new InvalidOperationException("delivered " + count + " of " + msgs + " (last seq " + lastSeq +
                                                "): the bench measured nothing");
        return msgs / sw.Elapsed.TotalSeconds;
    }

    // BENCH.md's message: the server's msg frame with a small object body;
    // batch 1: one object per frame, else arrays of `batch`.
    private static List<byte[]> Frames(int first, int count, int batch, ICodec codec)
    {
        string text = new string('x', 64);
        var frames = new List<byte[]>();
        var sb = new StringBuilder();
        for (int s = first; s < first + count; s += batch)
        {
            int n = Math.Min(batch, first + count - s);
            sb.Length = 0;
            if (batch > 1) sb.Append('[');
            for (int k = 0; k < n; k++)
            {
                int seq = s + k;
                if (k > 0) sb.Append(',');
                sb.Append("{\"op\":\"msg\",\"ch\":\"").Append(Ch).Append("\",\"seq\":").Append(seq)
                  .Append(",\"from\":\"u-sender\",\"id\":\"c-").Append(seq).Append("\",\"ts\":").Append(1764460800123L + seq)
                  .Append(",\"body\":{\"i\":").Append(seq).Append(",\"text\":\"").Append(text).Append("\"}}");
            }
            if (batch > 1) sb.Append(']');
            frames.Add(codec.Binary ? MsgPack(JsonValue.Parse(sb.ToString())) : Encoding.UTF8.GetBytes(sb.ToString()));
        }
        return frames;
    }

    // The codec encodes client frames (objects); a server batch is an array of them.
    private static byte[] MsgPack(JsonValue frame)
    {
        if (frame.Type == JsonType.Object) return MsgPackCodec.Instance.Encode(frame);
        var parts = new List<byte>();
        parts.Add(0xdc);
        parts.Add((byte)(frame.Count >> 8));
        parts.Add((byte)frame.Count);
        foreach (var e in frame.Items) parts.AddRange(MsgPackCodec.Instance.Encode(e));
        return parts.ToArray();
    }

    private static int Arg(string[] args, string name, int dflt)
    {
        int k = Array.IndexOf(args, "--" + name);
        return k >= 0 && k + 1 < args.Length ? int.Parse(args[k + 1]) : dflt;
    }

    private static string MonoVersion()
    {
        var t = Type.GetType("Mono.Runtime");
        if (t == null) return "none";
        var m = t.GetMethod("GetDisplayName", System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Static);
        var name = m != null ? (string)m.Invoke(null, null) : "?";
        int sp = name.IndexOf(' ');
        return sp > 0 ? name.Substring(0, sp) : name;
    }
}
