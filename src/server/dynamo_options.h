// [dynamodb] as the DynamoDB client's options, the environment filled in
// (AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN):
// the persister's sink and the nodes' history reads use the same.
#pragma once

#include "server/config.h"
#include "store/dynamodb/dynamo_client.h"

namespace parley::server {

inline Result<store::dynamodb::DynamoOptions> dynamo_options(const DynamoConfig& c) {
  store::dynamodb::DynamoOptions o;
  o.table = c.table;
  o.region = c.region;
  o.endpoint = c.endpoint;
  o.creds = {c.access_key_id, c.secret_access_key, c.session_token};
  o.ca_file = c.ca_file;
  o.timeout_ms = c.timeout_ms;
  o.spread = c.spread;
  o.create_table = c.create_table;
  return store::dynamodb::resolve_options(std::move(o));
}

}  // namespace parley::server
