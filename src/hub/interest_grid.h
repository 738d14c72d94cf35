// Interest areas (PROTOCOL.md "Interest areas"): one channel's grid on one
// loop. It knows which cell each of the loop's members of the channel is in
// (where its own latest positioned `state` put it), and, while a batch is
// encoded, which of the batch's events each cell holds, so that a member's
// share is read from its own and the neighbouring cells (9 in 2D, 27 when some
// position has a z) instead of filtering the whole batch.
//
// Owned by the TickBatcher of one loop (inside the channel's entry); every
// method runs on that loop.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "protocol/client_op.h"

namespace parley::hub {

struct Cell {
  int64_t x = 0, y = 0, z = 0;
  bool operator==(const Cell&) const = default;
};

struct CellHash {
  size_t operator()(const Cell& c) const {
    uint64_t h = static_cast<uint64_t>(c.x) * 0x9E3779B97F4A7C15ull;
    h ^= static_cast<uint64_t>(c.y) + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(c.z) + 0x85EBCA77C2B2AE63ull + (h << 6) + (h >> 2);
    return static_cast<size_t>(h);
  }
};

// The cell holding `p` in a grid of side `aoi_cell` (floor per axis; z = 0 in
// 2D). The decoder bounds |p| and the config bounds aoi_cell so it fits.
Cell cell_of(const protocol::Position& p, double aoi_cell);

class InterestGrid {
 public:
  // A member without a cell yet: it receives every event (PROTOCOL.md).
  void add_member(uint64_t conn) { members_.try_emplace(conn); }
  void remove_member(uint64_t conn) { members_.erase(conn); }
  // A positioned event of `conn`: when it is a member here, it is now in `cell`.
  void moved(uint64_t conn, const Cell& cell);
  // nullptr when the member never positioned itself (or is not a member here).
  const Cell* cell_of_member(uint64_t conn) const;
  size_t member_count() const { return members_.size(); }

  // One batch: call begin, then add each pending event in order (cell null:
  // not positioned, it goes to every member).
  void begin_batch();
  void add_event(uint32_t index, const Cell* cell);
  // Whether the batch holds any positioned event (else the grid filters nothing).
  bool batch_positioned() const { return used_ > 0; }
  // The batch's events a member in `cell` receives, ascending: every
  // non-positioned one and those of its own and the neighbouring cells.
  void collect(const Cell& cell, std::vector<uint32_t>& out) const;

 private:
  std::unordered_map<uint64_t, std::optional<Cell>> members_;
  bool any_z_ = false;  // some position had z != 0: neighbourhoods are 3-deep
  // The batch's events by cell: slot_of_ maps a cell to one of the first
  // used_ vectors of buckets_ (kept, with their capacity, between batches).
  std::unordered_map<Cell, uint32_t, CellHash> slot_of_;
  std::vector<std::vector<uint32_t>> buckets_;
  uint32_t used_ = 0;
  std::vector<uint32_t> unpositioned_;
};

}  // namespace parley::hub
