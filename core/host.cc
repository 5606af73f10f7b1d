#include "core/host.h"

#include <unistd.h>

namespace troupe {

std::string Hostname() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof(buf) - 1) == 0 ? buf : "localhost";
}

}  // namespace troupe
