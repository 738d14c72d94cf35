// OrderBoard: one leaderboard's members and scores, kept in rank order in an
// order-statistic tree, so that an update, a member's rank and the entries
// around it each cost O(log n): no sort per push, whatever the board's size.
//
// The tree is libstdc++'s policy-based red-black tree with
// tree_order_statistics_node_update (every node knows its subtree's size). Its
// key is (score, member number): member names are interned once (a board of a
// million members holds each name once), and ties are ordered by member id as
// PROTOCOL.md says. Ranks share the best rank of a tie (1, 2, 2, 4): a member's
// rank is 1 + the number of members with a strictly better score.
//
// Owned by one loop (the board's topic's); not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace parley::events {

enum class Agg { kSum, kMax, kMin, kLast };

struct BoardEntry {
  std::string_view member;  // valid until the board changes
  double score = 0;
  uint64_t rank = 0;        // 1 = best
};

class OrderBoard {
 public:
  // desc: higher scores rank first (the default); else lower ones.
  OrderBoard(Agg agg, bool desc);
  OrderBoard(const OrderBoard&) = delete;
  OrderBoard& operator=(const OrderBoard&) = delete;
  OrderBoard(OrderBoard&&) = delete;

  // Applies one event's score to `member` per the aggregation; true when the
  // member's score (or presence) changed.
  bool apply(std::string_view member, double score);

  size_t size() const { return tree_.size(); }
  // The member's entry, or nullopt when it is not on the board.
  std::optional<BoardEntry> find(std::string_view member) const;
  // The best `n` entries, in rank order.
  std::vector<BoardEntry> top(size_t n) const;
  // `member` and up to `around` entries on each side of it, in rank order;
  // empty when it is not on the board.
  std::vector<BoardEntry> around(std::string_view member, size_t around) const;

 private:
  static constexpr uint32_t kProbe = UINT32_MAX;  // sorts before every member of a score
  struct Key {
    double score;
    uint32_t id;
  };
  struct Less {
    const OrderBoard* board;
    bool operator()(const Key& a, const Key& b) const;
  };
  using Tree = __gnu_pbds::tree<Key, __gnu_pbds::null_type, Less, __gnu_pbds::rb_tree_tag,
                                __gnu_pbds::tree_order_statistics_node_update>;

  uint64_t rank_of_score(double score) const;
  BoardEntry entry(const Key& k) const;

  Agg agg_;
  bool desc_;
  std::deque<std::string> names_;   // by member number; a deque keeps each name in place
  std::vector<double> scores_;      // by member number
  // By member number: its node, so that an update erases it without searching
  // the tree (half the comparisons of erase-by-key, which tie-break on names).
  // A tree's point iterators stay valid until their own element is erased.
  std::vector<Tree::point_iterator> nodes_;
  std::unordered_map<std::string_view, uint32_t> ids_;  // views into names_
  Tree tree_;
};

}  // namespace parley::events
