// Counts heap allocations of the calling thread, for micro-benchmarks: a
// deterministic figure beside the noisy timings ("allocs per op").
//
// Replaces the global operator new/delete, so it must be included by exactly
// one translation unit of a benchmark executable, and by nothing else.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <new>

namespace parley::bench {
// Allocations made by this thread so far.
inline thread_local uint64_t t_allocations = 0;
}  // namespace parley::bench

// GCC flags free() of what its own operator new returned; here both are malloc's.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t n) {
  ++parley::bench::t_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  ++parley::bench::t_allocations;
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return ::operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop
