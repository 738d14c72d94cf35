// Why the embedded store refuses writes: a short reason code for /healthz, metrics
// and clients, and the full text (which may name files) for the server log only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace parley::store {

struct Refusal {
  std::string reason;  // disk_full | too_many_open_files | io_error | corruption | store_error
  std::string detail;  // for the server log
  int64_t since_ms = 0;
};

// Clients are told to retry after this long; the store itself retries every second.
inline constexpr int kRefusalRetryMs = 1000;

// The reason code of a RocksDB (or errno) error text.
std::string refusal_reason(std::string_view error_text);
// What a client is told while the store refuses: `unavailable`, retryable, and no
// path or library text (PROTOCOL.md's error messages are the server's, not its disk's).
Error refusal_error(std::string_view reason);

}  // namespace parley::store
