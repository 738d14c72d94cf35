// Every item of a table, read with the reference client (@aws-sdk/client-dynamodb,
// a consistent Scan, every page): one line per item, tab-separated:
// channel, seq, sender, msg_id, body. The persister's tests compare it with
// what the server acknowledged. "no table" and exit 0 when the table is missing.
// Usage: node table_items.mjs ENDPOINT TABLE
import { DynamoDBClient, ScanCommand } from "@aws-sdk/client-dynamodb";

const [endpoint, table] = [process.argv[2], process.argv[3]];
const client = new DynamoDBClient({ endpoint, region: "us-east-1", maxAttempts: 1,
  credentials: { accessKeyId: "test", secretAccessKey: "test" } });
const lines = [];
let start;
try {
  do {
    const page = await client.send(new ScanCommand({ TableName: table, ConsistentRead: true, ExclusiveStartKey: start }));
    for (const it of page.Items ?? []) {
      lines.push([it.channel?.S, it.seq?.N, it.sender?.S ?? "", it.msg_id?.S ?? "", it.body?.S].join("\t"));
    }
    start = page.LastEvaluatedKey;
  } while (start);
} catch (e) {
  if (e.name === "ResourceNotFoundException") { console.log("no table"); process.exit(0); }
  console.error(String(e));
  process.exit(1);
}
process.stdout.write(lines.join("\n") + (lines.length ? "\n" : ""));
