#include "store/dynamodb/dynamo_client.h"

#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "common/clock.h"
#include "common/json_writer.h"

namespace parley::store::dynamodb {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

Error unavailable(std::string msg) { return Error{ErrorCode::kUnavailable, "dynamodb: " + std::move(msg)}; }

// Seqs stay below 2^63 (the hub's counters); an open upper bound becomes this.
constexpr uint64_t kSeqCeiling = uint64_t{1} << 62;

void str_attr(JsonWriter& w, const char* name, std::string_view v) {
  w.key(name).begin_object().field("S", v).end_object();
}
void num_attr(JsonWriter& w, const char* name, std::string_view digits) {
  w.key(name).begin_object().field("N", digits).end_object();
}

// The S or N inside {"S":"..."} / {"N":"..."}; empty when absent.
std::string attr(simdjson::ondemand::object& item, const char* name, const char* type) {
  auto v = item.find_field_unordered(name);
  if (v.error()) return {};
  auto inner = v.find_field_unordered(type);
  if (inner.error()) return {};
  std::string_view s;
  if (inner.get_string().get(s)) return {};
  return std::string(s);
}

uint64_t to_u64(const std::string& s) { return std::strtoull(s.c_str(), nullptr, 10); }

}  // namespace

Result<DynamoOptions> resolve_options(DynamoOptions o) {
  if (o.region.empty()) o.region = env("AWS_REGION");
  if (o.region.empty()) o.region = env("AWS_DEFAULT_REGION");
  if (o.region.empty()) return Error{ErrorCode::kBadRequest, "dynamodb.region is not set (nor AWS_REGION)"};
  auto source = find_credentials(o.creds);
  if (!source) return source.error();
  o.credentials = std::move(*source);
  o.creds = o.credentials.fixed;
  if (o.endpoint.empty()) o.endpoint = "https://dynamodb." + o.region + ".amazonaws.com";
  if (auto ep = parse_endpoint(o.endpoint); !ep) return ep.error();
  if (o.table.empty()) return Error{ErrorCode::kBadRequest, "dynamodb.table is empty"};
  if (o.spread == 0) o.spread = 1;
  return o;
}

bool Reply::throttled() const {
  return type == "ThrottlingException" || type == "ProvisionedThroughputExceededException" ||
         type == "RequestLimitExceeded";
}

std::string partition_key(const std::string& tenant, const std::string& channel, uint64_t seq, uint32_t spread) {
  std::string pk = tenant + '#' + channel;
  if (spread > 1) pk += '#' + std::to_string(seq % spread);
  return pk;
}

std::string item_json(const ArchiveRow& item, uint32_t spread) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  str_attr(w, "channel", partition_key(item.tenant, item.channel, item.seq, spread));
  num_attr(w, "seq", std::to_string(item.seq));
  num_attr(w, "ts", std::to_string(item.ts_ms));
  if (!item.sender.empty()) str_attr(w, "sender", item.sender);
  if (!item.msg_id.empty()) str_attr(w, "msg_id", item.msg_id);
  str_attr(w, "body", item.body);
  w.end_object();
  return out;
}

DynamoClient::DynamoClient(DynamoOptions resolved)
    : o_(std::move(resolved)), creds_(o_.credentials.origin.empty() ? CredentialSource{"config", o_.creds}
                                                                     : o_.credentials,
                                      o_.timeout_ms) {
  http_ = std::make_unique<HttpClient>(*parse_endpoint(o_.endpoint), o_.timeout_ms, o_.ca_file);
}

DynamoClient::~DynamoClient() = default;

Result<Reply> DynamoClient::call(const std::string& op, std::string body) {
  auto creds = creds_.current();
  if (!creds) return creds.error();
  const std::string date = amz_date(wall_ms() / 1000);
  std::vector<std::pair<std::string, std::string>> headers = {
      {"host", http_->endpoint().host_header},
      {"content-type", "application/x-amz-json-1.0"},
      {"x-amz-date", date},
      {"x-amz-target", "DynamoDB_20120810." + op},
  };
  if (!creds->session_token.empty()) headers.emplace_back("x-amz-security-token", creds->session_token);
  SignInput in{"POST", "/", {}, headers, body};
  headers.emplace_back("authorization", sign(in, *creds, o_.region, "dynamodb", date).authorization);
  headers.erase(headers.begin());  // Host: the client sets it (the same value)
  auto r = http_->post(headers, std::move(body));
  if (!r) return r.error();
  Reply out;
  out.status = r->status;
  out.body = std::move(r->body);
  if (out.status == 200) return out;
  simdjson::ondemand::parser parser;
  simdjson::padded_string padded(out.body);
  auto doc = parser.iterate(padded);
  simdjson::ondemand::object obj;
  if (!doc.error() && !doc.get_object().get(obj)) {
    for (auto f : obj) {
      std::string_view k, v;
      if (f.unescaped_key().get(k) || f.value().get_string().get(v)) continue;
      if (k == "__type") out.type = std::string(v.substr(v.rfind('#') + 1));
      if (k == "message" || k == "Message") out.message = std::string(v);
    }
  }
  if (out.type.empty()) out.type = "HTTP " + std::to_string(out.status);
  return out;
}

