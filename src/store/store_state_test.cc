// StoreStateFile: the epoch and seq ceiling that must survive damage to RocksDB.
#include "store/store_state.h"

#include <fstream>

#include <gtest/gtest.h>

#include "store/store_test_util.h"

namespace parley::store {
namespace {

using testing::TempDir;

TEST(StoreStateFile, AMissingFileIsAFreshState) {
  TempDir dir;
  StoreStateFile f(dir.path());
  ASSERT_TRUE(f.load());
  EXPECT_EQ(f.data().epoch, 1u);
  EXPECT_EQ(f.data().seq_ceiling, 0u);
  EXPECT_EQ(f.data().loss_floor, 0u);
  EXPECT_FALSE(f.data().clean);
}

TEST(StoreStateFile, SavesAndLoadsEveryField) {
  TempDir dir;
  StoreStateFile f(dir.path());
  f.data() = StoreStateData{3, 70000, 65537, true, "5f1c-boot", {"demo/log:a b", "t2/x"}};
  ASSERT_TRUE(f.save());
  StoreStateFile g(dir.path());
  ASSERT_TRUE(g.load());
  EXPECT_EQ(g.data().epoch, 3u);
  EXPECT_EQ(g.data().seq_ceiling, 70000u);
  EXPECT_EQ(g.data().loss_floor, 65537u);
  EXPECT_TRUE(g.data().clean);
  EXPECT_EQ(g.data().boot, "5f1c-boot");
  EXPECT_EQ(g.data().damaged, (std::vector<std::string>{"demo/log:a b", "t2/x"}));
}

TEST(StoreStateFile, AFileWrittenBeforeTheBootKeyLoadsWithoutOne) {
  TempDir dir;
  std::ofstream(dir.path() + "/" + StoreStateFile::kFileName)
      << "parley-store-state 1\nepoch 2\nseq_ceiling 65536\nloss_floor 0\nclean 0\n";
  StoreStateFile f(dir.path());
  ASSERT_TRUE(f.load());
  EXPECT_EQ(f.data().epoch, 2u);
  EXPECT_TRUE(f.data().boot.empty());  // no machine-stop check at the next start
}

TEST(StoreStateFile, TheCeilingIsOnDiskBeforeASeqAboveItMayBeWritten) {
  TempDir dir;
  StoreStateFile f(dir.path());
  ASSERT_TRUE(f.load());
  ASSERT_TRUE(f.reserve(1));
  const uint64_t first = f.data().seq_ceiling;
  EXPECT_EQ(first, 1 + StoreStateFile::kSeqLease);
  // Within the lease: nothing to write.
  ASSERT_TRUE(f.reserve(first));
  EXPECT_EQ(f.data().seq_ceiling, first);
  ASSERT_TRUE(f.reserve(first + 1));
  EXPECT_EQ(f.data().seq_ceiling, first + 1 + StoreStateFile::kSeqLease);
  StoreStateFile g(dir.path());
  ASSERT_TRUE(g.load());
  EXPECT_EQ(g.data().seq_ceiling, f.data().seq_ceiling);
}

TEST(StoreStateFile, ADamagedFileIsAnErrorNotAFreshState) {
  TempDir dir;
  std::ofstream(dir.path() + "/" + StoreStateFile::kFileName) << "parley-store-state 1\nepoch x\n";
  StoreStateFile f(dir.path());
  Status s = f.load();
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().msg.find("damaged"), std::string::npos) << s.error().msg;
}

}  // namespace
}  // namespace parley::store
