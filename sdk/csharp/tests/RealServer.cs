// The real `parley` binary for the NUnit tests that need a server (category
// "server", ctest csharp_sdk_server_test): a config in a fresh temporary
// folder, `parley serve --config`, the ports from its "parley ready http=P
// tcp=P" line (both listeners on port 0), and HS256 tokens for its demo
// tenant; what sdk/conformance/lib/server.mjs does for the JS tests.
//
// Output is read on the Process's own threads; the ports are set before the
// ready event is, and read after waiting for it.
using System;
using System.Diagnostics;
using System.IO;
using System.Security.Cryptography;
using System.Text;
using System.Text.RegularExpressions;
using System.Threading;

namespace Parley.Tests
{
    internal sealed class RealServer : IDisposable
    {
        public const string Secret = "sdk-test-secret-demo-0123456789abcdef";
        public const string ApiKey = "sdk-key-demo";
        private static readonly Regex ReadyLine = new Regex(@"parley ready http=(\d+) tcp=(\d+)");

        private readonly string _dir;
        private readonly Process _proc;
        private readonly StringBuilder _log = new StringBuilder();
        private readonly ManualResetEventSlim _ready = new ManualResetEventSlim();
        private int _httpPort, _tcpPort;

        /// <summary>The server binary (PARLEY_BIN), or null when that is not set or not a file.</summary>
        public static string Binary
        {
            get
            {
                var p = Environment.GetEnvironmentVariable("PARLEY_BIN");
                return !string.IsNullOrEmpty(p) && File.Exists(p) ? p : null;
            }
        }

        /// <summary>Starts the server; <paramref name="worldExtra"/> goes into namespace <c>world</c>'s table.</summary>
        public RealServer(string worldExtra)
        {
            _dir = Path.Combine(Path.GetTempPath(), "parley-cs-test-" + Guid.NewGuid().ToString("N"));
            Directory.CreateDirectory(_dir);
            var config = Path.Combine(_dir, "parley.toml");
            File.WriteAllText(config,
                "[server]\n" +
                "listen = \"127.0.0.1:0\"\n" +
                "tcp_listen = \"127.0.0.1:0\"\n" +
                "store = \"embedded\"\n" +
                "data_dir = \"" + Path.Combine(_dir, "data") + "\"\n" +
                "log_level = \"warn\"\n\n" +
                "[tenants.demo]\n" +
                "secret = \"" + Secret + "\"\n" +
                "api_key = \"" + ApiKey + "\"\n\n" +
                "[tenants.demo.namespaces.world]\n" +
                "durable = false\n" +
                "tick_ms = 20\n" +
                "presence = true\n" +
                worldExtra + "\n");
            var psi = new ProcessStartInfo(Binary, "serve --config \"" + config + "\"")
            {
                UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true,
            };
            _proc = new Process { StartInfo = psi };
            _proc.OutputDataReceived += (s, e) => OnLine(e.Data, true);
            _proc.ErrorDataReceived += (s, e) => OnLine(e.Data, false);
            _proc.Start();
            _proc.BeginOutputReadLine();
            _proc.BeginErrorReadLine();
            var sw = Stopwatch.StartNew();
            while (!_ready.Wait(50))
            {
                if (!_proc.HasExited && sw.ElapsedMilliseconds < 20000) continue;
                _proc.WaitForExit(1000); // the rest of its output
                var log = Log;
                Dispose();
                throw new InvalidOperationException("parley did not start within 20 s (or exited):\n" + log);
            }
        }

        public string WsUrl { get { return "ws://127.0.0.1:" + _httpPort + "/v1/ws"; } }
        public string TcpUrl { get { return "tcp://127.0.0.1:" + _tcpPort; } }

        /// <summary>What the server printed so far (for a failing test's message).</summary>
        public string Log
        {
            get
            {
                lock (_log) return _log.ToString();
            }
        }

        private void OnLine(string line, bool stdout)
        {
            if (line == null) return;
            lock (_log) _log.AppendLine(line);
            if (!stdout || _ready.IsSet) return;
            var m = ReadyLine.Match(line);
            if (!m.Success) return;
            _httpPort = int.Parse(m.Groups[1].Value);
            _tcpPort = int.Parse(m.Groups[2].Value);
            _ready.Set();
        }

        /// <summary>A client token for <paramref name="user"/> of the demo tenant (PROTOCOL.md "Connecting").</summary>
        public static string Token(string user)
        {
            long exp = DateTimeOffset.UtcNow.ToUnixTimeSeconds() + 3600;
            string header = B64Url(Encoding.UTF8.GetBytes("{\"alg\":\"HS256\",\"typ\":\"JWT\"}"));
            string payload = B64Url(Encoding.UTF8.GetBytes("{\"sub\":\"" + user + "\",\"tenant\":\"demo\",\"exp\":" + exp + "}"));
            using (var h = new HMACSHA256(Encoding.UTF8.GetBytes(Secret)))
                return header + "." + payload + "." + B64Url(h.ComputeHash(Encoding.ASCII.GetBytes(header + "." + payload)));
        }

        private static string B64Url(byte[] b)
        {
            return Convert.ToBase64String(b).TrimEnd('=').Replace('+', '-').Replace('/', '_');
        }

        public void Dispose()
        {
            try
            {
                if (!_proc.HasExited) _proc.Kill();
                _proc.WaitForExit(5000);
            }
            catch (InvalidOperationException)
            {
                // never started
            }
            try
            {
                Directory.Delete(_dir, true);
            }
            catch (IOException)
            {
                // the test's temporary folder; the next run makes its own
            }
        }
    }
}
