// libpq, loaded with dlopen the first time PostgreSQL is used, so that a server
// that never talks to PostgreSQL (the embedded and memory stores, a valkey store
// without postgres_url) does not map libpq and what it pulls in (GnuTLS, Kerberos,
// LDAP, p11-kit: ~3 MiB of resident pages and their start-up constructors).
// Debian's libpq5 stays a dependency of the package (deploy/debian/packaging.cmake).
//
// Thread: any; the first call loads, later calls return the same table.
#pragma once

#include <libpq-fe.h>

#include "common/status.h"

namespace parley::store::postgres {

// The libpq functions Parley calls, resolved from libpq.so.5.
struct LibPq {
  decltype(&::PQconnectdbParams) connectdb_params;
  decltype(&::PQstatus) status;
  decltype(&::PQerrorMessage) error_message;
  decltype(&::PQfinish) finish;
  decltype(&::PQsetNoticeProcessor) set_notice_processor;
  decltype(&::PQsendQueryParams) send_query_params;
  decltype(&::PQisBusy) is_busy;
  decltype(&::PQsocket) socket;
  decltype(&::PQconsumeInput) consume_input;
  decltype(&::PQgetResult) get_result;
  decltype(&::PQresultStatus) result_status;
  decltype(&::PQresultErrorField) result_error_field;
  decltype(&::PQresultErrorMessage) result_error_message;
  decltype(&::PQclear) clear;
  decltype(&::PQntuples) ntuples;
  decltype(&::PQgetvalue) getvalue;
  decltype(&::PQgetlength) getlength;
  decltype(&::PQcmdTuples) cmd_tuples;
};

// The table, loading libpq on the first call; kUnavailable naming the library or
// symbol that could not be loaded (the same error on every later call).
Result<const LibPq*> libpq();

// The table once libpq() has succeeded (a PGconn or PGresult exists only then).
const LibPq& loaded_libpq();

}  // namespace parley::store::postgres
