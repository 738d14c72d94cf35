#include "store/dynamodb/dynamo_history.h"

#include "store/blocking_check.h"

namespace parley::store::dynamodb {

DynamoHistory::DynamoHistory(DynamoOptions resolved, unsigned threads) : o_(std::move(resolved)), pool_(threads) {}

DynamoHistory::~DynamoHistory() { pool_.wait_idle(); }

std::unique_ptr<DynamoClient> DynamoHistory::take() {
  std::lock_guard lock(mu_);
  if (idle_.empty()) return std::make_unique<DynamoClient>(o_);
  auto c = std::move(idle_.back());
  idle_.pop_back();
  return c;
}

void DynamoHistory::give(std::unique_ptr<DynamoClient> c) {
  std::lock_guard lock(mu_);
  idle_.push_back(std::move(c));
}

void DynamoHistory::read(const ChannelId& id, uint64_t lo, uint64_t hi, uint32_t limit, bool newest,
                         ReadDone done) {
  pool_.post([this, id, lo, hi, limit, newest, done = std::move(done)] {
    check_may_block();
    auto c = take();
    auto r = c->query(id, lo, hi, limit, newest);
    give(std::move(c));
    done(std::move(r));
  });
}

}  // namespace parley::store::dynamodb
