#include "compare.h"

#include <fmt/format.h>

namespace bench {

int compare(const Options&) {
  fmt::print(stderr, "compare: not yet\n");
  return 2;
}

}  // namespace bench
