// The C# SDK's conformance driver (sdk/conformance/DRIVER.md): an application
// of the SDK, using only its public API, that the harness steers over stdin
// and that reports what the application saw on stdout, one JSON object per
// line. Logs go to stderr.
//
// Threads: a reader thread turns stdin lines into commands and wakes the main
// thread; the main thread runs the commands, the client's Poll and every
// callback, as a game loop would.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.IO;
using System.Net;
using System.Net.Security;
using System.Security.Cryptography.X509Certificates;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using Parley;

internal sealed class Driver
{
    private readonly ConcurrentQueue<string> _commands = new ConcurrentQueue<string>();
    private readonly AutoResetEvent _wake = new AutoResetEvent(false);
    private readonly TextWriter _out;
    private readonly HashSet<string> _wired = new HashSet<string>();
    private volatile ParleyClient _client;
    private string _token;
    private bool _stdinClosed;

    private Driver()
    {
        _out = new StreamWriter(Console.OpenStandardOutput(), new UTF8Encoding(false)) { AutoFlush = true, NewLine = "\n" };
    }

    private static int Main()
    {
        return new Driver().Run();
    }

    private int Run()
    {
        var reader = new Thread(ReadStdin) { IsBackground = true, Name = "stdin" };
        reader.Start();
        Emit(Ev("ready").Set("sdk", "csharp").Set("version", ParleyClient.Version)
            .Set("features", JsonValue.Array("state_delta")));
        for (;;)
        {
            string line;
            while (_commands.TryDequeue(out line))
            {
                if (line == null) { _stdinClosed = true; break; }
                if (!Execute(line)) return Exit();
            }
            if (_stdinClosed) return Exit();
            var c = _client;
            if (c != null)
            {
                c.Poll();
                c.WaitForWork(50);
            }
            else _wake.WaitOne(50);
        }
    }

    private void ReadStdin()
    {
        var stdin = new StreamReader(Console.OpenStandardInput(), new UTF8Encoding(false));
        string line;
        while ((line = stdin.ReadLine()) != null)
        {
            if (line.Trim().Length == 0) continue;
            _commands.Enqueue(line);
            Wake();
        }
        _commands.Enqueue(null);
        Wake();
    }

    private void Wake()
    {
        _wake.Set();
        var c = _client;
        if (c != null) c.Wake();
    }

    private int Exit()
    {
        var c = _client;
        if (c != null)
        {
            c.Close();
            c.Poll();
        }
        _out.Flush();
        return 0;
    }

    // False on `exit`.
    private bool Execute(string line)
    {
        JsonValue cmd;
        try
        {
            cmd = JsonValue.Parse(line);
        }
        catch (FormatException e)
        {
            Emit(Ev("error").Set("code", "bad_cmd").Set("msg", e.Message));
            return true;
        }
        string name = cmd.GetString("cmd");
        try
        {
            switch (name)
            {
                case "connect": Connect(cmd); break;
                case "token": _token = cmd.GetString("token"); break;
                case "join": Join(cmd); break;
                case "leave": Channel(cmd).Leave(); break;
                case "publish": Publish(cmd); break;
                case "state": Channel(cmd).SetState(cmd.GetString("key"), cmd["body"]); break;
                case "up": Channel(cmd).Up(cmd["body"]); break;
                case "close":
                    if (_client != null) _client.Close();
                    break;
                case "exit": return false;
                default:
                    Emit(Ev("error").Set("code", "unknown_cmd").Set("cmd", cmd["cmd"] ?? JsonValue.Null));
                    break;
            }
        }
        catch (ParleyException e)
        {
            Emit(Ev("error").Set("ch", cmd["ch"] ?? JsonValue.Null).Set("code", e.Code).Set("msg", e.Message));
        }
        catch (Exception e) when (e is InvalidOperationException || e is ArgumentException)
        {
            Emit(Ev("error").Set("ch", cmd["ch"] ?? JsonValue.Null).Set("code", "bad_cmd").Set("msg", e.Message));
        }
        return true;
    }

