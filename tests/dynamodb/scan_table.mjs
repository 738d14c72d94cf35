// Every item of a table, read with the reference client (@aws-sdk/client-dynamodb):
// a consistent Scan of every page, each item handed to `onItem`. A missing table
// prints "no table" and exits 0; any other failure prints it and exits 1.
import { DynamoDBClient, ScanCommand } from "@aws-sdk/client-dynamodb";

export async function scanTable(endpoint, table, maxAttempts, onItem) {
  const client = new DynamoDBClient({ endpoint, region: "us-east-1", maxAttempts,
    credentials: { accessKeyId: "test", secretAccessKey: "test" } });
  let start;
  try {
    do {
      const page = await client.send(new ScanCommand({ TableName: table, ConsistentRead: true, ExclusiveStartKey: start }));
      for (const it of page.Items ?? []) onItem(it);
      start = page.LastEvaluatedKey;
    } while (start);
  } catch (e) {
    if (e.name === "ResourceNotFoundException") { console.log("no table"); process.exit(0); }
    console.error(String(e));
    process.exit(1);
  }
}