Status DynamoClient::ensure_table(uint32_t wait_ms) {
  std::string describe;
  JsonWriter(describe).begin_object().field("TableName", o_.table).end_object();
  const int64_t deadline = (steady_ns() / 1'000'000) + wait_ms;
  bool created = false;
  for (;;) {
    auto r = call("DescribeTable", describe);
    if (!r) return r.error();
    if (r->ok()) {
      simdjson::ondemand::parser parser;
      simdjson::padded_string padded(r->body);
      std::string_view status;
      auto doc = parser.iterate(padded);
      if (!doc.error() && !doc["Table"]["TableStatus"].get_string().get(status) && status == "ACTIVE") {
        return Status::ok();
      }
    } else if (r->type == "ResourceNotFoundException" && !created) {
      if (!o_.create_table) return unavailable("table " + o_.table + " does not exist (dynamodb.create_table = false)");
      std::string body;
      JsonWriter w(body);
      w.begin_object().field("TableName", o_.table).field("BillingMode", "PAY_PER_REQUEST");
      w.key("AttributeDefinitions").begin_array();
      w.begin_object().field("AttributeName", "channel").field("AttributeType", "S").end_object();
      w.begin_object().field("AttributeName", "seq").field("AttributeType", "N").end_object();
      w.end_array().key("KeySchema").begin_array();
      w.begin_object().field("AttributeName", "channel").field("KeyType", "HASH").end_object();
      w.begin_object().field("AttributeName", "seq").field("KeyType", "RANGE").end_object();
      w.end_array().end_object();
      auto c = call("CreateTable", body);
      if (!c) return c.error();
      // Another persister may have created it first: that is as good.
      if (!c->ok() && c->type != "ResourceInUseException") {
        return unavailable("CreateTable " + o_.table + ": " + c->type + ": " + c->message);
      }
      created = true;
    } else if (r->type != "ResourceNotFoundException") {
      return unavailable("DescribeTable " + o_.table + ": " + r->type + ": " + r->message);
    }
    if ((steady_ns() / 1'000'000) >= deadline) return unavailable("table " + o_.table + " is not ACTIVE");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Result<DynamoClient::BatchResult> DynamoClient::batch_write(const std::vector<const ArchiveRow*>& items) {
  BatchResult out;
  if (items.empty()) return out;
  std::string body;
  JsonWriter w(body);
  w.begin_object().key("RequestItems").begin_object().key(o_.table).begin_array();
  for (const ArchiveRow* it : items) {
    w.begin_object().key("PutRequest").begin_object().field_raw("Item", item_json(*it, o_.spread)).end_object();
    w.end_object();
  }
  w.end_array().end_object().end_object();
  auto r = call("BatchWriteItem", std::move(body));
  if (!r) return r.error();
  if (!r->ok()) {
    out.refused = std::move(*r);
    return out;
  }
  // UnprocessedItems names items by their attributes; the key (channel, seq)
  // finds which of ours they are.
  simdjson::ondemand::parser parser;
  simdjson::padded_string padded(r->body);
  auto doc = parser.iterate(padded);
  simdjson::ondemand::object unprocessed;
  if (doc.error() || doc["UnprocessedItems"].get_object().get(unprocessed)) return out;
  simdjson::ondemand::array puts;
  if (unprocessed.find_field_unordered(o_.table).get_array().get(puts)) return out;
  for (auto req : puts) {
    simdjson::ondemand::object item;
    if (req["PutRequest"]["Item"].get_object().get(item)) {
      return unavailable("BatchWriteItem: an unprocessed entry without PutRequest.Item");
    }
    const std::string pk = attr(item, "channel", "S");
    const uint64_t seq = to_u64(attr(item, "seq", "N"));
    bool found = false;
    for (size_t i = 0; i < items.size() && !found; ++i) {
      if (items[i]->seq == seq && partition_key(items[i]->tenant, items[i]->channel, seq, o_.spread) == pk) {
        out.unprocessed.push_back(i);
        found = true;
      }
    }
    // An answer naming an item we did not send: count the whole batch as
    // unprocessed rather than acknowledge something unwritten.
    if (!found) return unavailable("BatchWriteItem: unprocessed item " + pk + "/" + std::to_string(seq) + " unknown");
  }
  return out;
}

Result<std::vector<StoredMessage>> DynamoClient::query_key(const std::string& pk, uint64_t lo, uint64_t hi,
                                                           uint32_t limit, bool newest) {
  std::vector<StoredMessage> out;
  std::string start_key;  // ExclusiveStartKey of the next page (a 1 MB page ends early)
  while (out.size() < limit) {
    std::string body;
    JsonWriter w(body);
    w.begin_object().field("TableName", o_.table).field_bool("ConsistentRead", true);
    w.field_unum("Limit", limit - out.size()).field_bool("ScanIndexForward", !newest);
    w.field("KeyConditionExpression", "#c = :c AND #s BETWEEN :lo AND :hi");
    w.key("ExpressionAttributeNames").begin_object().field("#c", "channel").field("#s", "seq").end_object();
    w.key("ExpressionAttributeValues").begin_object();
    str_attr(w, ":c", pk);
    num_attr(w, ":lo", std::to_string(lo));
    num_attr(w, ":hi", std::to_string(hi - 1));
    w.end_object();
    if (!start_key.empty()) w.field_raw("ExclusiveStartKey", start_key);
    w.end_object();
    auto r = call("Query", std::move(body));
    if (!r) return r.error();
    if (!r->ok()) return unavailable("Query: " + r->type + ": " + r->message);
    simdjson::ondemand::parser parser;
    simdjson::padded_string padded(r->body);
    auto doc = parser.iterate(padded);
    simdjson::ondemand::object root;
    if (doc.error() || doc.get_object().get(root)) return unavailable("Query: the answer is not a JSON object");
    start_key.clear();
    for (auto f : root) {
      std::string_view k;
      if (f.unescaped_key().get(k)) return unavailable("Query: bad answer");
      if (k == "Items") {
        simdjson::ondemand::array items;
        if (f.value().get_array().get(items)) return unavailable("Query: Items is not an array");
        for (auto v : items) {
          simdjson::ondemand::object item;
          if (v.get_object().get(item)) return unavailable("Query: an item is not an object");
          StoredMessage m;
          m.seq = to_u64(attr(item, "seq", "N"));
          m.ts_ms = std::strtoll(attr(item, "ts", "N").c_str(), nullptr, 10);
          m.from = attr(item, "sender", "S");
          m.id = attr(item, "msg_id", "S");
          m.body = attr(item, "body", "S");
          if (m.body.empty()) return unavailable("Query: an item without a body");
          out.push_back(std::move(m));
        }
      } else if (k == "LastEvaluatedKey") {
        simdjson::ondemand::object key;
        if (f.value().get_object().get(key)) return unavailable("Query: bad LastEvaluatedKey");
        const uint64_t seq = to_u64(attr(key, "seq", "N"));
        JsonWriter kw(start_key);
        kw.begin_object();
        str_attr(kw, "channel", pk);
        num_attr(kw, "seq", std::to_string(seq));
        kw.end_object();
      }
    }
    if (start_key.empty()) break;
  }
  return out;
}

Result<std::vector<StoredMessage>> DynamoClient::query(const ChannelId& id, uint64_t lo, uint64_t hi,
                                                       uint32_t limit, bool newest) {
  std::vector<StoredMessage> out;
  hi = std::min(hi, kSeqCeiling);
  if (limit == 0 || lo >= hi) return out;
  // Every spread key holds its own residue class of seqs: the `limit` wanted
  // are among the `limit` first of each.
  for (uint32_t k = 0; k < o_.spread; ++k) {
    const std::string pk =
        o_.spread > 1 ? id.tenant + '#' + id.channel + '#' + std::to_string(k) : id.tenant + '#' + id.channel;
    auto part = query_key(pk, lo, hi, limit, newest);
    if (!part) return part.error();
    for (auto& m : *part) out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.seq < b.seq; });
  if (out.size() > limit) {
    if (newest) {
      out.erase(out.begin(), out.end() - limit);
    } else {
      out.resize(limit);
    }
  }
  return out;
}

}  // namespace parley::store::dynamodb
