// A proxy in front of dynalite that answers a share of the requests as DynamoDB
// does when a table is over its capacity: HTTP 400 with a ThrottlingException
// (or, every other time, ProvisionedThroughputExceededException) and no write.
// Of the rest, a share PARTIAL of BatchWriteItem requests is forwarded with
// only its first half of puts, and answered 200 with the other half as
// UnprocessedItems (what DynamoDB does when a partition is busy); dynalite does
// not check signatures, so the shortened body passes. Everything else is
// forwarded unchanged. GET /stats: {"throttled":n,"partial":p,"forwarded":m}.
// Usage: node throttle_proxy.mjs PORT TARGET_PORT SHARE [PARTIAL [KEY CERT]]
// (shares in [0,1], of BatchWriteItem requests; other operations always pass;
// with KEY and CERT, PEM files, it listens with TLS: https:// to the persister).
// Prints "throttle proxy ready" once listening. Loopback only.
import fs from "node:fs";
import http from "node:http";
import https from "node:https";

const [port, target, share] = [Number(process.argv[2]), Number(process.argv[3]), Number(process.argv[4])];
const partialShare = Number(process.argv[5] ?? 0);
let throttled = 0, partial = 0, forwarded = 0;
const agent = new http.Agent({ keepAlive: true });

const tls = process.argv[7] ? { key: fs.readFileSync(process.argv[6]), cert: fs.readFileSync(process.argv[7]) } : null;
const serve = (handler) => (tls ? https.createServer(tls, handler) : http.createServer(handler));

serve((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    if (req.method === "GET" && req.url === "/stats") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ throttled, partial, forwarded }));
      return;
    }
    const op = String(req.headers["x-amz-target"] || "");
    if (op.endsWith(".BatchWriteItem") && Math.random() < share) {
      const type = throttled++ % 2 ? "ProvisionedThroughputExceededException" : "ThrottlingException";
      const body = JSON.stringify({ __type: "com.amazonaws.dynamodb.v20120810#" + type,
                                    message: "The level of configured provisioned throughput for the table was exceeded." });
      res.writeHead(400, { "content-type": "application/x-amz-json-1.0", "content-length": Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    let body = Buffer.concat(chunks);
    let held = null;  // table -> the puts answered as unprocessed
    if (op.endsWith(".BatchWriteItem") && Math.random() < partialShare) {
      const req1 = JSON.parse(body.toString("utf8"));
      held = {};
      for (const [table, puts] of Object.entries(req1.RequestItems)) {
        if (puts.length < 2) continue;
        const keep = Math.ceil(puts.length / 2);
        held[table] = puts.slice(keep);
        req1.RequestItems[table] = puts.slice(0, keep);
      }
      if (Object.keys(held).length === 0) {
        held = null;
      } else {
        partial++;
        body = Buffer.from(JSON.stringify(req1));
      }
    }
    forwarded++;
    const headers = { ...req.headers, "content-length": String(body.length) };
    const up = http.request({ host: "127.0.0.1", port: target, method: req.method, path: req.url,
                              headers, agent }, (r) => {
      if (!held || r.statusCode !== 200) {
        res.writeHead(r.statusCode, r.headers);
        r.pipe(res);
        return;
      }
      const got = [];
      r.on("data", (c) => got.push(c));
      r.on("end", () => {
        const answer = JSON.parse(Buffer.concat(got).toString("utf8"));
        answer.UnprocessedItems = { ...(answer.UnprocessedItems ?? {}) };
        for (const [table, puts] of Object.entries(held)) {
          answer.UnprocessedItems[table] = [...(answer.UnprocessedItems[table] ?? []), ...puts];
        }
        const out = JSON.stringify(answer);
        res.writeHead(200, { "content-type": "application/x-amz-json-1.0", "content-length": Buffer.byteLength(out) });
        res.end(out);
      });
    });
    up.on("error", () => { res.writeHead(502); res.end(); });
    up.end(body);
  });
}).listen(port, "127.0.0.1", () => console.log("throttle proxy ready"));
