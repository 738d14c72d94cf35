#include "store/store_refusal.h"

namespace parley::store {

std::string refusal_reason(std::string_view text) {
  auto has = [&](std::string_view s) { return text.find(s) != std::string_view::npos; };
  if (has("No space left") || has("NoSpace") || has("no space")) return "disk_full";
  if (has("Too many open files") || has("EMFILE") || has("ENFILE")) return "too_many_open_files";
  if (has("Corruption")) return "corruption";
  if (has("IO error") || has("IOError")) return "io_error";
  return "store_error";
}

Error refusal_error(std::string_view reason) {
  std::string msg = "store refusing writes";
  if (reason == "disk_full") {
    msg += ": disk full";
  } else if (reason == "too_many_open_files") {
    msg += ": out of file descriptors";
  } else if (reason == "corruption") {
    msg += ": damaged data";
  } else if (reason == "io_error") {
    msg += ": disk error";
  }
  return Error{ErrorCode::kUnavailable, std::move(msg), kRefusalRetryMs};
}

}  // namespace parley::store
