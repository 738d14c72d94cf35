#include "store/rocksdb_logger.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

namespace parley::store {

RocksDbLogger::RocksDbLogger(rocksdb::InfoLogLevel level) : rocksdb::Logger(level) {}

void RocksDbLogger::Logv(const char* format, va_list ap) {
  Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
}

void RocksDbLogger::Logv(rocksdb::InfoLogLevel level, const char* format, va_list ap) {
  if (level < GetInfoLogLevel()) return;
  char line[1024];
  int n = std::vsnprintf(line, sizeof line, format, ap);
  if (n < 0) return;
  size_t len = std::min(static_cast<size_t>(n), sizeof line - 1);
  while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == ' ')) line[--len] = '\0';
  switch (level) {
    case rocksdb::InfoLogLevel::DEBUG_LEVEL:
      spdlog::debug("rocksdb: {}", line);
      break;
    case rocksdb::InfoLogLevel::INFO_LEVEL:
    case rocksdb::InfoLogLevel::HEADER_LEVEL:
      spdlog::info("rocksdb: {}", line);
      break;
    case rocksdb::InfoLogLevel::WARN_LEVEL:
      spdlog::warn("rocksdb: {}", line);
      break;
    default:
      spdlog::error("rocksdb: {}", line);
      break;
  }
}

}  // namespace parley::store
