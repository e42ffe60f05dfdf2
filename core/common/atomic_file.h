#pragma once

#include "common/error.h"

#include <cstddef>
#include <limits>
#include <optional>
#include <string>

namespace tb::common {

// The mode an atomically written file ends with: `mode` when given (a
// private file: 0600 whatever was there); else the mode of the file it
// replaces, so a file its owner made private stays private, and for a new
// file 0666 less the umask, as open(2) would give.
using FileMode = std::optional<unsigned>;

// Writes `content` to a temporary file beside `path`, flushes it to disk and
// renames it over `path`, so a reader (or a crash) sees the old file or the
// new one, never half of either. Used for configs, checkpoints' manifests and
// registries.
Status writeFileAtomic(const std::string& path, const std::string& content, FileMode mode = {});

// A file written in pieces that appears at `target` whole or not at all:
// written to a temporary file beside it, then flushed, given its mode
// (FileMode) and renamed over it by commit(). Destroyed without commit(), it
// leaves `target` as it was. writeFileAtomic and the safetensors writer both
// write through it.
class AtomicFile {
public:
    explicit AtomicFile(std::string target, FileMode mode = {});
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    bool isOpen() const { return m_fd >= 0; }
    // False with errno set.
    bool write(const void* data, size_t size);
    bool commit();

private:
    std::string m_target;
    std::string m_tempPath;
    FileMode m_mode;
    int m_fd = -1;
    bool m_committed = false;
};

// Writes all `size` bytes to `fd`, going on after short writes and EINTR;
// false with errno set on an error.
bool writeAll(int fd, const char* data, size_t size);

// Reads a whole file; the error names the file and the reason. A file larger
// than `maxBytes` is refused with its size and the limit, before it is read
// where its size is known and as soon as the limit is passed where it is not
// (a pipe, a device such as /dev/zero).
Result<std::string> readFile(
    const std::string& path, std::size_t maxBytes = std::numeric_limits<std::size_t>::max());

} // namespace tb::common
