// Prints SigV4 reference vectors as JSON (sigv4_vectors.json was made by
// `node sigv4_reference.mjs > sigv4_vectors.json`): the requests that
// @aws-sdk/client-dynamodb itself signs for DescribeTable, CreateTable,
// BatchWriteItem and Query with a fixed clock and fixed credentials (one set with
// a session token), captured by a request handler that never sends them; and
// AWS's published get-vanilla / post-vanilla test-suite requests signed by the
// SDK's own signer (@smithy/signature-v4), beside the signatures AWS published
// for them, so the script fails if the SDK and AWS's documentation disagree.
// The C++ signer (src/store/dynamodb/sigv4_test.cc) must produce every
// `authorization` from the rest of its vector.
import { DynamoDBClient, DescribeTableCommand, CreateTableCommand, BatchWriteItemCommand,
         QueryCommand } from "@aws-sdk/client-dynamodb";
import { SignatureV4 } from "@smithy/signature-v4";
import { Readable } from "node:stream";

const fixed = Date.UTC(2026, 11, 3, 18, 30, 15);  // 20261203T183015Z
Date.now = () => fixed;

const vectors = [];

function capture(name, creds, region) {
  return {
    handle: async (request) => {
      const headers = { ...request.headers };
      const authorization = headers.authorization;
      delete headers.authorization;
      vectors.push({ name, source: "@aws-sdk/client-dynamodb", region, service: "dynamodb",
                     access_key: creds.accessKeyId, secret_key: creds.secretAccessKey,
                     session_token: creds.sessionToken ?? "", method: request.method,
                     path: request.path, query: request.query ?? {}, headers,
                     body: request.body ? Buffer.from(request.body).toString("utf8") : "", authorization });
      // An answer the client accepts, so the command resolves (nothing is sent).
      return { response: { statusCode: 200, headers: { "content-type": "application/x-amz-json-1.0" },
                           body: Readable.from([Buffer.from("{}")]) } };
    },
    updateHttpClientConfig() {}, httpHandlerConfigs() { return {}; },
  };
}

async function run(name, creds, region, command) {
  const client = new DynamoDBClient({ region, credentials: creds, accountIdEndpointMode: "disabled",
                                      maxAttempts: 1, requestHandler: capture(name, creds, region) });
  try { await client.send(command); } catch (e) { /* the empty answer may not parse: the request is what counts */ }
}

const keys = { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY" };
const session = { accessKeyId: "ASIAPARLEYTEST", secretAccessKey: "parley/test+secret/KEY",
                  sessionToken: "IQoJb3JpZ2luX2VjEParleyTestSessionToken//+==" };

await run("describe_table", keys, "us-east-1", new DescribeTableCommand({ TableName: "parley_messages" }));
await run("create_table", keys, "eu-west-1", new CreateTableCommand({
  TableName: "parley_messages", BillingMode: "PAY_PER_REQUEST",
  AttributeDefinitions: [{ AttributeName: "channel", AttributeType: "S" }, { AttributeName: "seq", AttributeType: "N" }],
  KeySchema: [{ AttributeName: "channel", KeyType: "HASH" }, { AttributeName: "seq", KeyType: "RANGE" }] }));
await run("batch_write_item_session_token", session, "ap-southeast-2", new BatchWriteItemCommand({
  RequestItems: { parley_messages: [
    { PutRequest: { Item: { channel: { S: "game1#lobby" }, seq: { N: "41" }, ts: { N: "1764786615000" },
                            sender: { S: "u1" }, msg_id: { S: "m-41" }, body: { S: "{\"t\":\"héllo\"}" } } } },
    { PutRequest: { Item: { channel: { S: "game1#lobby" }, seq: { N: "42" }, ts: { N: "1764786615001" },
                            sender: { S: "u2" }, msg_id: { S: "m-42" }, body: { S: "gg" } } } }] } }));
await run("query_session_token", session, "us-west-2", new QueryCommand({
  TableName: "parley_messages", ConsistentRead: true, Limit: 50, ScanIndexForward: false,
  KeyConditionExpression: "channel = :c AND seq BETWEEN :lo AND :hi",
  ExpressionAttributeValues: { ":c": { S: "game1#lobby" }, ":lo": { N: "1" }, ":hi": { N: "99" } } }));

// AWS's SigV4 test suite (get-vanilla, post-vanilla): credentials, date,
// region and service as the suite fixes them, and the signatures it publishes.
const suite = [
  { name: "aws_suite_get_vanilla", method: "GET",
    published: "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31" },
  { name: "aws_suite_post_vanilla", method: "POST",
    published: "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b" },
];
// The SDK's own SHA-256 (the one the client above signs with).
const sha256 = new DynamoDBClient({ region: "us-east-1", credentials: keys }).config.sha256;
for (const t of suite) {
  const signer = new SignatureV4({ credentials: keys, region: "us-east-1", service: "service", sha256,
                                  applyChecksum: false });  // the suite signs no x-amz-content-sha256
  const headers = { host: "example.amazonaws.com" };
  const signed = await signer.sign({ method: t.method, protocol: "https:", hostname: "example.amazonaws.com",
                                     path: "/", headers, query: {} },
                                   { signingDate: new Date(Date.UTC(2015, 7, 30, 12, 36, 0)) });
  const authorization = signed.headers.authorization;
  if (!authorization.endsWith("Signature=" + t.published)) {
    throw new Error(`${t.name}: the SDK's signer gives ${authorization}, AWS published ${t.published}`);
  }
  const h = { ...signed.headers };
  delete h.authorization;
  vectors.push({ name: t.name, source: "AWS SigV4 test suite (signature as published; signed again by @smithy/signature-v4)",
                 region: "us-east-1", service: "service", access_key: keys.accessKeyId,
                 secret_key: keys.secretAccessKey, session_token: "", method: t.method, path: "/", query: {},
                 headers: h, body: "", authorization });
}

process.stdout.write(JSON.stringify(vectors, null, 1) + "\n");
