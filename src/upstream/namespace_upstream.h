// What the loops forwarding one namespace's events share: its target, its
// queue bound and its counters. Created at start-up for every namespace with
// an `upstream`; immutable afterwards except the atomics (any thread). A config
// reload does not change the target (it needs a restart), but the api_key sent
// follows the tenant's current one (api_key_now).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "upstream/upstream_url.h"

namespace parley::upstream {

struct NamespaceUpstream {
  std::string tenant;
  std::string ns_name;        // "default" for the tenant's fallback namespace
  UpstreamUrl url;
  std::string api_key;        // sent as Authorization: Bearer, so the app server knows us
  // The tenant's api_key now (after a reload's rotation), called on a pipe's
  // loop once per request; empty function or answer: api_key.
  std::function<std::string()> api_key_now;
  uint32_t limit = 100'000;   // upstream_queue: events waiting, all loops together
  uint32_t tick_ms = 20;

  std::atomic<int64_t> queued{0};    // waiting or in a request, all loops
  std::atomic<uint64_t> sent{0};     // events the app server answered 2xx
  std::atomic<uint64_t> failed{0};   // requests with no answer or a non-2xx status
  std::atomic<uint64_t> retried{0};  // requests sent again after a failure
  std::atomic<uint64_t> dropped{0};  // events dropped by the queue bound (oldest first)
  std::atomic<int64_t> overflow_logged_ms{0};  // last overflow warning (one per 10 s)
};

}  // namespace parley::upstream