    private void Connect(JsonValue cmd)
    {
        if (_client != null) _client.Close();
        _wired.Clear();
        _token = cmd.GetString("token");
        string enc = cmd.GetString("enc") ?? "json";
        if (enc != "json" && enc != "msgpack")
        {
            Emit(Ev("error").Set("code", "unsupported").Set("msg", "enc is json or msgpack, not " + enc));
            return;
        }
        var o = new ClientOptions
        {
            Url = cmd.GetString("url"),
            TokenProvider = () => Task.FromResult(_token),
            OnCallbackException = e => Console.Error.WriteLine("driver: callback threw: " + e),
        };
        var rc = cmd["reconnect"];
        if (rc != null && rc.Type == JsonType.Object)
        {
            o.Reconnect = new ReconnectOptions();
            if (rc.Has("minMs")) o.Reconnect.MinMs = (int)rc["minMs"].AsDouble;
            if (rc.Has("maxMs")) o.Reconnect.MaxMs = (int)rc["maxMs"].AsDouble;
            if (rc.Has("factor")) o.Reconnect.Factor = rc["factor"].AsDouble;
        }
        if (cmd.Has("heartbeatMs")) o.HeartbeatMs = (int)cmd["heartbeatMs"].AsDouble;
        if (enc == "msgpack") o.Codec = MsgPackCodec.Instance;
        var deltas = cmd["deltas"];
        o.StateDeltas = deltas != null && deltas.AsBool;
        var caFile = cmd.GetString("caFile");
        if (caFile != null) TrustOnly(caFile);
        var c = new ParleyClient(o);
        c.Opened += w => Emit(Ev("open").Set("conn_id", w.Conn).Set("reconnect", w.Reconnect).Set("enc", w.Enc)
            .Set("deltas", w.StateDeltas));
        c.Disconnected += d => Emit(Ev("disconnect").Set("code", d.Code).Set("reason", d.Reason ?? "")
            .Set("willReconnect", d.WillReconnect).Set("delayMs", d.DelayMs));
        c.Bye += b => Emit(Ev("bye").Set("code", b.Code).Set("reconnectMs",
            b.ReconnectMs.HasValue ? (JsonValue)b.ReconnectMs.Value : JsonValue.Null));
        c.Retry += r => Emit(Ev("retry").Set("op", r.Op).Set("ch", r.Channel).Set("code", r.Code)
            .Set("retryMs", r.RetryMs.HasValue ? (JsonValue)r.RetryMs.Value : JsonValue.Null));
        c.Direct += d => Emit(Ev("direct").Set("body", d["body"] ?? JsonValue.Null));
        c.Error += e => Emit(Ev("error").Set("code", e.Code).Set("msg", e.Message));
        c.Closed += () => Emit(Ev("closed"));
        _client = c;
        c.Connect();
    }

    private Channel Channel(JsonValue cmd)
    {
        if (_client == null) throw new InvalidOperationException("connect first");
        string name = cmd.GetString("ch");
        if (name == null) throw new ArgumentException("ch is required");
        var ch = _client.Channel(name);
        if (_wired.Add(name))
        {
            ch.Joined += j => Emit(Ev("joined").Set("ch", j.Channel).Set("seq", j.Seq).Set("recovered", j.Recovered)
                .Set("epoch", j.Epoch).Set("members", Strings(j.Members)));
            ch.MessageReceived += m => Emit(Ev("msg").Set("ch", m.Channel).Set("seq", m.Seq).Set("from", m.From)
                .Set("id", m.Id).Set("body", m.Body));
            ch.StateReceived += s =>
            {
                var e = Ev("state").Set("ch", s.Channel).Set("from", s.From).Set("key", s.Key).Set("body", s.Body);
                if (s.Tick.HasValue) e.Set("tick", s.Tick.Value);
                if (s.Ts.HasValue) e.Set("ts", s.Ts.Value);
                Emit(e);
            };
            ch.PresenceChanged += p => Emit(Ev("presence").Set("ch", p.Channel).Set("join", Strings(p.Join))
                .Set("leave", Strings(p.Leave)));
            ch.Gap += g => Emit(Ev("gap").Set("ch", g.Channel).Set("from", g.From).Set("to", g.To));
            ch.Reset += r => Emit(Ev("reset").Set("ch", r.Channel).Set("lastSeq", r.LastSeq).Set("seq", r.Seq));
            ch.Error += e => Emit(Ev("error").Set("ch", name).Set("code", e.Code).Set("msg", e.Message));
        }
        return ch;
    }

    private void Join(JsonValue cmd)
    {
        var ch = Channel(cmd);
        long since;
        ch.Join(cmd.TryGetLong("since", out since) ? (long?)since : null);
    }

