#pragma once

#include "common/error.h"

#include <cstddef>
#include <string>

namespace tb::common {

// Writes `content` to a temporary file beside `path`, flushes it to disk and
// renames it over `path`, so a reader (or a crash) sees the old file or the
// new one, never half of either. Used for configs, checkpoints' manifests and
// registries.
Status writeFileAtomic(const std::string& path, const std::string& content);

// Writes all `size` bytes to `fd`, going on after short writes and EINTR;
// false with errno set on an error.
bool writeAll(int fd, const char* data, size_t size);

// Reads a whole file; the error names the file and the reason.
Result<std::string> readFile(const std::string& path);

} // namespace tb::common
