// Sanctions and kicks as they travel between nodes (sanction_codec.h): what
// one node writes another reads back, and nothing malformed is taken.
#include "cluster/sanction_codec.h"

#include <gtest/gtest.h>

namespace parley::cluster {
namespace {

TEST(SanctionCodec, FieldAndValueRoundTrip) {
  Sanction s{SanctionKind::kBan, "demo", "chat:lobby", "u:1\x1f", 1764460800123};
  auto back = parse_sanction(sanction_field(s), "1764460800123");
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, s);
  Sanction tenant_wide{SanctionKind::kMute, "demo", "", "u1", 5};
  back = parse_sanction(sanction_field(tenant_wide), "5");
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, tenant_wide);
}

TEST(SanctionCodec, RefusesMalformedFields) {
  const std::string good = sanction_field({SanctionKind::kMute, "demo", "c", "u1", 1});
  EXPECT_FALSE(parse_sanction(good, "-1"));
  EXPECT_FALSE(parse_sanction(good, "12x"));
  EXPECT_FALSE(parse_sanction(good, ""));
  EXPECT_FALSE(parse_sanction(good + "x", "1"));
  EXPECT_FALSE(parse_sanction("x" + good.substr(1), "1"));
  EXPECT_FALSE(parse_sanction("m4:demo1:c99:u1", "1"));  // a length past the end
  EXPECT_FALSE(parse_sanction(sanction_field({SanctionKind::kMute, "", "c", "u1", 1}), "1"));
  EXPECT_FALSE(parse_sanction(sanction_field({SanctionKind::kMute, "demo", "c", "", 1}), "1"));
}

TEST(SanctionCodec, NotesRoundTrip) {
  Sanction s{SanctionKind::kMute, "demo", "", "u1", 99};
  auto n = parse_sanction_note(sanction_note("ab12", s));
  ASSERT_TRUE(n);
  EXPECT_FALSE(n->is_kick);
  EXPECT_EQ(n->node, "ab12");
  EXPECT_EQ(n->sanction, s);

  Kick k{"demo", "chat:lobby", "u2", "spam: 3 links"};
  n = parse_sanction_note(kick_note("ab12", k));
  ASSERT_TRUE(n);
  EXPECT_TRUE(n->is_kick);
  EXPECT_EQ(n->kick.tenant, "demo");
  EXPECT_EQ(n->kick.ch, "chat:lobby");
  EXPECT_EQ(n->kick.user, "u2");
  EXPECT_EQ(n->kick.reason, "spam: 3 links");
}

TEST(SanctionCodec, RefusesMalformedNotes) {
  const std::string kick = kick_note("n1", {"demo", "c", "u", "r"});
  for (size_t cut = 0; cut < kick.size(); ++cut) {
    EXPECT_FALSE(parse_sanction_note(kick.substr(0, cut))) << cut;
  }
  EXPECT_FALSE(parse_sanction_note(kick + "x"));
  EXPECT_FALSE(parse_sanction_note("j" + kick.substr(1)));  // a presence note is not ours
  EXPECT_FALSE(parse_sanction_note(kick_note("", {"demo", "c", "u", "r"})));
  EXPECT_FALSE(parse_sanction_note(kick_note("n1", {"demo", "", "u", "r"})));
  const std::string s = sanction_note("n1", {SanctionKind::kBan, "demo", "c", "u", 7});
  for (size_t cut = 0; cut < s.size(); ++cut) EXPECT_FALSE(parse_sanction_note(s.substr(0, cut))) << cut;
}

}  // namespace
}  // namespace parley::cluster
