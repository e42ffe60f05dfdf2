#pragma once

#include "common/error.h"

#include <string>

namespace tb::common {

// Writes `content` to a temporary file beside `path`, flushes it to disk and
// renames it over `path`, so a reader (or a crash) sees the old file or the
// new one, never half of either. Used for configs, checkpoints' manifests and
// registries.
Status writeFileAtomic(const std::string& path, const std::string& content);

// Reads a whole file; the error names the file and the reason.
Result<std::string> readFile(const std::string& path);

} // namespace tb::common
