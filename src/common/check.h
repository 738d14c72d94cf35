// PARLEY_CHECK: an invariant that "cannot fail". Unlike assert() it stays on in
// release builds: a broken threading or ordering invariant must stop the
// process loudly rather than corrupt state silently. Keep it off hot inner
// loops; a branch on a thread-local is the intended cost.
#pragma once

#include <cstdio>
#include <cstdlib>

#define PARLEY_CHECK(cond)                                                               \
  do {                                                                                   \
    if (__builtin_expect(!(cond), 0)) {                                                  \
      std::fprintf(stderr, "parley: check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)
