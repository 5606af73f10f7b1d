// Facts about the machine this process runs on, shared by the control plane and the launcher.
#pragma once

#include <string>

namespace troupe {

// This machine's host name (gethostname), or "localhost" when it cannot be read.
std::string Hostname();

}  // namespace troupe
