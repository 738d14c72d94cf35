#include "hub/history.h"

#include <algorithm>

#include "protocol/encoder.h"

namespace parley::hub {

EncodedPage encode_page(std::string_view ch, const std::vector<store::StoredMessage>& msgs,
                        uint64_t cut, uint64_t max_bytes, bool keep_oldest) {
  size_t end = msgs.size();
  while (end > 0 && msgs[end - 1].seq > cut) --end;  // committed in the store, not yet acked
  std::vector<std::string> one;
  one.reserve(std::min<size_t>(end, kBackfillPage));
  EncodedPage page;
  uint64_t bytes = 0;
  auto take = [&](const store::StoredMessage& m) {
    std::string e;
    protocol::encode_msg(e, entry_view(ch, m));
    if (!one.empty() && bytes + e.size() + 1 > max_bytes) return false;
    bytes += e.size() + 1;
    one.push_back(std::move(e));
    return true;
  };
  if (keep_oldest) {
    for (size_t i = 0; i < end && take(msgs[i]); ++i) {
    }
  } else {
    for (size_t i = end; i > 0 && take(msgs[i - 1]); --i) {
    }
    std::reverse(one.begin(), one.end());
  }
  page.msgs_json.reserve(bytes);
  for (auto& e : one) {
    if (!page.msgs_json.empty()) page.msgs_json += ',';
    page.msgs_json += e;
  }
  page.count = one.size();
  return page;
}

}  // namespace parley::hub
