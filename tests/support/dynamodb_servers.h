// DynamoDB for the persister's tests (tests/dynamodb/, npm packages installed by
// scripts/setup_node.sh): dynalite, a DynamoDB-compatible server, run by node
// on a free loopback port with its LevelDB files in a temporary folder (so a
// restart keeps the table); a throttling proxy in front of it
// (throttle_proxy.mjs); and the table's items as the reference client
// @aws-sdk/client-dynamodb reads them (table_items.mjs), so what the tests check
// is not read back through the code under test.
//
// Test code only; blocking; one test thread drives it.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace parley::testing {

// Whether node and tests/dynamodb/node_modules are there (else the tests skip).
bool dynamodb_tools_installed();

class DynaliteServer {
 public:
  explicit DynaliteServer(std::string dir);
  ~DynaliteServer();  // SIGKILL
  DynaliteServer(const DynaliteServer&) = delete;
  DynaliteServer& operator=(const DynaliteServer&) = delete;

  bool ok() const { return pid_ > 0; }
  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  bool start();  // on the same port and files; true once it answers
  void kill9();
  // A hang: SIGSTOP until resume(); connections stay open and answer nothing.
  void pause();
  void resume();
  bool restart() {
    kill9();
    return start();
  }

 private:
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// Answers `share` of BatchWriteItem requests 400 ThrottlingException /
// ProvisionedThroughputExceededException; forwards `partial` of them with half
// their puts and answers the other half as UnprocessedItems; forwards the rest
// to `target_port` as they are.
class ThrottleProxy {
 public:
  // With key and cert (PEM files) it listens with TLS (https://).
  ThrottleProxy(int target_port, double share, double partial, const std::string& log,
                const std::string& tls_key = {}, const std::string& tls_cert = {});
  ~ThrottleProxy();
  bool ok() const { return pid_ > 0; }
  std::string endpoint() const { return (tls_ ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port_); }
  // Requests it refused / cut in half so far (-1: no answer).
  long throttled() const { return stat("throttled"); }
  long partial() const { return stat("partial"); }

 private:
  long stat(const char* name) const;
  bool tls_ = false;
  int port_ = 0;
  pid_t pid_ = -1;
};

struct TableItem {
  std::string channel;  // the partition key, "<tenant>#<channel>"
  long long seq = 0;
  std::string sender, msg_id, body;
};
// Every item of `table` (a consistent Scan with @aws-sdk/client-dynamodb);
// `ok` false when the read failed. A missing table is no items.
std::vector<TableItem> table_items(const std::string& endpoint, const std::string& table, bool* ok = nullptr);

// Started on first use (with a log in its folder), killed at exit.
DynaliteServer& shared_dynalite();

}  // namespace parley::testing
