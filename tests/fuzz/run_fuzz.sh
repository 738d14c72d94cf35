#!/usr/bin/env bash
# Builds the protocol fuzz target and the C++ SDK's delta applier target with
# clang's libFuzzer and sanitizers, then runs each over its seed corpus for
# FUZZ_SECONDS (default 30).
#   tests/fuzz/run_fuzz.sh [build_dir]          (default build/fuzz)
#   FUZZ_SECONDS=600 FUZZ_JOBS=2 tests/fuzz/run_fuzz.sh
# Exits non-zero when the build fails or the fuzzer finds a crash, a leak, a
# sanitizer report or a broken invariant; the reproducer is left in build_dir.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-build/fuzz}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
seconds="${FUZZ_SECONDS:-30}"
jobs="${FUZZ_JOBS:-1}"
cxx="${CXX_FUZZ:-clang++}"

mkdir -p "$build/corpus"

# The sources are compiled directly rather than through CMake: the fuzz build
# needs its own compiler and flags, and protocol/ + common/ depend on nothing
# but simdjson, libcrypto and msgpack-c (header-only) (that is what keeps them
# fuzzable).
sources=()
for f in "$root"/src/protocol/*.cc "$root"/src/common/*.cc; do
  [[ "$f" == *_test.cc || "$f" == *_bench.cc ]] || sources+=("$f")
done

# protocol/version.cc takes the version CMake gives it; read the same line.
version="$(sed -n 's/^project(parley VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")"
[[ -n "$version" ]] || { echo "no project version in CMakeLists.txt" >&2; exit 1; }

echo "building $build/fuzz_decoder"
nice "$cxx" -std=c++20 -O1 -g -fno-omit-frame-pointer -DPARLEY_VERSION="\"$version\"" \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$root/src" "${sources[@]}" "$root/tests/fuzz/fuzz_decoder.cc" \
  -lsimdjson -lcrypto -o "$build/fuzz_decoder"

# New inputs go to the build dir's corpus (first dir); the committed seeds stay
# untouched. -jobs>1 forks workers that share that corpus.
parallel=()
if ((jobs > 1)); then parallel=(-jobs="$jobs" -workers="$jobs"); fi

# The C++ SDK's state delta applier (fuzz_sdk_delta.cc): the SDK's own
# sources, nlohmann's header, exceptions turned into aborts.
echo "building $build/fuzz_sdk_delta"
mkdir -p "$build/corpus_sdk_delta"
nice "$cxx" -std=c++17 -O1 -g -fno-omit-frame-pointer -DJSON_NOEXCEPTION \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$root/sdk/cpp/include" -I"$root/sdk/cpp/src" "$root/sdk/cpp/src/state_streams.cc" \
  "$root/tests/fuzz/fuzz_sdk_delta.cc" -o "$build/fuzz_sdk_delta"

# parley-bench's delta reading (fuzz_bench_delta.cc): its frame readers and
# audit, simdjson and msgpack-c (header-only) as the bench builds them.
echo "building $build/fuzz_bench_delta"
mkdir -p "$build/corpus_bench_delta"
nice "$cxx" -std=c++20 -O1 -g -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$root/tools/bench" "$root/tools/bench/server_frame.cc" "$root/tools/bench/msgpack_frame.cc" \
  "$root/tools/bench/delta_audit.cc" "$root/tests/fuzz/fuzz_bench_delta.cc" \
  -lsimdjson -o "$build/fuzz_bench_delta"

export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# fuzz TARGET ARTIFACT_PREFIX CORPUS SEEDS: one bounded run; new inputs go to
# CORPUS (first dir), the committed SEEDS stay untouched.
fuzz() {
  echo "fuzzing $1 for ${seconds}s"
  nice "$build/$1" \
    -max_total_time="$seconds" \
    -timeout=10 \
    -dict="$root/tests/fuzz/protocol.dict" \
    -artifact_prefix="$build/$2" \
    -print_final_stats=1 \
    "${parallel[@]}" \
    "$3" "$4"
}
fuzz fuzz_decoder "" "$build/corpus" "$root/tests/fuzz/corpus"
fuzz fuzz_sdk_delta sdk-delta- "$build/corpus_sdk_delta" "$root/tests/fuzz/corpus_sdk_delta"
fuzz fuzz_bench_delta bench-delta- "$build/corpus_bench_delta" "$root/tests/fuzz/corpus_bench_delta"
