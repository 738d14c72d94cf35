// Micro-benchmarks of the client-frame codec: decode of typical pub / state /
// join frames, encode_msg of a sequenced message (each in JSON and in
// MessagePack, the same frame converted), and the TCP length-prefix
// reader cutting a received byte stream into frames. Not run by the tests:
// see docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <variant>

#include "common/bench_alloc_counter.h"
#include "protocol/decoder.h"
#include "protocol/encoder.h"
#include "protocol/msgpack_decoder.h"
#include "protocol/msgpack_encoder.h"
#include "protocol/tcp_framing.h"

namespace parley::protocol {
namespace {

// A JSON object body of about `bytes` bytes, shaped like a chat message or an
// avatar state: a few short fields and one longer text.
std::string body_of(size_t bytes) {
  std::string body = R"({"kind":"text","n":42,"pos":[12.5,-3.25,0],"text":")";
  const std::string tail = R"("})";
  while (body.size() + tail.size() < bytes) body += "lorem ipsum dolor sit amet "[body.size() % 27];
  return body + tail;
}

std::string pub_frame(size_t body_bytes) {
  return R"({"op":"pub","ch":"chat:lobby-17","id":"c-8127364","rid":4711,"body":)" +
         body_of(body_bytes) + "}";
}

std::string state_frame(size_t body_bytes) {
  return R"({"op":"state","ch":"world:7","key":"pos","body":)" + body_of(body_bytes) + "}";
}

// Heap allocations per iteration, from the count before the loop.
void count_allocs(benchmark::State& state, uint64_t before) {
  state.counters["allocs"] = benchmark::Counter(static_cast<double>(bench::t_allocations - before),
                                                benchmark::Counter::kAvgIterations);
}

std::string msgpack_of(const std::string& json) {
  std::string mp;
  append_msgpack_from_json(mp, json);
  return mp;
}

template <auto Decode = decode_client_op>
void run_decode(benchmark::State& state, const std::string& frame) {
  const DecodeLimits limits;
  if (!std::holds_alternative<ClientOp>(Decode(frame, limits))) {
    state.SkipWithError("the frame does not decode");
    return;
  }
  const uint64_t allocs = bench::t_allocations;
  for (auto _ : state) {
    auto r = Decode(frame, limits);
    benchmark::DoNotOptimize(r);
  }
  count_allocs(state, allocs);
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(frame.size()));
}

// Arg: body bytes.
void BM_DecodePub(benchmark::State& state) { run_decode(state, pub_frame(state.range(0))); }
BENCHMARK(BM_DecodePub)->ArgName("body")->Arg(100)->Arg(1024);

void BM_DecodeState(benchmark::State& state) { run_decode(state, state_frame(state.range(0))); }
BENCHMARK(BM_DecodeState)->ArgName("body")->Arg(100)->Arg(1024);

void BM_DecodeJoin(benchmark::State& state) {
  run_decode(state, R"({"op":"join","ch":"chat:lobby-17","since":1234567,"rid":12})");
}
BENCHMARK(BM_DecodeJoin);

// The same frames from a MessagePack client (msgpack_decoder.h).
constexpr auto kMsgpack = decode_client_op_msgpack;
void BM_DecodePubMsgpack(benchmark::State& state) {
  run_decode<kMsgpack>(state, msgpack_of(pub_frame(state.range(0))));
}
BENCHMARK(BM_DecodePubMsgpack)->ArgName("body")->Arg(100)->Arg(1024);

void BM_DecodeStateMsgpack(benchmark::State& state) {
  run_decode<kMsgpack>(state, msgpack_of(state_frame(state.range(0))));
}
BENCHMARK(BM_DecodeStateMsgpack)->ArgName("body")->Arg(100)->Arg(1024);

// As the shard does it: a fresh string per message (it becomes the shared
// buffer); for MessagePack members the msg is then converted (what the fan-out
// does once per event per tick for a channel with such members).
template <bool kMsgpack>
void run_encode_msg(benchmark::State& state) {
  const std::string body = body_of(state.range(0));
  uint64_t seq = 1000;
  int64_t bytes = 0;
  const uint64_t allocs = bench::t_allocations;
  std::string json;
  for (auto _ : state) {
    std::string out;
    encode_msg(kMsgpack ? json : out,
               {"chat:lobby-17", ++seq, "user-4711", "c-8127364", 1764460800123, body});
    if constexpr (kMsgpack) {
      append_msgpack_from_json(out, json);
      json.clear();
    }
    bytes += static_cast<int64_t>(out.size());
    benchmark::DoNotOptimize(out);
  }
  count_allocs(state, allocs);
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(bytes);
}

// Arg: body bytes.
void BM_EncodeMsg(benchmark::State& state) { run_encode_msg<false>(state); }
BENCHMARK(BM_EncodeMsg)->ArgName("body")->Arg(100)->Arg(1024);

void BM_EncodeMsgMsgpack(benchmark::State& state) { run_encode_msg<true>(state); }
BENCHMARK(BM_EncodeMsgMsgpack)->ArgName("body")->Arg(100)->Arg(1024);

// The TCP session's receive path: reads of up to 2048 bytes (its read chunk)
// land in the reader's buffer, then next() yields every complete frame.
// Frames straddle reads. One iteration = one frame. Arg: body bytes.
void BM_LengthPrefixedReader(benchmark::State& state) {
  constexpr size_t kReadChunk = 2048;
  constexpr int kFrames = 256;
  const std::string frame = pub_frame(state.range(0));
  std::string stream;
  for (int i = 0; i < kFrames; ++i) append_length_prefixed(stream, frame);

  LengthPrefixedReader reader(hard_frame_limit(DecodeLimits{}));
  size_t pos = 0;
  const uint64_t allocs = bench::t_allocations;
  for (auto _ : state) {
    for (;;) {
      auto next = reader.next();
      if (next.status == LengthPrefixedReader::Status::kFrame) {
        benchmark::DoNotOptimize(next.frame.data());
        break;
      }
      if (next.status == LengthPrefixedReader::Status::kOversized) {
        state.SkipWithError("oversized");
        return;
      }
      // Need more: one socket read's worth of the (endless, looping) stream.
      auto room = reader.prepare(kReadChunk);
      size_t n = std::min({room.size(), kReadChunk, stream.size() - pos});
      std::memcpy(room.data(), stream.data() + pos, n);
      reader.commit(n);
      pos = (pos + n) % stream.size();
    }
  }
  count_allocs(state, allocs);
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(frame.size() + kLengthPrefixBytes));
}
BENCHMARK(BM_LengthPrefixedReader)->ArgName("body")->Arg(100)->Arg(1024);

}  // namespace
}  // namespace parley::protocol

BENCHMARK_MAIN();
