#!/usr/bin/env python3
"""deploy/prometheus and deploy/grafana against a real Prometheus and a real Parley.

Starts `parley serve` (embedded store, port 0) and Debian's `prometheus` on a
loopback port scraping it every second with deploy/prometheus's config and
rules, drives a chat load with parley-bench, then evaluates every PromQL
expression of the dashboard and of the alert rules through Prometheus' HTTP
API. Skips (77) when prometheus or promtool is not installed.

Usage: prometheus_test.py PARLEY_BIN PARLEY_BENCH_BIN SOURCE_DIR
"""
import http.server
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import yaml

RATE_WINDOW = "20s"  # stands in for Grafana's $__rate_interval (20 scrapes)
SECRET = "prom-test-secret-0123456789abcdef"
DEADLINE = time.monotonic() + 120  # the whole test, whatever hangs


def fail(msg):
    print("FAIL:", msg, flush=True)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def wait_for(what, pred, seconds):
    end = min(time.monotonic() + seconds, DEADLINE)
    while time.monotonic() < end:
        try:
            if pred():
                return
        except OSError:
            pass
        time.sleep(0.2)
    fail(f"timed out waiting for {what}")


def dashboard_exprs(dash):
    """(panel title, expr) of every target, panels nested in rows included."""
    out = []

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                out.append((p["title"], t["expr"]))
            walk(p.get("panels", []))

    walk(dash["panels"])
    return out


def grafana_to_promql(expr):
    # $tenant is a multi-value variable whose "All" is .*; $__rate_interval
    # is what Grafana computes from the scrape interval.
    return expr.replace("$__rate_interval", RATE_WINDOW).replace("$tenant", ".*")


