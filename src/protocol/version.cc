#include "protocol/version.h"

namespace parley::protocol {

// Defined for this file only (CMakeLists.txt): a new version rebuilds one file.
std::string_view server_version() { return PARLEY_VERSION; }

}  // namespace parley::protocol
