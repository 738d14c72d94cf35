#include "store/postgres/libpq.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace parley::store::postgres {

namespace {
// The soname of Debian's libpq5 (the ABI every libpq since PostgreSQL 8.2 keeps).
constexpr const char* kSoname = "libpq.so.5";

LibPq g_table;
std::once_flag g_once;
std::string g_error;  // empty once loaded; written once under g_once

template <typename F>
bool resolve(void* lib, const char* name, F& slot) {
  void* p = ::dlsym(lib, name);
  if (!p) {
    g_error = std::string("postgres: ") + kSoname + " has no " + name;
    return false;
  }
  slot = reinterpret_cast<F>(p);
  return true;
}

void load() {
  // RTLD_LOCAL: libpq's symbols (and its libraries') stay out of the global scope.
  void* lib = ::dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = ::dlerror();
    g_error = std::string("postgres: cannot load ") + kSoname + ": " + (why ? why : "?") +
              " (install libpq5)";
    return;
  }
  LibPq& t = g_table;
  const bool ok = resolve(lib, "PQconnectdbParams", t.connectdb_params) &&
                  resolve(lib, "PQstatus", t.status) &&
                  resolve(lib, "PQerrorMessage", t.error_message) &&
                  resolve(lib, "PQfinish", t.finish) &&
                  resolve(lib, "PQsetNoticeProcessor", t.set_notice_processor) &&
                  resolve(lib, "PQsendQueryParams", t.send_query_params) &&
                  resolve(lib, "PQisBusy", t.is_busy) && resolve(lib, "PQsocket", t.socket) &&
                  resolve(lib, "PQconsumeInput", t.consume_input) &&
                  resolve(lib, "PQgetResult", t.get_result) &&
                  resolve(lib, "PQresultStatus", t.result_status) &&
                  resolve(lib, "PQresultErrorField", t.result_error_field) &&
                  resolve(lib, "PQresultErrorMessage", t.result_error_message) &&
                  resolve(lib, "PQclear", t.clear) && resolve(lib, "PQntuples", t.ntuples) &&
                  resolve(lib, "PQgetvalue", t.getvalue) && resolve(lib, "PQgetlength", t.getlength) &&
                  resolve(lib, "PQcmdTuples", t.cmd_tuples);
  // The library stays loaded for the process's life (results may outlive any one user).
  if (ok) g_error.clear();
}
}  // namespace

Result<const LibPq*> libpq() {
  std::call_once(g_once, [] {
    g_error = "postgres: libpq not loaded";
    load();
  });
  if (!g_error.empty()) return Error{ErrorCode::kUnavailable, g_error, 1000};
  return &g_table;
}

const LibPq& loaded_libpq() {
  // Reached only through a PGconn/PGresult, which exist only after a successful load.
  if (auto t = libpq(); t) return **t;
  std::abort();
}

}  // namespace parley::store::postgres
