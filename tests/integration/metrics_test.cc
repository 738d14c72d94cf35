// /metrics of a running server against the one list of declared metrics
// (src/metrics/metric_list.h): every declared family appears exactly once with
// HELP and TYPE and at least one sample, and nothing undeclared appears.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include "metrics/metric_list.h"
#include "support/redis_server.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

const char* type_name(metrics::Type t) {
  switch (t) {
    case metrics::Type::kCounter: return "counter";
    case metrics::Type::kGauge: return "gauge";
    case metrics::Type::kHistogram: return "histogram";
  }
  return "?";
}

struct Family {
  int help = 0;
  int type = 0;
  std::string type_text;
  int samples = 0;
};

// Family name of a sample line: the metric name without a histogram suffix.
std::string family_of(const std::string& line, const std::map<std::string, Family>& known) {
  std::string name = line.substr(0, line.find_first_of("{ "));
  if (known.count(name)) return name;
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      std::string base = name.substr(0, name.size() - s.size());
      if (known.count(base)) return base;
    }
  }
  return name;
}

TEST(MetricsTest, ExpositionListsEveryDeclaredMetricOnceWithHelpAndType) {
  // A namespace with an upstream and a hook (nothing listens there) gives the
  // parley_upstream_* and parley_hook_* families their samples; a topic and a consumer group the
  // parley_events_* and consumer lag families; the valkey store (on the test's
  // redis-server) the parley_valkey_* ones (the embedded store's are unlabelled
  // and always present).
  RedisServer& redis = shared_redis();
  ASSERT_TRUE(redis.ok()) << redis.why();
  ServerSpec spec = spec_with_tenants(
      default_tenants_toml(
          "\n[tenants.demo.namespaces.fwd]\nupstream = \"http://127.0.0.1:9/events\"\n"
          "hook_join = \"http://127.0.0.1:9/hooks\"\n") +
      "\n[tenants.demo.topics.hunt]\npartitions = 2\n");
  spec.store = "valkey";
  spec.tenants_toml += "\n" + valkey_toml({redis.address()});
  ServerProcess server(spec);
  server.start();
  auto c = connect_as(server.http_port(), "alice");
  c->join("chat:metrics");
  c->send(R"({"op":"pub","ch":"chat:metrics","id":"m1","body":1,"rid":1})");
  ASSERT_FALSE(c->expect("ack").empty());
  c->send(R"({"op":"consume","rid":2,"topic":"hunt","group":"g"})");
  ASSERT_FALSE(c->expect("assigned").empty());
  c->send(R"({"op":"emit","rid":3,"topic":"hunt","events":[{"key":"k","type":"t","body":1}]})");
  ASSERT_FALSE(c->expect("emitted").empty());

  auto r = http_request(server.http_port(), "GET", "/metrics");
  ASSERT_EQ(r.status, 200);

  std::map<std::string, Family> families;
  for (const auto& m : metrics::kDeclared) {
    ASSERT_FALSE(m.name.empty());
    ASSERT_TRUE(families.emplace(std::string(m.name), Family{}).second)
        << m.name << " is declared twice";
  }
  std::istringstream in(r.body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      std::istringstream words(line.substr(7));
      std::string name, rest;
      words >> name >> rest;
      auto it = families.find(name);
      ASSERT_NE(it, families.end()) << "undeclared metric family in the exposition: " << line;
      EXPECT_FALSE(rest.empty()) << line;
      if (line[2] == 'H') {
        ++it->second.help;
      } else {
        ++it->second.type;
        it->second.type_text = rest;
      }
      continue;
    }
    ASSERT_NE(line[0], '#') << line;
    auto it = families.find(family_of(line, families));
    ASSERT_NE(it, families.end()) << "undeclared metric in the exposition: " << line;
    ++it->second.samples;
  }
  for (const auto& m : metrics::kDeclared) {
    const Family& f = families[std::string(m.name)];
    EXPECT_EQ(f.help, 1) << m.name;
    EXPECT_EQ(f.type, 1) << m.name;
    EXPECT_EQ(f.type_text, type_name(m.type)) << m.name;
    EXPECT_GE(f.samples, 1) << m.name << " has no sample";
  }
}

}  // namespace
}  // namespace parley::testing
