// Bytes of an events.jsonl stream, fed in two chunks split where the first
// byte says (a follower reads whatever the writer has flushed). The parser
// must account for every byte: line numbers and offsets only grow,
// and offset() + pendingBytes() covers what was fed.
#include "fuzz_support.h"
#include "metrics/event_stream_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size == 0)
        return 0;
    const std::string_view bytes = tb::fuzz::asText(data + 1, size - 1);
    const std::size_t split = bytes.empty() ? 0 : data[0] % (bytes.size() + 1);
    tb::metrics::EventStreamParser parser;
    std::uint64_t lastLine = 0;
    std::uint64_t lastOffset = 0;
    for (const std::string_view chunk : {bytes.substr(0, split), bytes.substr(split)}) {
        for (const auto& item : parser.feed(chunk)) {
            if (item.lineNumber <= lastLine || (lastLine > 0 && item.byteOffset <= lastOffset))
                std::abort();
            if (!item.event && item.error.empty())
                std::abort(); // a rejected line must say why
            lastLine = item.lineNumber;
            lastOffset = item.byteOffset;
        }
    }
    if (parser.offset() + parser.pendingBytes() != bytes.size())
        std::abort();
    return 0;
}
