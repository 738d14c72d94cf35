// parley-bench: load generator for Parley and its peers. See bench/README.md.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "churn.h"
#include "compare.h"
#include "events.h"
#include "options.h"
#include "report.h"
#include "runner.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    fmt::print("{}", bench::usage());
    return args.empty() ? 2 : 0;
  }
  std::string command_line = "parley-bench";
  for (auto& a : args) command_line += " " + a;
  try {
    if (args[0] == "compare") {
      args.erase(args.begin());
      bench::Options o = bench::parse_options(args);
      o.command_line = command_line;
      return bench::compare(o);
    }
    bench::Options o = bench::parse_options(args);
    o.command_line = command_line;
    if (o.scenario == "events") return bench::run_events(o).exit_code;  // prints its own summary
    bench::RunResult r = o.scenario == "churn" ? bench::run_churn(o) : bench::run(o);
    if (o.scenario != "churn") bench::print_table(r);  // churn prints its own summary
    if (!o.json_out.empty() && !bench::write_file(o.json_out, bench::to_json(r)))
      fmt::print(stderr, "cannot write {}\n", o.json_out);
    if (!o.html_out.empty() &&
        !bench::write_file(o.html_out, bench::to_html({&r}, "parley-bench: " + o.scenario)))
      fmt::print(stderr, "cannot write {}\n", o.html_out);
    return r.exit_code;
  } catch (const std::exception& e) {
    fmt::print(stderr, "parley-bench: {}\n{}", e.what(), bench::usage());
    return 2;
  }
}
