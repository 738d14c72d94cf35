// What a table holds per partition key, for checks over more items than
// table_items.mjs should print (bench/persister_run.sh's exactly-once check):
// a consistent Scan of every page with the reference client
// (@aws-sdk/client-dynamodb), one line per partition key, tab-separated:
//   key, items, distinct seqs, min seq, max seq
// then one line "#size\t<items>\t<mean bytes>\t<max bytes>\t<items over 1 KiB>":
// each item's size as DynamoDB bills it (attribute names plus values: a
// string's UTF-8 bytes, a number's (significant digits / 2) + 1), so what one
// put costs in write units (1 per KiB, rounded up) is measured, not guessed.
// "no table" and exit 0 when the table is missing.
// Usage: node table_seqs.mjs ENDPOINT TABLE
import { scanTable } from "./scan_table.mjs";

const [endpoint, table] = [process.argv[2], process.argv[3]];

function attrSize(name, v) {
  let n = Buffer.byteLength(name);
  if (v.S !== undefined) n += Buffer.byteLength(v.S);
  else if (v.N !== undefined) n += Math.ceil(v.N.replace(/^[-0.]+|\.|0+$/g, "").length / 2) + 1;
  else n += Buffer.byteLength(JSON.stringify(v));  // not in Parley's items
  return n;
}

const keys = new Map();  // pk -> { n, seqs: Set }
let items = 0, bytes = 0, maxBytes = 0, over1k = 0;
await scanTable(endpoint, table, 3, (it) => {
  const pk = it.channel?.S ?? "";
  let k = keys.get(pk);
  if (!k) keys.set(pk, (k = { n: 0, seqs: new Set() }));
  k.n++;
  k.seqs.add(Number(it.seq?.N));
  let size = 0;
  for (const [name, v] of Object.entries(it)) size += attrSize(name, v);
  items++;
  bytes += size;
  if (size > maxBytes) maxBytes = size;
  if (size > 1024) over1k++;
});
const out = [];
for (const [pk, k] of keys) {
  let lo = Infinity, hi = -Infinity;
  for (const s of k.seqs) { if (s < lo) lo = s; if (s > hi) hi = s; }
  out.push([pk, k.n, k.seqs.size, lo, hi].join("\t"));
}
out.push(["#size", items, items ? (bytes / items).toFixed(1) : 0, maxBytes, over1k].join("\t"));
process.stdout.write(out.join("\n") + "\n");
