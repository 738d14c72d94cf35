// RocksDbLogger: RocksDB's info log, sent to Parley's own log (spdlog) instead of the
// LOG file RocksDB would keep in the data directory.
//
// Why: RocksDB's file logger writes through a WritableFileWriter. Once one of its
// writes fails (ENOSPC on a full disk), the writer remembers the error and the NEXT
// log line trips `assert(sync_without_flush_called_)` in Debian's librocksdb, which
// is built with assertions: a full disk aborted the process at the first RocksDB log
// line after it filled, and every restart on the still-full disk aborted the same way
// (DBImpl's constructor logs its build version). A logger that never touches the disk
// cannot fail that way. It also makes RocksDB's warnings (background errors, WAL
// corruption met in recovery) visible where operators look.
//
// Threading: RocksDB calls Logv from any of its threads; spdlog's default logger is
// thread-safe.
#pragma once

#include <cstdarg>

#include <rocksdb/env.h>

namespace parley::store {

class RocksDbLogger final : public rocksdb::Logger {
 public:
  // Lines below `level` are dropped (RocksDB's INFO level is chatty: every flush,
  // compaction and its full option dump).
  explicit RocksDbLogger(rocksdb::InfoLogLevel level = rocksdb::InfoLogLevel::WARN_LEVEL);

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override;
  void Logv(rocksdb::InfoLogLevel level, const char* format, va_list ap) override;
};

}  // namespace parley::store
