#include "server/cli.h"

#include <charconv>

namespace parley::server {
namespace {

// A token living longer than this is a configuration mistake, not a choice.
constexpr int64_t kMaxTtlSeconds = 10LL * 366 * 24 * 3600;

Error usage(std::string msg) { return Error{ErrorCode::kBadRequest, std::move(msg)}; }

// Takes the value after args[i] for `flag`, advancing i.
Result<std::string> value_of(const std::vector<std::string>& args, size_t& i) {
  if (i + 1 >= args.size()) return usage(args[i] + " needs a value");
  return args[++i];
}

}  // namespace

Result<int64_t> parse_int_arg(std::string_view flag, std::string_view text, int64_t lo,
                              int64_t hi) {
  int64_t v = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto r = std::from_chars(first, last, v);
  if (text.empty() || r.ec != std::errc() || r.ptr != last || v < lo || v > hi) {
    return usage(std::string(flag) + " must be a whole number from " + std::to_string(lo) +
                 " to " + std::to_string(hi) + ", not \"" + std::string(text) + "\"");
  }
  return v;
}

Result<ServeArgs> parse_serve_args(const std::vector<std::string>& args) {
  ServeArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config") {
      auto v = value_of(args, i);
      if (!v) return v.error();
      out.config_path = std::move(*v);
    } else if (args[i] == "--accept-data-loss") {
      out.accept_data_loss = true;
    } else {
      return usage("serve: unknown argument \"" + args[i] + "\"");
    }
  }
  return out;
}

Result<TokenArgs> parse_token_args(const std::vector<std::string>& args) {
  TokenArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--chans") {
      out.has_chans = true;
      while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
        out.chans.push_back(args[++i]);
        if (out.chans.back().empty()) return usage("--chans: a pattern must not be empty");
      }
      continue;
    }
    std::string* field = a == "--config" ? &out.config_path
                         : a == "--tenant" ? &out.tenant
                         : a == "--user"   ? &out.user
                                           : nullptr;
    if (!field && a != "--ttl") return usage("token: unknown argument \"" + a + "\"");
    auto v = value_of(args, i);
    if (!v) return v.error();
    if (field) {
      if (v->empty()) return usage(a + " must not be empty");
      *field = std::move(*v);
      continue;
    }
    auto ttl = parse_int_arg("--ttl", *v, 1, kMaxTtlSeconds);
    if (!ttl) return ttl.error();
    out.ttl_s = *ttl;
  }
  if (out.tenant.empty()) return usage("token: --tenant is required");
  if (out.user.empty()) return usage("token: --user is required");
  return out;
}

Result<CheckConfigArgs> parse_check_config_args(const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0].empty() || args[0].rfind("--", 0) == 0) {
    return usage("check-config takes one argument: the configuration file");
  }
  return CheckConfigArgs{args[0]};
}

Result<PersistArgs> parse_persist_args(const std::vector<std::string>& args) {
  PersistArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] != "--config") return usage("persist: unknown argument \"" + args[i] + "\"");
    auto v = value_of(args, i);
    if (!v) return v.error();
    out.config_path = std::move(*v);
  }
  if (out.config_path.empty()) return usage("persist needs --config FILE");
  return out;
}

Result<ReloadArgs> parse_reload_args(const std::vector<std::string>& args) {
  ReloadArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string* field = args[i] == "--config"   ? &out.config_path
                         : args[i] == "--server" ? &out.server
                         : args[i] == "--key"    ? &out.key
                                                 : nullptr;
    if (!field) return usage("reload: unknown argument \"" + args[i] + "\"");
    auto v = value_of(args, i);
    if (!v) return v.error();
    if (v->empty()) return usage(args[i - 1] + " must not be empty");
    *field = std::move(*v);
  }
  if (out.config_path.empty() && (out.server.empty() || out.key.empty())) {
    return usage("reload: give --config FILE (or both --server and --key)");
  }
  return out;
}

}  // namespace parley::server
