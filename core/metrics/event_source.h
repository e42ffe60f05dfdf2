#pragma once

#include "common/error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace tb::metrics {

// Where an event file's bytes come from: this machine's file system, or
// another machine's over SFTP (core/remote). EventFileReader does the rest
// (offsets, shrink detection, batches, parsing) the same for both.
class EventSource {
public:
    virtual ~EventSource() = default;

    // Names the file in messages ("run/events.jsonl", "gpu1:/runs/a/events.jsonl").
    virtual std::string name() const = 0;

    // One read pass: the file's size now, or nullopt when it does not exist
    // (yet). Reads until the next open() see the same file.
    virtual common::Result<std::optional<uint64_t>> open() = 0;

    // Up to `length` bytes at `offset` into `buffer`; 0 at the end.
    virtual common::Result<std::size_t> readAt(
        uint64_t offset, char* buffer, std::size_t length) = 0;

    // Ends the read pass begun by open().
    virtual void close() = 0;
};

// A file on this machine.
std::unique_ptr<EventSource> localEventSource(std::string path);

} // namespace tb::metrics
