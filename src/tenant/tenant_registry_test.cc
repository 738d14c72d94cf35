#include "tenant/tenant_registry.h"

#include <gtest/gtest.h>

namespace parley {
namespace {

TenantConfig tenant(const std::string& id, const std::string& key, uint32_t overlap_s = 0) {
  TenantConfig t;
  t.id = id;
  t.secret = "secret-of-" + id + "-0123456789";
  t.api_key = key;
  t.rotation_overlap_s = overlap_s;
  return t;
}

TenantRegistry::Tenants tenants(std::initializer_list<TenantConfig> list) {
  TenantRegistry::Tenants out;
  for (const auto& t : list) out.emplace(t.id, t);
  return out;
}

constexpr int64_t kNow = 1'000'000'000;

TEST(TenantRegistry, ReloadAddsChangesAndRemovesTenants) {
  TenantRegistry reg(tenants({tenant("a", "ka"), tenant("b", "kb")}));
  TenantRuntime* a = reg.find("a");
  TenantRuntime* b = reg.find("b");
  ASSERT_TRUE(a && b);
  b->messages = 7;
  auto next = tenants({tenant("a", "ka"), tenant("c", "kc")});
  next.at("a").publish_per_sec = 5;
  TenantChanges ch = reg.apply(next, kNow);
  EXPECT_EQ(ch.added, std::vector<std::string>{"c"});
  EXPECT_EQ(ch.changed, std::vector<std::string>{"a"});
  EXPECT_EQ(ch.removed, std::vector<std::string>{"b"});
  EXPECT_EQ(ch.removed_runtimes, std::vector<TenantRuntime*>{b});
  EXPECT_TRUE(ch.retired);
  EXPECT_EQ(reg.find("a"), a);  // the same runtime, new settings
  EXPECT_EQ(a->config().publish_per_sec, 5u);
  EXPECT_EQ(reg.find("b"), nullptr);
  EXPECT_TRUE(b->removed());
  EXPECT_EQ(reg.find_by_api_key("kb", kNow), nullptr);
  EXPECT_EQ(reg.find_by_api_key("kc", kNow), reg.find("c"));
  // Added back: the same runtime and counters, no longer removed.
  ch = reg.apply(tenants({tenant("a", "ka"), tenant("b", "kb"), tenant("c", "kc")}), kNow);
  EXPECT_EQ(ch.added, std::vector<std::string>{"b"});
  EXPECT_EQ(reg.find("b"), b);
  EXPECT_FALSE(b->removed());
  EXPECT_EQ(b->messages.load(), 7u);
}

TEST(TenantRegistry, AnUnchangedTenantKeepsItsSnapshot) {
  TenantRegistry reg(tenants({tenant("a", "ka")}));
  const TenantSnapshot* before = &reg.find("a")->snapshot();
  TenantChanges ch = reg.apply(tenants({tenant("a", "ka")}), kNow);
  EXPECT_TRUE(ch.changed.empty() && ch.added.empty() && ch.removed.empty());
  EXPECT_EQ(&reg.find("a")->snapshot(), before);
}

TEST(TenantRegistry, RotatedApiKeyIsAcceptedDuringTheOverlapOnly) {
  TenantRegistry reg(tenants({tenant("a", "old-key")}));
  reg.apply(tenants({tenant("a", "new-key", 60)}), kNow);
  TenantRuntime* a = reg.find("a");
  EXPECT_EQ(reg.find_by_api_key("new-key", kNow), a);
  EXPECT_EQ(reg.find_by_api_key("old-key", kNow + 59'999), a);
  EXPECT_EQ(reg.find_by_api_key("old-key", kNow + 60'000), nullptr);
  // A later reload that changes something else keeps the rotation's deadline.
  auto next = tenants({tenant("a", "new-key", 60)});
  next.at("a").max_connections = 3;
  reg.apply(next, kNow + 10'000);
  EXPECT_EQ(reg.find_by_api_key("old-key", kNow + 59'999), a);
  EXPECT_EQ(reg.find_by_api_key("old-key", kNow + 60'000), nullptr);
  EXPECT_EQ(a->snapshot().previous_api_key, "old-key");
}

TEST(TenantRegistry, RotationWithoutOverlapForgetsTheOldValue) {
  TenantRegistry reg(tenants({tenant("a", "old-key")}));
  auto next = tenants({tenant("a", "new-key")});
  next.at("a").secret = "another-secret-0123456789";
  reg.apply(next, kNow);
  EXPECT_EQ(reg.find_by_api_key("old-key", kNow), nullptr);
  EXPECT_TRUE(reg.find("a")->snapshot().previous_secret.empty());
}

TEST(TenantRegistry, ATenantMayNotTakeAnotherOnesStillAcceptedKeyOrSecret) {
  TenantConfig a = tenant("a", "old-key", 60);
  TenantRegistry reg(tenants({a, tenant("b", "kb")}));
  TenantConfig a2 = tenant("a", "new-key", 60);
  a2.secret = "a-rotated-secret-0123456789";
  reg.apply(tenants({a2, tenant("b", "kb")}), kNow);
  TenantConfig b_takes_key = tenant("b", "old-key");
  Status s = reg.check(tenants({a2, b_takes_key}), kNow + 1000);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().msg.find("tenants.b.api_key"), std::string::npos) << s.error().msg;
  TenantConfig b_takes_secret = tenant("b", "kb");
  b_takes_secret.secret = a.secret;
  EXPECT_FALSE(reg.check(tenants({a2, b_takes_secret}), kNow + 1000));
  // After the overlap, both are free.
  EXPECT_TRUE(reg.check(tenants({a2, b_takes_key}), kNow + 60'000));
}

TEST(TenantRegistry, OriginsFollowTheConfiguredTenants) {
  TenantConfig a = tenant("a", "ka");
  a.allowed_origins = {"https://a.example"};
  TenantRegistry reg(tenants({a}));
  EXPECT_TRUE(reg.origin_allowed("https://a.example"));
  EXPECT_FALSE(reg.origin_allowed("https://b.example"));
  reg.apply(tenants({a, tenant("b", "kb")}), kNow);  // b accepts any origin
  EXPECT_TRUE(reg.origin_allowed("https://b.example"));
  reg.apply(tenants({a}), kNow);
  EXPECT_FALSE(reg.origin_allowed("https://b.example"));
}

}  // namespace
}  // namespace parley
