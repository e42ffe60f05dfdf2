// A whole safetensors file: the 8-byte header length, the JSON header, and
// whatever bytes follow as the data region the header's offsets point into.
#include "fuzz_support.h"
#include "safetensors/header_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace tb::safetensors;
    const std::string origin = "fuzz.safetensors";
    const std::string_view file = tb::fuzz::asText(data, size);
    const auto length = parseHeaderLength(file.substr(0, 8), file.size(), origin);
    tb::fuzz::requireValueOrNamedError(length, origin);
    if (!length.ok())
        return 0;
    const auto header = parseHeader(file.substr(8, *length), file.size() - 8 - *length, origin);
    tb::fuzz::requireValueOrNamedError(header, origin);
    if (header.ok()) {
        for (const TensorInfo& tensor : header->tensors)
            if (tensor.dataBegin > tensor.dataEnd
                || tensor.dataEnd > file.size() - header->dataOffset())
                std::abort(); // an accepted offset outside the file
    }
    return 0;
}
