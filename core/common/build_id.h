#pragma once

#include <string>

namespace tb::common {

// The linker's build id of the running executable (ELF NT_GNU_BUILD_ID, hex):
// the same only for the same link of the same sources, so two machines of a
// multi-node job can tell whether they run the same build. Empty when the
// executable carries none.
std::string executableBuildId();

} // namespace tb::common