    // wss:// to the harness's self-signed certificate (DRIVER.md connect.caFile).
    // .NET Standard 2.0's ClientWebSocket has no validation callback of its
    // own; on Mono (and .NET Framework) it consults ServicePointManager's, so
    // an application with a private CA does what this does.
    private static void TrustOnly(string pemFile)
    {
        var pem = File.ReadAllText(pemFile);
        int a = pem.IndexOf("-----BEGIN CERTIFICATE-----", StringComparison.Ordinal);
        int b = pem.IndexOf("-----END CERTIFICATE-----", StringComparison.Ordinal);
        if (a < 0 || b < a) throw new InvalidDataException("no certificate in " + pemFile);
        a += "-----BEGIN CERTIFICATE-----".Length;
        var der = Convert.FromBase64String(pem.Substring(a, b - a).Replace("\r", "").Replace("\n", ""));
        var ca = new X509Certificate2(der);
        // Mono's ClientWebSocket verifies with its own trust store and never asks
        // ServicePointManager: the certificate goes into a user store of this
        // process only (XDG_CONFIG_HOME of a fresh folder, so nothing of the
        // machine's or the user's trust changes).
        if (Type.GetType("Mono.Runtime") != null)
        {
            var home = Path.Combine(Path.GetTempPath(), "parley-driver-trust-" + System.Diagnostics.Process.GetCurrentProcess().Id);
            Directory.CreateDirectory(home);
            Environment.SetEnvironmentVariable("XDG_CONFIG_HOME", home);
            AppDomain.CurrentDomain.ProcessExit += (o, e) => { try { Directory.Delete(home, true); } catch (IOException) { } };
            // BoringSSL's hashed-folder lookup (Mono's "new-certs"): <subject hash>.0.
            var trust = Path.Combine(home, ".mono", "new-certs", "Trust");
            Directory.CreateDirectory(trust);
            var hash = System.Diagnostics.Process.Start(new System.Diagnostics.ProcessStartInfo("openssl",
                "x509 -hash -noout -in \"" + pemFile + "\"") { RedirectStandardOutput = true, UseShellExecute = false });
            string h = hash.StandardOutput.ReadToEnd().Trim();
            hash.WaitForExit();
            File.Copy(pemFile, Path.Combine(trust, h + ".0"), true);
        }
        ServicePointManager.ServerCertificateValidationCallback = (sender, cert, chain, errors) =>
        {
            if (errors == SslPolicyErrors.None) return true;
            // The harness's certificate is its own CA: the server must present exactly it.
            return cert != null && Convert.ToBase64String(cert.GetRawCertData()) == Convert.ToBase64String(ca.RawData);
        };
    }

    private void Publish(JsonValue cmd)
    {
        var ch = Channel(cmd);
        long n, start;
        cmd.TryGetLong("n", out n);
        cmd.TryGetLong("start", out start);
        long pad;
        cmd.TryGetLong("pad", out pad);
        string padding = pad > 0 ? new string('x', (int)Math.Min(pad, 16 << 20)) : null;
        var tag = cmd["tag"];
        var extra = cmd["body"];
        string name = ch.Name;
        for (long k = 0; k < n; k++)
        {
            long i = start + k;
            var body = JsonValue.Object();
            if (extra != null && extra.Type == JsonType.Object)
                foreach (var m in extra.Members) body.Set(m.Key, m.Value);
            body.Set("i", i);
            if (tag != null) body.Set("tag", tag);
            if (padding != null) body.Set("pad", padding);
            ch.Publish(body).ContinueWith(t =>
            {
                if (t.IsFaulted)
                {
                    var e = t.Exception.GetBaseException() as ParleyException;
                    Emit(Ev("publish_failed").Set("ch", name).Set("i", i).Set("code", e != null ? e.Code : "internal"));
                    return;
                }
                var ack = t.Result;
                Emit(Ev("published").Set("ch", name).Set("i", i).Set("id", ack.Id).Set("seq", ack.Seq).Set("dup", ack.Dup));
            }, TaskContinuationOptions.ExecuteSynchronously);
        }
    }

    private static JsonValue Strings(IList<string> list)
    {
        var a = JsonValue.Array();
        foreach (var s in list) a.Add(s);
        return a;
    }

    private static JsonValue Ev(string ev)
    {
        return JsonValue.Object().Set("ev", ev);
    }

    private void Emit(JsonValue line)
    {
        _out.Write(line.ToString());
        _out.Write('\n');
    }
}
