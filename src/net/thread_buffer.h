// Per-thread scratch buffers, allocated on a thread's first use.
//
// A `thread_local char buf[N]` is part of the static TLS block that glibc puts at
// the top of every thread's stack and zero-fills when the thread starts, so every
// thread of the process (RocksDB's, the store's readers, the main thread) carried
// src/net's buffers, not only the loops that use them: 92 KiB per thread, 0.8 MiB
// of an idle server (issue 12).
//
// Thread: the calling thread's own buffer, valid until that thread exits.
#pragma once

#include <cstddef>
#include <memory>

namespace parley::net {

// One buffer per (Tag, Bytes, T) and thread; each call site names its own Tag.
template <typename Tag, size_t Bytes, typename T = char>
T* thread_buffer() {
  thread_local std::unique_ptr<T[]> buf;
  if (!buf) [[unlikely]] buf = std::make_unique_for_overwrite<T[]>(Bytes);
  return buf.get();
}

}  // namespace parley::net
