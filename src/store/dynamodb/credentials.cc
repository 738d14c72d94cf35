#include "store/dynamodb/credentials.h"

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include "common/clock.h"
#include "store/dynamodb/http_client.h"

namespace parley::store::dynamodb {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool read_file(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream s;
  s << f.rdbuf();
  *out = s.str();
  return true;
}

Error unavailable(std::string msg) { return Error{ErrorCode::kUnavailable, "dynamodb credentials: " + std::move(msg)}; }

// Hosts a plain-http credentials endpoint may be on (AWS's SDKs allow the same):
// loopback, the ECS agent (169.254.170.2) and EKS Pod Identity's agent.
bool local_host(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "[::1]" || host == "169.254.170.2" ||
         host == "169.254.170.23" || host == "[fd00:ec2::23]";
}

// "2026-12-04T03:00:00Z", optionally with fractional seconds: Unix ms; 0 when
// it is not in that form.
int64_t parse_expiration(std::string_view s) {
  std::tm tm{};
  int y, mo, d, h, mi, sec;
  char tail = 0;
  const std::string str(s);
  if (std::sscanf(str.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &sec, &tail) != 7) return 0;
  if (tail != 'Z' && tail != '.') return 0;
  if (tail == '.' && str.back() != 'Z') return 0;
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  const time_t t = timegm(&tm);
  return t > 0 ? int64_t{t} * 1000 : 0;
}

}  // namespace

Result<AwsCredentials> parse_shared_credentials(std::string_view text, std::string_view profile) {
  AwsCredentials c;
  bool in = false, found = false;
  std::istringstream lines{std::string(text)};
  std::string raw;
  while (std::getline(lines, raw)) {
    std::string_view line = trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']') return Error{ErrorCode::kBadRequest, "shared credentials: bad section line"};
      std::string_view name = trim(line.substr(1, line.size() - 2));
      if (name.rfind("profile ", 0) == 0) name = trim(name.substr(8));  // the config file's spelling
      in = name == profile;
      found = found || in;
      continue;
    }
    if (!in) continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    std::string key(trim(line.substr(0, eq)));
    std::transform(key.begin(), key.end(), key.begin(), [](unsigned char ch) { return std::tolower(ch); });
    const std::string value(trim(line.substr(eq + 1)));
    if (key == "aws_access_key_id") c.access_key = value;
    if (key == "aws_secret_access_key") c.secret_key = value;
    if (key == "aws_session_token") c.session_token = value;
  }
  if (!found) return Error{ErrorCode::kNotFound, "shared credentials: no profile " + std::string(profile)};
  if (c.access_key.empty() || c.secret_key.empty()) {
    return Error{ErrorCode::kBadRequest, "shared credentials: profile " + std::string(profile) +
                                             " lacks aws_access_key_id or aws_secret_access_key"};
  }
  return c;
}

Result<ExpiringCredentials> parse_container_credentials(std::string_view json) {
  simdjson::ondemand::parser parser;
  simdjson::padded_string padded(json);
  auto doc = parser.iterate(padded);
  simdjson::ondemand::object obj;
  if (doc.error() || doc.get_object().get(obj)) {
    return unavailable("the endpoint's answer is not a JSON object");
  }
  ExpiringCredentials out;
  for (auto f : obj) {
    std::string_view k, v;
    if (f.unescaped_key().get(k)) return unavailable("bad answer");
    if (f.value().get_string().get(v)) continue;  // other fields may be of any type
    if (k == "AccessKeyId") out.creds.access_key = std::string(v);
    if (k == "SecretAccessKey") out.creds.secret_key = std::string(v);
    if (k == "Token") out.creds.session_token = std::string(v);
    if (k == "Expiration") {
      out.expires_ms = parse_expiration(v);
      if (out.expires_ms == 0) return unavailable("unreadable Expiration " + std::string(v));
    }
  }
  if (out.creds.access_key.empty() || out.creds.secret_key.empty()) {
    return unavailable("the endpoint's answer lacks AccessKeyId or SecretAccessKey");
  }
  return out;
}

