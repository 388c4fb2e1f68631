#include "profile/local_host.h"

#include <unistd.h>

#include "common/errors.h"
#include "profile/value_rules.h"

namespace fabkit::profile {

std::string local_hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0)
    throw UsageError("cannot read this host's name (gethostname failed); pass --host NAME");
  std::string h = buf;
  if (auto e = check_hostname(h))
    throw UsageError("this host's name " + quote_for_message(h) + " " + *e + "; pass --host NAME");
  return h;
}

}  // namespace fabkit::profile
