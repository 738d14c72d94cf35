#include "net/preauth_budget.h"

#include <gtest/gtest.h>

#include <vector>

namespace parley::net {
namespace {

// Tickets whose on_shed records their index.
struct Held {
  std::vector<PreauthTicket> tickets;
  std::vector<int> shed;
  void admit(PreauthBudget& b, const std::string& addr) {
    tickets.push_back(b.admit(addr));
    const int i = static_cast<int>(tickets.size()) - 1;
    tickets.back().on_shed([this, i] { shed.push_back(i); });
  }
};

TEST(PreauthBudgetSockets, AtTheGlobalLimitTheOldestIsShed) {
  PreauthBudget b;
  b.set_socket_limits(3, 100);
  Held h;
  for (const char* a : {"a", "b", "c", "d", "e"}) h.admit(b, a);
  EXPECT_EQ(h.shed, (std::vector<int>{0, 1}));
  EXPECT_EQ(b.sockets(), 3u);
  EXPECT_EQ(b.shed_global(), 2u);
  EXPECT_EQ(b.shed_per_address(), 0u);
}

TEST(PreauthBudgetSockets, AtAnAddressLimitThatAddressesOldestIsShed) {
  PreauthBudget b;
  b.set_socket_limits(100, 2);
  Held h;
  h.admit(b, "x");   // 0
  h.admit(b, "y");   // 1
  h.admit(b, "x");   // 2
  h.admit(b, "x");   // 3: sheds 0, not y's 1
  h.admit(b, "x");   // 4: sheds 2
  EXPECT_EQ(h.shed, (std::vector<int>{0, 2}));
  EXPECT_EQ(b.sockets(), 3u);
  EXPECT_EQ(b.shed_per_address(), 2u);
}

TEST(PreauthBudgetSockets, ReleasedTicketsAreNeverShedAndFreeTheirPlace) {
  PreauthBudget b;
  b.set_socket_limits(2, 100);
  Held h;
  h.admit(b, "a");
  h.admit(b, "a");
  h.tickets[0].release();  // authenticated
  h.admit(b, "a");
  EXPECT_TRUE(h.shed.empty());
  h.admit(b, "a");          // sheds 1, the oldest still held
  EXPECT_EQ(h.shed, (std::vector<int>{1}));
}

TEST(PreauthBudgetSockets, AnOwnerThatArrivesAfterItsTicketWasShedLearnsAtOnce) {
  PreauthBudget b;
  b.set_socket_limits(1, 100);
  PreauthTicket first = b.admit("a");  // no callback yet (an upgrade in progress)
  PreauthTicket second = b.admit("a");
  bool told = false;
  first.on_shed([&] { told = true; });
  EXPECT_TRUE(told);
  PreauthTicket moved = std::move(second);
  EXPECT_EQ(b.sockets(), 1u);
  moved.release();
  EXPECT_EQ(b.sockets(), 0u);
}

}  // namespace
}  // namespace parley::net