def main():
    if len(sys.argv) != 4:
        fail(__doc__)
    parley_bin, bench_bin, src = sys.argv[1:]
    for tool in ("prometheus", "promtool"):
        if shutil.which(tool) is None:
            print(f"SKIP: {tool} is not installed (scripts/setup.sh installs it)")
            sys.exit(77)
    prom_dir = os.path.join(src, "deploy/prometheus")
    dash = json.load(open(os.path.join(src, "deploy/grafana/parley.json")))
    rules = yaml.safe_load(open(os.path.join(prom_dir, "parley_alerts.yml")))

    # promtool: the rules file and its unit tests (each alert fires on its series).
    for args in (["check", "rules", "parley_alerts.yml"], ["test", "rules", "parley_alerts_test.yml"],
                 ["check", "config", "prometheus.yml"]):
        r = subprocess.run(["promtool", *args], cwd=prom_dir, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            fail(f"promtool {' '.join(args)}:\n{r.stdout}{r.stderr}")
        print(f"promtool {' '.join(args)}: ok")

    tmp = tempfile.mkdtemp(prefix="parley-prom-")
    procs = []

    def cleanup(*_):
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    signal.signal(signal.SIGTERM, lambda *_: (cleanup(), sys.exit(1)))
    try:
        run(parley_bin, bench_bin, prom_dir, dash, rules, tmp, procs)
    finally:
        cleanup()


class AppServer(http.server.BaseHTTPRequestHandler):
    """The game's app server of the chat namespace's upstream: takes every batch."""
    batches = 0

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        AppServer.batches += 1
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def run(parley_bin, bench_bin, prom_dir, dash, rules, tmp, procs):
    # --- An upstream app server, so the upstream metrics have series ---------
    app = http.server.ThreadingHTTPServer(("127.0.0.1", 0), AppServer)
    threading.Thread(target=app.serve_forever, daemon=True).start()
    upstream = f"http://127.0.0.1:{app.server_address[1]}/events"

    # --- Parley -------------------------------------------------------------
    with open(os.path.join(tmp, "parley.toml"), "w") as f:
        f.write(f"""[server]
listen = "127.0.0.1:0"
store = "embedded"
data_dir = "{tmp}/data"
threads = 2
log_level = "warn"

[tenants.demo]
secret = "{SECRET}"
api_key = "prom-test-key"

[tenants.demo.namespaces.chat]
upstream = "{upstream}"
""")
    parley_log = open(os.path.join(tmp, "parley.log"), "w+")
    parley = subprocess.Popen([parley_bin, "serve", "--config", os.path.join(tmp, "parley.toml")],
                              stdout=subprocess.PIPE, stderr=parley_log, text=True)
    procs.append(parley)
    line = parley.stdout.readline()
    m = re.search(r"parley ready http=(\d+)", line)
    if not m:
        fail(f"parley did not start: {line!r}")
    port = int(m.group(1))
    target = f"127.0.0.1:{port}"

    # Every metric name the dashboard and rules use is in Parley's exposition
    # (a typo would otherwise only show as "no data").
    _, exposition = http_get(f"http://{target}/metrics")
    families = set(re.findall(r"^# TYPE (\S+) ", exposition, re.M))
    series_names = set()
    for f_ in families:
        series_names |= {f_, f_ + "_bucket", f_ + "_sum", f_ + "_count"}
    exprs = [(f"dashboard: {t}", e) for t, e in dashboard_exprs(dash)]
    alert_rules = [r for g in rules["groups"] for r in g["rules"]]
    exprs_alerts = [(f"alert {r['alert']}", " ".join(r["expr"].split())) for r in alert_rules]
    for what, e in exprs + exprs_alerts:
        for name in re.findall(r"\b(parley_[a-z_]+)", e):
            if name not in series_names:
                fail(f"{what}: {name} is not in Parley's /metrics")

    # --- Prometheus, configured from deploy/prometheus ------------------------
    cfg = yaml.safe_load(open(os.path.join(prom_dir, "prometheus.yml")))
    cfg["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    cfg["rule_files"] = [os.path.join(prom_dir, r) for r in cfg["rule_files"]]
    job = cfg["scrape_configs"][0]
    job["scrape_interval"] = "1s"
    job["static_configs"] = [{"targets": [target]}]
    with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
        yaml.safe_dump(cfg, f)
    prom_port = free_port()
    prom_url = f"http://127.0.0.1:{prom_port}"
    prom_log = open(os.path.join(tmp, "prometheus.log"), "w+")
    prom = subprocess.Popen(["prometheus", f"--config.file={tmp}/prometheus.yml",
                             f"--storage.tsdb.path={tmp}/tsdb",
                             f"--web.listen-address=127.0.0.1:{prom_port}"],
                            stdout=prom_log, stderr=subprocess.STDOUT)
    procs.append(prom)
    wait_for("Prometheus ready", lambda: http_get(prom_url + "/-/ready")[0] == 200, 30)

    def query(expr):
        url = prom_url + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        status, body = http_get(url)
        doc = json.loads(body)
        if doc.get("status") != "success":
            fail(f"query {expr!r}: {body}")
        if doc["data"]["resultType"] != "vector":
            fail(f"query {expr!r}: result type {doc['data']['resultType']}")
        return doc["data"]["result"]

    def target_up():
        r = query('up{job="parley"}')
        return len(r) == 1 and r[0]["value"][1] == "1"

    wait_for("Prometheus scraping Parley", target_up, 30)

    # --- Load: 20 connections in 2 channels, 200 msg/s, for 14 s --------------
    bench_log = open(os.path.join(tmp, "bench.log"), "w+")
    bench = subprocess.Popen([bench_bin, "chat", "--target", target, "--secret", SECRET,
                              "--conns", "20", "--channel-size", "10", "--rate", "200",
                              "--duration", "14", "--ramp-up", "1", "--src-addrs", "1",
                              "--no-progress", "--no-history"],
                             stdout=bench_log, stderr=subprocess.STDOUT)
    procs.append(bench)
    # Queries run while the load is on: connections are open, and the 20 s rate
    # windows hold at least 8 s of traffic.
    time.sleep(10)
    if bench.poll() is not None:
        bench_log.seek(0)
        fail("parley-bench ended early:\n" + bench_log.read())

    checked = 0
    # Expressions whose value must be a positive number under this load; every
    # other expression must return at least one sample (zero is fine: a
    # counter of refusals is legitimately 0, and histogram_quantile of a stage
    # histogram is a sample per stage even if one stage saw nothing).
    must_be_positive = re.compile(
        r"parley_connections\{|parley_messages_total|parley_ack_seconds|parley_frames_|"
        r"parley_deliveries|parley_bytes_out|parley_sockets|parley_channels|opened_total|"
        r"parley_store_epoch")
    # Not the upstream rates: the joins' events go out in the first second, and
    # a series first scraped after that has a flat counter (rate 0) in the window.
    for what, expr in exprs:
        result = query(grafana_to_promql(expr))
        if not result:
            fail(f"{what}: {expr!r} returned an empty vector")
        if must_be_positive.search(expr) and "refused" not in expr and "slow_consumer" not in expr:
            values = [float(s["value"][1]) for s in result]
            if not any(math.isfinite(v) and v > 0 for v in values):
                fail(f"{what}: {expr!r} has no positive value under load: {result}")
        checked += 1
        print(f"ok  {what}: {len(result)} series  {expr}")

    # The tenant variable's label_values() query.
    status, body = http_get(prom_url + "/api/v1/label/tenant/values?" +
                            urllib.parse.urlencode({"match[]": "parley_connections"}))
    if "demo" not in json.loads(body)["data"]:
        fail(f"label_values(parley_connections, tenant) lacks demo: {body}")
    print("ok  dashboard variable tenant: label_values(parley_connections, tenant)")

    # A latency alert may fire here for a real reason: this test's load shares
    # the cores with whatever else the machine runs (a CI box building, other
    # test binaries under ctest -j), and an ack p99 above 50 ms is then the
    # truth. Accepted only for latency signals, only when each firing sample is
    # the signal's own value above the threshold (the rule compares what it
    # says) and only when the machine is measurably oversubscribed.
    def overloaded_latency(what, m, signal_result, firing):
        if "_seconds" not in m.group(1) or m.group(2) not in (">", ">="):
            return False
        threshold = float(m.group(3))
        signal_values = {json.dumps(s["metric"], sort_keys=True): float(s["value"][1])
                         for s in signal_result}
        for s in firing:
            v = float(s["value"][1])
            if v <= threshold or abs(signal_values.get(json.dumps(s["metric"], sort_keys=True),
                                                       math.nan) - v) > max(1e-9, v * 0.5):
                return False
        load1 = os.getloadavg()[0]
        cpus = os.cpu_count() or 1
        if load1 <= cpus:
            return False
        print(f"note {what}: fires at {[s['value'][1] for s in firing]} s with load average "
              f"{load1:.1f} on {cpus} cores (an oversubscribed machine, not a wrong rule)")
        return True

    # Alert rules: the signal (left of the comparison) has data; the whole
    # expression is a well-formed vector, empty on this healthy node (no alert
    # fires under a small load; that they fire when they should is
    # parley_alerts_test.yml's job).
    for what, expr in exprs_alerts:
        m = re.fullmatch(r"(.*\S)\s+(>|<|>=|<=|==)\s+([0-9.e+-]+)", expr)
        if not m:
            fail(f"{what}: {expr!r} is not '<signal> <op> <threshold>'")
        signal_result = query(m.group(1))
        if not signal_result:
            fail(f"{what}: signal {m.group(1)!r} returned an empty vector")
        firing = query(expr)
        if firing and not overloaded_latency(what, m, signal_result, firing):
            fail(f"{what}: fires on a healthy node: {firing}")
        checked += 2
        print(f"ok  {what}: signal {len(signal_result)} series, not firing  {expr}")

    # Prometheus loaded and evaluated every rule without error.
    _, body = http_get(prom_url + "/api/v1/rules")
    loaded = [r for g in json.loads(body)["data"]["groups"] for r in g["rules"]]
    if len(loaded) != len(alert_rules):
        fail(f"Prometheus loaded {len(loaded)} rules, the file has {len(alert_rules)}")
    bad = [(r["name"], r.get("health"), r.get("lastError")) for r in loaded if r.get("health") != "ok"]
    if bad:
        fail(f"rules not healthy in Prometheus: {bad}")

    if AppServer.batches == 0:
        fail("the upstream app server got no batch: the upstream series were not exercised")
    app.shutdown()
    rc = bench.wait(timeout=max(1, DEADLINE - time.monotonic()))
    if rc != 0:
        bench_log.seek(0)
        fail(f"parley-bench exited {rc}:\n{bench_log.read()}")
    print(f"PASS: {checked} expressions evaluated, {len(loaded)} rules healthy")


if __name__ == "__main__":
    main()
