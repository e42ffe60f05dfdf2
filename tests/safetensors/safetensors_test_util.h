#pragma once

#include <QtGlobal>

#include <cstdint>
#include <fstream>
#include <string>

// Helpers shared by the safetensors suites: build a file from a header text
// and data bytes exactly as given, so tests can write what the writer never would.
namespace tb::safetensors::testutil {

inline std::string lengthPrefix(uint64_t length)
{
    std::string prefix(8, '\0');
    for (int i = 0; i < 8; ++i)
        prefix[static_cast<size_t>(i)] = static_cast<char>((length >> (8 * i)) & 0xff);
    return prefix;
}

inline std::string rawFile(const std::string& header, const std::string& data)
{
    return lengthPrefix(header.size()) + header + data;
}

inline void writeRaw(const std::string& path, const std::string& bytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    Q_ASSERT(out.good());
}

inline std::string readRaw(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

} // namespace tb::safetensors::testutil
