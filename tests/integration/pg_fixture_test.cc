// The PostgreSQL fixture the persister's tests stand on (tests/support/pg_server.h):
// a real server, run as postgres when the tests run as root, that keeps committed
// rows across a crash and an immediate stop, and that can hang and come back.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "support/pg_server.h"

namespace parley::testing {
namespace {

TEST(PgFixture, AnswersAndKeepsCommittedRowsAcrossAKill9AndAnImmediateStop) {
  char tmpl[] = "/tmp/parley-pg-fixture-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  {
    PgServer pg(tmpl);
    ASSERT_TRUE(pg.ok()) << pg.why();
    EXPECT_GE(pg.port(), 23000);
    EXPECT_LT(pg.port(), 25000);
    EXPECT_EQ(pg.query("SELECT current_database(), current_user"), "parley|postgres");
    EXPECT_EQ(pg.query("CREATE TABLE t (k int PRIMARY KEY, v text)"), "CREATE TABLE");
    EXPECT_EQ(pg.query("INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 100) g"),
              "INSERT 0 100");
    EXPECT_EQ(pg.query("INSERT INTO t VALUES (1, 'again')").rfind("ERROR: ", 0), 0u);
    const int port = pg.port();

    pg.kill9();
    EXPECT_FALSE(pg.running());
    EXPECT_EQ(pg.query("SELECT 1", 1), "");
    ASSERT_TRUE(pg.start());
    EXPECT_EQ(pg.port(), port);
    EXPECT_EQ(pg.query("SELECT count(*), max(v) FROM t"), "100|v99");

    pg.stop();
    EXPECT_EQ(pg.query("SELECT 1", 1), "");
    ASSERT_TRUE(pg.restart());
    EXPECT_EQ(pg.query("SELECT count(*) FROM t"), "100");
  }
  std::filesystem::remove_all(tmpl);
}

TEST(PgFixture, APausedServerAnswersNothingUntilResumed) {
  PgServer& pg = shared_pg();
  ASSERT_TRUE(pg.ok()) << pg.why();
  EXPECT_EQ(pg.query("SELECT 41 + 1"), "42");
  pg.pause();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(pg.query("SELECT 1", 1), "");
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(900));
  pg.resume();
  EXPECT_EQ(pg.query("SELECT 1"), "1");
}

}  // namespace
}  // namespace parley::testing
