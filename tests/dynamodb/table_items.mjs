// Every item of a table, read with the reference client (@aws-sdk/client-dynamodb,
// a consistent Scan, every page): one line per item, tab-separated:
// channel, seq, sender, msg_id, body. The persister's tests compare it with
// what the server acknowledged. "no table" and exit 0 when the table is missing.
// Usage: node table_items.mjs ENDPOINT TABLE
import { scanTable } from "./scan_table.mjs";

const [endpoint, table] = [process.argv[2], process.argv[3]];
const lines = [];
await scanTable(endpoint, table, 1, (it) => {
  lines.push([it.channel?.S, it.seq?.N, it.sender?.S ?? "", it.msg_id?.S ?? "", it.body?.S].join("\t"));
});
process.stdout.write(lines.join("\n") + (lines.length ? "\n" : ""));
