// The receive path's cost on one core: msg frames as the server sends them
// (arrays of `msg` objects, one per tick, or single objects) are handed to the
// client through its transport interface, decoded, queued, ordered by the
// channel and delivered to a MessageReceived handler that reads the body,
// all on this one thread. No socket is involved: this measures the SDK, not
// the network. Prints one JSON line per configuration: messages per second,
// the median of --runs runs, per second of wall time and per second of the
// process's CPU time.
//
//   mono parley-receive-bench.exe [--messages 200000] [--batch 1,20] [--pad 0,256] [--runs 5]
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Text;
using Parley;

internal static class ReceiveBench
{
    // Captures the events sink so the bench can feed frames as a socket would.
    private sealed class FeedTransport : ITransport
    {
        public ITransportEvents Events;
        public void Connect(string url, ITransportEvents events) { Events = events; }
        public void Send(byte[] bytes, bool binary) { LastSent = bytes; }
        public void Close(int code, string reason) { }
        public void Abort() { }
        public byte[] LastSent;
    }

    private static int Main(string[] args)
    {
        var a = new Dictionary<string, string>();
        for (int i = 0; i + 1 < args.Length; i += 2) a[args[i].TrimStart('-')] = args[i + 1];
        int messages = a.ContainsKey("messages") ? int.Parse(a["messages"]) : 200000;
        int runs = a.ContainsKey("runs") ? int.Parse(a["runs"]) : 5;
        var batches = Ints(a.ContainsKey("batch") ? a["batch"] : "1,20");
        var pads = Ints(a.ContainsKey("pad") ? a["pad"] : "0,256");
        foreach (int pad in pads)
            foreach (int batch in batches)
            {
                var frames = Frames(messages, batch, pad);
                long bytes = 0;
                foreach (var f in frames) bytes += f.Length;
                double cpu;
                Run(frames, messages, out cpu); // warm-up (JIT)
                var rates = new List<double>();
                var cpuRates = new List<double>();
                for (int r = 0; r < runs; r++)
                {
                    rates.Add(Run(frames, messages, out cpu));
                    cpuRates.Add(cpu);
                }
                rates.Sort();
                cpuRates.Sort();
                Console.WriteLine(JsonValue.Object().Set("sdk", "csharp").Set("runtime", "mono " + MonoVersion())
                    .Set("codec", "json").Set("messages", messages).Set("batch", batch).Set("pad", pad)
                    .Set("frame_bytes_avg", bytes / frames.Count).Set("runs", runs)
                    .Set("msgs_per_s_median", Math.Round(rates[runs / 2]))
                    .Set("msgs_per_s_min", Math.Round(rates[0])).Set("msgs_per_s_max", Math.Round(rates[runs - 1]))
                    .Set("msgs_per_cpu_s_median", Math.Round(cpuRates[runs / 2])));
            }
        return 0;
    }

    // One run: a fresh client, welcomed and joined at seq 0, then every frame fed
    // and polled; returns delivered messages per second of wall time, and in
    // cpuRate per second of the process's CPU time (GC included), which a
    // shared machine disturbs less.
    private static double Run(List<byte[]> frames, int messages, out double cpuRate)
    {
        FeedTransport t = null;
        var client = new ParleyClient(new ClientOptions
        {
            Url = "ws://bench/v1/ws", Token = "t", PublishTimeoutMs = 0,
            TransportFactory = () => t = new FeedTransport(),
        });
        var ch = client.Channel("chat:bench");
        long delivered = 0, sum = 0;
        ch.MessageReceived += m =>
        {
            delivered++;
            sum += (long)m.Body["i"].AsDouble; // the application reads its body
        };
        ch.Join();
        t.Events.OnOpen();
        client.Poll();
        Feed(t, "{\"op\":\"welcome\",\"rid\":1,\"conn\":\"c1\",\"user\":\"u1\",\"tenant\":\"demo\",\"heartbeat_ms\":25000}");
        client.Poll();
        var join = JsonReader.Parse(t.LastSent, 0, t.LastSent.Length);
        Feed(t, "{\"op\":\"joined\",\"rid\":" + join["rid"] + ",\"ch\":\"chat:bench\",\"seq\":0,\"recovered\":true}");
        client.Poll();

        var proc = Process.GetCurrentProcess();
        var cpu0 = proc.TotalProcessorTime;
        var sw = Stopwatch.StartNew();
        foreach (var f in frames)
        {
            t.Events.OnMessage(f, 0, f.Length, false);
            client.Poll();
        }
        sw.Stop();
        proc.Refresh();
        cpuRate = messages / (proc.TotalProcessorTime - cpu0).TotalSeconds;
        if (delivered != messages) throw new InvalidOperationException("delivered " + delivered + " of " + messages);
        if (sum != (long)messages * (messages - 1) / 2) throw new InvalidOperationException("bodies were not read right");
        client.Close();
        return messages / sw.Elapsed.TotalSeconds;
    }

    private static void Feed(FeedTransport t, string json)
    {
        var b = Encoding.UTF8.GetBytes(json);
        t.Events.OnMessage(b, 0, b.Length, false);
    }

    // Frames shaped like the server's: {"op":"msg","ch","seq","from","id","ts","body"}.
    private static List<byte[]> Frames(int messages, int batch, int pad)
    {
        var frames = new List<byte[]>();
        string padding = new string('x', pad);
        var sb = new StringBuilder();
        for (int seq = 1; seq <= messages;)
        {
            sb.Length = 0;
            int n = Math.Min(batch, messages - seq + 1);
            if (batch > 1) sb.Append('[');
            for (int k = 0; k < n; k++, seq++)
            {
                if (k > 0) sb.Append(',');
                sb.Append("{\"op\":\"msg\",\"ch\":\"chat:bench\",\"seq\":").Append(seq)
                  .Append(",\"from\":\"u2\",\"id\":\"k3j9x0ab-").Append(seq).Append("\",\"ts\":").Append(1764460800000L + seq)
                  .Append(",\"body\":{\"i\":").Append(seq - 1).Append(",\"tag\":\"bench\"");
                if (pad > 0) sb.Append(",\"pad\":\"").Append(padding).Append('"');
                sb.Append("}}");
            }
            if (batch > 1) sb.Append(']');
            frames.Add(Encoding.UTF8.GetBytes(sb.ToString()));
        }
        return frames;
    }

    private static List<int> Ints(string s)
    {
        var list = new List<int>();
        foreach (var p in s.Split(',')) list.Add(int.Parse(p));
        return list;
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
