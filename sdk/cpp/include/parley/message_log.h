// parley::MessageLog: a channel's messages by seq, with edits and deletes
// applied by the client's rule of PROTOCOL.md "Moderation: delete and edit"
// (the JS SDK's MessageLog). Feed it every entry a Channel delivers (on_msg,
// on_edit, on_delete, live or from a resume) and the entries of history
// pages, in any order of pages: applying an entry twice changes nothing more,
// an edit or delete of a message it does not hold changes nothing (history
// answers that message's current version), and a delete is final.
//
// Pure data; no thread of its own (the caller's, usually poll()'s).
#pragma once

#include <cstddef>
#include <map>
#include <vector>

#include "parley/events.h"

namespace parley {

class MessageLog {
 public:
  /// `max`: messages kept; past it the oldest seqs go first.
  explicit MessageLog(std::size_t max = 10000) : max_(max < 1 ? 1 : max) {}

  std::size_t size() const { return by_seq_.size(); }
  /// The message with this seq in its current version, or nullptr.
  const Message* get(int64_t seq) const;
  /// Every message held, oldest seq first.
  std::vector<Message> messages() const;
  /// Applies one entry; returns the message it added or changed (its current
  /// version, valid until the next apply), or nullptr when it changed nothing.
  const Message* apply(const Message& entry);
  /// apply() of each entry of a history page (or a backfill), in order.
  void apply_all(const std::vector<Message>& entries);

 private:
  const Message* put(const Message& msg);
  std::map<int64_t, Message> by_seq_;
  std::size_t max_;
};

}  // namespace parley
