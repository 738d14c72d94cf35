#include "persist/archive_writer.h"

#include <algorithm>
#include <cstdlib>

#include "store/postgres/libpq.h"

namespace parley::persist {

namespace {
// Rows per INSERT statement: 7 parameters each stays far below libpq's 65535.
constexpr size_t kRowsPerStatement = 1000;

std::string insert_sql(size_t rows) {
  std::string sql = std::string("INSERT INTO ") + store::postgres::kTable +
                    " (tenant, channel, seq, ts_ms, sender, msg_id, body) VALUES ";
  for (size_t r = 0; r < rows; ++r) {
    if (r) sql += ',';
    sql += '(';
    for (size_t c = 0; c < 7; ++c) {
      if (c) sql += ',';
      sql += '$' + std::to_string(r * 7 + c + 1);
    }
    sql += ')';
  }
  sql += " ON CONFLICT (tenant, channel, seq) DO NOTHING";
  return sql;
}
}  // namespace

Result<WriteCount> ArchiveWriter::write(const std::vector<const ArchiveRow*>& rows) {
  WriteCount n;
  if (rows.empty()) return n;
  if (Status s = conn_.ensure(); !s) return s.error();
  auto fail = [this](Error e) -> Result<WriteCount> {
    if (conn_.connected()) (void)conn_.exec("ROLLBACK");
    return e;
  };
  if (auto r = conn_.exec("BEGIN"); !r) return fail(r.error());
  for (size_t at = 0; at < rows.size(); at += kRowsPerStatement) {
    const size_t count = std::min(kRowsPerStatement, rows.size() - at);
    std::vector<std::string> params;
    params.reserve(count * 7);
    for (size_t i = at; i < at + count; ++i) {
      const ArchiveRow& row = *rows[i];
      params.push_back(row.tenant);
      params.push_back(row.channel);
      params.push_back(std::to_string(row.seq));
      params.push_back(std::to_string(row.ts_ms));
      params.push_back(row.sender);
      params.push_back(row.msg_id);
      params.push_back(row.body);
    }
    auto r = conn_.exec(insert_sql(count), params);
    if (!r) return fail(r.error());
    const uint64_t inserted = std::strtoull(store::postgres::loaded_libpq().cmd_tuples(r->get()), nullptr, 10);
    n.inserted += inserted;
    n.duplicates += count - std::min<uint64_t>(count, inserted);
  }
  if (auto r = conn_.exec("COMMIT"); !r) return fail(r.error());
  return n;
}

}  // namespace parley::persist
