// A container credentials endpoint (what the ECS agent or EKS Pod Identity
// serves) and a DynamoDB stand-in that records which keys signed each request,
// for src/store/dynamodb/credentials_test.cc.
//   GET /creds   with Authorization: TOKEN -> fresh keys AKIDCONTAINER<n>,
//                secret<n>, token<n>, expiring LIFETIME_S seconds from now
//                (401 without the token; 500 while POST /fail?n=K has K left)
//   POST /       DynamoDB's JSON protocol: records the Credential's key id and
//                x-amz-security-token, answers every call as DescribeTable of an
//                ACTIVE table
//   GET /stats   {"fetches":n,"unauthorized":u,"requests":[{"key":...,"token":...}]}
// Usage: node creds_server.mjs PORT TOKEN LIFETIME_S. Prints "creds server ready".
import http from "node:http";

const [port, token, lifetime] = [Number(process.argv[2]), process.argv[3], Number(process.argv[4])];
let fetches = 0, unauthorized = 0, failLeft = 0;
const requests = [];

http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const url = new URL(req.url, "http://x");
    const json = (status, body) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.method === "GET" && url.pathname === "/creds") {
      if (req.headers.authorization !== token) { unauthorized++; return json(401, { message: "bad token" }); }
      if (failLeft > 0) { failLeft--; return json(500, { message: "agent busy" }); }
      fetches++;
      return json(200, { AccessKeyId: `AKIDCONTAINER${fetches}`, SecretAccessKey: `secret${fetches}`,
                         Token: `token${fetches}`, RoleArn: "arn:aws:iam::123456789012:role/parley",
                         Expiration: new Date(Date.now() + lifetime * 1000).toISOString() });
    }
    if (req.method === "POST" && url.pathname === "/fail") {
      failLeft = Number(url.searchParams.get("n") ?? 1);
      return json(200, {});
    }
    if (req.method === "GET" && url.pathname === "/stats") return json(200, { fetches, unauthorized, requests });
    if (req.method === "POST" && url.pathname === "/") {
      const m = /Credential=([^/]+)\//.exec(req.headers.authorization ?? "");
      requests.push({ key: m ? m[1] : "", token: req.headers["x-amz-security-token"] ?? "" });
      res.writeHead(200, { "content-type": "application/x-amz-json-1.0" });
      return res.end(JSON.stringify({ Table: { TableName: "t", TableStatus: "ACTIVE" } }));
    }
    json(404, {});
  });
}).listen(port, "127.0.0.1", () => console.log("creds server ready"));
