// Starts examples/world's app server alone, for bench/worlds/world_6k_upstream.sh:
// it receives what Parley forwards (POST /events) and publishes its world through
// Parley's HTTP API, exactly as in the example. Prints {"port","pid"} once
// listening; GET /stats.json gives its request (batches) and event counts.
//   node bench/worlds/app_server_run.mjs PORT PARLEY_HTTP API_KEY SECRET
import { startAppServer } from '../../examples/world/app_server.mjs';

const [port, parleyHttp, apiKey, secret] = process.argv.slice(2);
const app = await startAppServer({ port: Number(port), parleyHttp, apiKey, secret, tenant: 'demo' });
console.log(JSON.stringify({ port: app.port, pid: process.pid }));
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => app.close().then(() => process.exit(0)));
