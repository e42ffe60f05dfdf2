#pragma once

#include "safetensors/safetensors_file.h"

#include <QString>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

// Exported weights read back as doubles and compared, for the trainer's
// multi-process tests.
namespace tb::testutil {

// Every tensor of a safetensors file, as doubles.
struct Values {
    std::vector<std::int64_t> shape;
    std::vector<double> data;
};
using Tensors = std::map<std::string, Values>;

inline Tensors readTensors(const std::string& path, QString* problem)
{
    using tb::safetensors::DType;
    Tensors tensors;
    auto file = tb::safetensors::SafetensorsFile::open(path);
    if (!file) {
        *problem = QString::fromStdString(file.error().toString());
        return {};
    }
    for (const auto& info : file->tensors()) {
        auto bytes = file->readBytes(info.name);
        if (!bytes) {
            *problem = QString::fromStdString(bytes.error().toString());
            return {};
        }
        Values values;
        values.shape = info.shape;
        const std::size_t count = info.elementCount();
        values.data.resize(count);
        const std::byte* raw = bytes->data();
        for (std::size_t i = 0; i < count; ++i) {
            if (info.dtype == DType::F32) {
                float value = 0.0f;
                std::memcpy(&value, raw + 4 * i, 4);
                values.data[i] = value;
            } else if (info.dtype == DType::BF16) {
                std::uint16_t half = 0;
                std::memcpy(&half, raw + 2 * i, 2);
                const std::uint32_t word = static_cast<std::uint32_t>(half) << 16;
                float value = 0.0f;
                std::memcpy(&value, &word, 4);
                values.data[i] = value;
            } else if (info.dtype == DType::F64) {
                std::memcpy(&values.data[i], raw + 8 * i, 8);
            } else {
                *problem = QString("%1: tensor %2 has dtype %3, which this test does not read")
                               .arg(QString::fromStdString(path), QString::fromStdString(info.name),
                                   QString::fromLatin1(tb::safetensors::dtypeName(info.dtype)));
                return {};
            }
        }
        tensors.emplace(info.name, std::move(values));
    }
    if (tensors.empty())
        *problem = QString::fromStdString(path) + ": no tensors";
    return tensors;
}

// Largest absolute difference over every value, and where; NaN (with
// `problem` set) when the names or shapes differ.
inline double maxAbsDiff(
    const Tensors& a, const Tensors& b, QString* problem, std::string* where = nullptr)
{
    if (a.size() != b.size()) {
        *problem = QString("%1 tensors against %2").arg(a.size()).arg(b.size());
        return std::nan("");
    }
    double largest = 0.0;
    for (const auto& [name, values] : a) {
        const auto other = b.find(name);
        if (other == b.end() || other->second.shape != values.shape) {
            *problem = QString::fromStdString(name) + ": missing or of another shape";
            return std::nan("");
        }
        for (std::size_t i = 0; i < values.data.size(); ++i) {
            const double diff = std::abs(values.data[i] - other->second.data[i]);
            if (diff > largest) {
                largest = diff;
                if (where)
                    *where = name + "[" + std::to_string(i) + "]";
            }
        }
    }
    return largest;
}

} // namespace tb::testutil
