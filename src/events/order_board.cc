#include "events/order_board.h"

#include <algorithm>

namespace parley::events {

OrderBoard::OrderBoard(Agg agg, bool desc) : agg_(agg), desc_(desc), tree_(Less{this}) {}

bool OrderBoard::Less::operator()(const Key& a, const Key& b) const {
  if (a.score != b.score) return board->desc_ ? a.score > b.score : a.score < b.score;
  if (a.id == b.id) return false;
  if (a.id == kProbe) return true;
  if (b.id == kProbe) return false;
  return board->names_[a.id] < board->names_[b.id];
}

bool OrderBoard::apply(std::string_view member, double score) {
  auto it = ids_.find(member);
  if (it == ids_.end()) {
    const auto id = static_cast<uint32_t>(names_.size());
    names_.emplace_back(member);
    scores_.push_back(score);
    ids_.emplace(names_.back(), id);
    nodes_.push_back(tree_.insert(Key{score, id}).first);
    return true;
  }
  const uint32_t id = it->second;
  const double old = scores_[id];
  double now = old;
  switch (agg_) {
    case Agg::kSum: now = old + score; break;
    case Agg::kMax: now = std::max(old, score); break;
    case Agg::kMin: now = std::min(old, score); break;
    case Agg::kLast: now = score; break;
  }
  if (now == old) return false;
  tree_.erase(nodes_[id]);
  scores_[id] = now;
  nodes_[id] = tree_.insert(Key{now, id}).first;
  return true;
}

uint64_t OrderBoard::rank_of_score(double score) const {
  return tree_.order_of_key(Key{score, kProbe}) + 1;
}

BoardEntry OrderBoard::entry(const Key& k) const {
  return BoardEntry{names_[k.id], k.score, rank_of_score(k.score)};
}

std::optional<BoardEntry> OrderBoard::find(std::string_view member) const {
  auto it = ids_.find(member);
  if (it == ids_.end()) return std::nullopt;
  return entry(Key{scores_[it->second], it->second});
}

std::vector<BoardEntry> OrderBoard::top(size_t n) const {
  std::vector<BoardEntry> out;
  out.reserve(std::min(n, tree_.size()));
  uint64_t pos = 0;
  for (auto it = tree_.begin(); it != tree_.end() && out.size() < n; ++it, ++pos) {
    // Within the top, a tie's rank is the previous entry's; otherwise the position.
    const uint64_t rank = !out.empty() && out.back().score == it->score ? out.back().rank : pos + 1;
    out.push_back(BoardEntry{names_[it->id], it->score, rank});
  }
  return out;
}

std::vector<BoardEntry> OrderBoard::around(std::string_view member, size_t around) const {
  auto found = ids_.find(member);
  if (found == ids_.end()) return {};
  const Key self{scores_[found->second], found->second};
  const size_t pos = tree_.order_of_key(self);
  const size_t from = pos > around ? pos - around : 0;
  std::vector<BoardEntry> out;
  auto it = tree_.find_by_order(from);
  for (size_t i = from; i <= pos + around && it != tree_.end(); ++i, ++it) {
    const uint64_t rank = !out.empty() && out.back().score == it->score ? out.back().rank
                                                                        : rank_of_score(it->score);
    out.push_back(BoardEntry{names_[it->id], it->score, rank});
  }
  return out;
}

}  // namespace parley::events
