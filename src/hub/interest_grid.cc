#include "hub/interest_grid.h"

#include <algorithm>
#include <cmath>

namespace parley::hub {

Cell cell_of(const protocol::Position& p, double aoi_cell) {
  auto axis = [&](double v) { return static_cast<int64_t>(std::floor(v / aoi_cell)); };
  return Cell{axis(p.v[0]), axis(p.v[1]), p.dims > 2 ? axis(p.v[2]) : 0};
}

void InterestGrid::moved(uint64_t conn, const Cell& cell) {
  auto it = members_.find(conn);
  if (it == members_.end()) return;  // a member of another loop
  it->second = cell;
  any_z_ |= cell.z != 0;
}

const Cell* InterestGrid::cell_of_member(uint64_t conn) const {
  auto it = members_.find(conn);
  return it == members_.end() || !it->second ? nullptr : &*it->second;
}

void InterestGrid::begin_batch() {
  for (uint32_t i = 0; i < used_; ++i) buckets_[i].clear();
  used_ = 0;
  slot_of_.clear();
  unpositioned_.clear();
}

void InterestGrid::add_event(uint32_t index, const Cell* cell) {
  if (!cell) {
    unpositioned_.push_back(index);
    return;
  }
  any_z_ |= cell->z != 0;
  auto [it, inserted] = slot_of_.try_emplace(*cell, used_);
  if (inserted) {
    if (used_ == buckets_.size()) buckets_.emplace_back();
    ++used_;
  }
  buckets_[it->second].push_back(index);
}

void InterestGrid::collect(const Cell& cell, std::vector<uint32_t>& out) const {
  out.assign(unpositioned_.begin(), unpositioned_.end());
  const int64_t dz = any_z_ ? 1 : 0;
  for (int64_t x = -1; x <= 1; ++x) {
    for (int64_t y = -1; y <= 1; ++y) {
      for (int64_t z = -dz; z <= dz; ++z) {
        auto it = slot_of_.find(Cell{cell.x + x, cell.y + y, cell.z + z});
        if (it == slot_of_.end()) continue;
        const auto& b = buckets_[it->second];
        out.insert(out.end(), b.begin(), b.end());
      }
    }
  }
  std::sort(out.begin(), out.end());
}

}  // namespace parley::hub
