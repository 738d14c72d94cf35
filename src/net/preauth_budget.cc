#include "net/preauth_budget.h"

namespace parley::net {

PreauthBudget& PreauthBudget::process() {
  static PreauthBudget budget;
  return budget;
}

}  // namespace parley::net
