#include "parley/message_log.h"

namespace parley {

const Message* MessageLog::get(int64_t seq) const {
  auto it = by_seq_.find(seq);
  return it == by_seq_.end() ? nullptr : &it->second;
}

std::vector<Message> MessageLog::messages() const {
  std::vector<Message> out;
  out.reserve(by_seq_.size());
  for (auto& [seq, m] : by_seq_) out.push_back(m);
  return out;
}

const Message* MessageLog::apply(const Message& entry) {
  if (entry.seq < 1) return nullptr;
  if (entry.kind == EntryKind::msg) return put(entry);
  auto it = by_seq_.find(entry.target);
  if (it == by_seq_.end() || it->second.deleted) return nullptr;
  Message& held = it->second;
  if (entry.kind == EntryKind::edit) {
    held.body = entry.body;
    held.edited = entry.ts;
  } else {
    held.deleted = true;
    held.body = nullptr;
    held.edited = -1;
  }
  return &held;
}

void MessageLog::apply_all(const std::vector<Message>& entries) {
  for (const Message& e : entries) apply(e);
}

const Message* MessageLog::put(const Message& msg) {
  auto it = by_seq_.find(msg.seq);
  if (it != by_seq_.end()) {
    const Message& held = it->second;
    if (held.deleted) return nullptr;  // final: an older version read again changes nothing
    if (held.edited >= 0 && msg.edited < held.edited && !msg.deleted) return nullptr;  // an older version
    it->second = msg;
    return &it->second;
  }
  auto [pos, added] = by_seq_.emplace(msg.seq, msg);
  if (by_seq_.size() > max_) {
    if (by_seq_.begin() == pos) {
      by_seq_.erase(pos);
      return nullptr;  // older than everything kept
    }
    by_seq_.erase(by_seq_.begin());
  }
  return &pos->second;
}

}  // namespace parley