Result<CredentialSource> find_credentials(const AwsCredentials& configured) {
  CredentialSource s;
  if (!configured.access_key.empty()) {
    s.origin = "config";
    s.fixed = configured;
    return s;
  }
  if (!env("AWS_ACCESS_KEY_ID").empty() && !env("AWS_SECRET_ACCESS_KEY").empty()) {
    s.origin = "environment";
    s.fixed = {env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN")};
    return s;
  }
  std::string path = env("AWS_SHARED_CREDENTIALS_FILE");
  if (path.empty() && !env("HOME").empty()) path = env("HOME") + "/.aws/credentials";
  std::string profile = env("AWS_PROFILE");
  if (profile.empty()) profile = "default";
  std::string text;
  if (!path.empty() && read_file(path, &text)) {
    auto c = parse_shared_credentials(text, profile);
    if (c) {
      s.origin = "shared file " + path + " [" + profile + "]";
      s.fixed = *c;
      return s;
    }
    // A profile that is there but broken is the operator's mistake: say so
    // rather than fall through to a source they did not mean.
    if (c.error().code != ErrorCode::kNotFound) return Error{ErrorCode::kBadRequest, path + ": " + c.error().msg};
  }
  std::string url = env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  if (url.empty() && !env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").empty()) {
    url = "http://169.254.170.2" + env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  }
  if (!url.empty()) {
    const size_t scheme = url.find("://");
    const size_t slash = scheme == std::string::npos ? std::string::npos : url.find('/', scheme + 3);
    auto ep = parse_endpoint(slash == std::string::npos ? url : url.substr(0, slash));
    if (!ep) return Error{ErrorCode::kBadRequest, "AWS_CONTAINER_CREDENTIALS_FULL_URI: " + ep.error().msg};
    if (!ep->tls && !local_host(ep->host)) {
      return Error{ErrorCode::kBadRequest, "AWS_CONTAINER_CREDENTIALS_FULL_URI: plain http only to loopback or "
                                           "the container agent (169.254.170.2, 169.254.170.23)"};
    }
    s.origin = "container " + url;
    s.container = url;
    s.token = env("AWS_CONTAINER_AUTHORIZATION_TOKEN");
    s.token_file = env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    return s;
  }
  return Error{ErrorCode::kBadRequest,
               "dynamodb: no credentials (dynamodb.access_key_id and secret_access_key, AWS_ACCESS_KEY_ID and "
               "AWS_SECRET_ACCESS_KEY, " + (path.empty() ? std::string("~/.aws/credentials") : path) + " [" +
                   profile + "], or AWS_CONTAINER_CREDENTIALS_FULL_URI / _RELATIVE_URI)"};
}

CredentialProvider::CredentialProvider(CredentialSource source, uint32_t timeout_ms)
    : source_(std::move(source)), timeout_ms_(timeout_ms) {
  if (!source_.from_container()) {
    held_.creds = source_.fixed;
    have_ = true;
    return;
  }
  const size_t slash = source_.container.find('/', source_.container.find("://") + 3);
  path_ = slash == std::string::npos ? "/" : source_.container.substr(slash);
  http_ = std::make_unique<HttpClient>(
      *parse_endpoint(slash == std::string::npos ? source_.container : source_.container.substr(0, slash)),
      timeout_ms_);
}

CredentialProvider::~CredentialProvider() = default;

Status CredentialProvider::fetch() {
  std::vector<std::pair<std::string, std::string>> headers;
  std::string token = source_.token;
  if (!source_.token_file.empty()) {
    if (!read_file(source_.token_file, &token)) return unavailable("cannot read " + source_.token_file);
    token = std::string(trim(token));
  }
  if (!token.empty()) headers.emplace_back("authorization", token);
  headers.emplace_back("accept", "application/json");
  auto r = http_->send("GET", path_, headers, {});
  if (!r) return unavailable(r.error().msg);
  if (r->status != 200) return unavailable(source_.origin + " answered HTTP " + std::to_string(r->status));
  auto c = parse_container_credentials(r->body);
  if (!c) return c.error();
  held_ = std::move(*c);
  have_ = true;
  return Status::ok();
}

Result<AwsCredentials> CredentialProvider::current() {
  if (!source_.from_container()) return held_.creds;
  const int64_t now = wall_ms();
  const bool due = !have_ || (held_.expires_ms != 0 && now >= held_.expires_ms - kRefreshAheadMs);
  if (due && now >= next_try_ms_) {
    if (Status s = fetch(); !s) {
      next_try_ms_ = now + kRetryMs;
      // Still valid keys sign on; expired (or never fetched) ones cannot.
      if (!have_ || (held_.expires_ms != 0 && now >= held_.expires_ms)) return s.error();
    } else {
      next_try_ms_ = 0;
    }
  }
  if (!have_ || (held_.expires_ms != 0 && now >= held_.expires_ms)) {
    return unavailable("keys from " + source_.origin + " expired; the refetch is retried every second");
  }
  return held_.creds;
}

}  // namespace parley::store::dynamodb
