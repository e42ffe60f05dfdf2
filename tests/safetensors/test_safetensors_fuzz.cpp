#include "safetensors/header_parser.h"
#include "safetensors/safetensors_file.h"
#include "safetensors/tensor_store.h"
#include "safetensors/writer.h"
#include "safetensors_test_util.h"

#include <QTemporaryDir>
#include <QTest>

#include <cstdlib>
#include <random>

using namespace tb::safetensors;
using namespace tb::safetensors::testutil;

// Seeded mutation fuzzing of the reader: valid files from our writer are
// damaged (bit flips, truncation, header-length edits, JSON token edits) and
// opened. Every input must either be refused with an error message or be
// accepted as a file whose tensors can all be read and rewritten unchanged.
// The count of inputs is printed; TB_FUZZ_ITERATIONS and TB_FUZZ_SEED change
// them for longer local runs.
namespace {

struct Counts {
    int inputs = 0;
    int accepted = 0;
    int refused = 0;
};

std::vector<std::byte> filled(size_t size, std::mt19937_64& rng)
{
    std::vector<std::byte> out(size);
    for (std::byte& b : out)
        b = static_cast<std::byte>(rng() & 0xff);
    return out;
}

// A handful of valid seeds: several dtypes, scalars, empty tensors, metadata.
std::vector<std::string> makeSeeds(const QString& dir, std::mt19937_64& rng)
{
    std::vector<std::string> seeds;
    const auto a = filled(4 * 6 * 4, rng);
    const auto b = filled(2 * 8, rng);
    const auto c = filled(8 * 3, rng);
    const auto d = filled(5, rng);
    const auto e = filled(4, rng);
    const std::vector<std::vector<TensorToWrite>> sets = {
        {{"model.embed_tokens.weight", DType::F32, {4, 6}, a}},
        {{"layers.0.q_proj.weight", DType::BF16, {2, 4}, b},
            {"layers.0.k_proj.bias", DType::F64, {3}, c}, {"mask", DType::Bool, {5}, d}},
        {{"scalar", DType::F32, {}, e}, {"empty", DType::F16, {0, 3}, {}},
            {"lm_head.weight", DType::F16, {2, 2, 2}, b}},
    };
    for (size_t i = 0; i < sets.size(); ++i) {
        const std::string path = dir.toStdString() + "/seed" + std::to_string(i) + ".safetensors";
        const auto status = writeSafetensors(path, sets[i], {{"format", "pt"}, {"k", "v"}});
        Q_ASSERT(status.ok());
        seeds.push_back(readRaw(path));
    }
    return seeds;
}

uint64_t headerEnd(const std::string& file)
{
    if (file.size() < 8)
        return file.size();
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i)
        length = (length << 8) | static_cast<unsigned char>(file[static_cast<size_t>(i)]);
    return std::min<uint64_t>(file.size(), 8 + length);
}

// One random damage; several may be stacked on one input.
void mutate(std::string& file, std::mt19937_64& rng)
{
    auto pick = [&](size_t n) { return n == 0 ? size_t(0) : static_cast<size_t>(rng() % n); };
    const size_t headerStop = static_cast<size_t>(headerEnd(file));
    static const char* kTokens[] = {"{", "}", "[", "]", ",", ":", "\"", "-1", "0", "1e30",
        "18446744073709551615", "18446744073709551616", "null", "\"F32\"", "\"BF16\"", "\"F4\"",
        "\"I64\"", "\"__metadata__\"", "\"dtype\"", "\"shape\"", "\"data_offsets\"", "\\u0000",
        " "};
    switch (rng() % 9) {
    case 0: // bit flips anywhere
        for (int i = 0, n = 1 + static_cast<int>(rng() % 8); i < n && !file.empty(); ++i)
            file[pick(file.size())] ^= static_cast<char>(1u << (rng() % 8));
        break;
    case 1: // bit flips inside the header text
        for (int i = 0, n = 1 + static_cast<int>(rng() % 4); i < n && headerStop > 8; ++i)
            file[8 + pick(headerStop - 8)] ^= static_cast<char>(1u << (rng() % 8));
        break;
    case 2: // truncation
        file.resize(pick(file.size() + 1));
        break;
    case 3: // appended junk
        for (int i = 0, n = 1 + static_cast<int>(rng() % 16); i < n; ++i)
            file.push_back(static_cast<char>(rng() & 0xff));
        break;
    case 4: { // header length edits: off by a little, or anything
        if (file.size() < 8)
            break;
        const uint64_t old = headerEnd(file) - 8;
        const uint64_t lengths[] = {
            old + 1, old - 1, old + 8, 0, 1, rng(), kMaxHeaderBytes + 1, file.size()};
        const std::string prefix = lengthPrefix(lengths[pick(std::size(lengths))]);
        file.replace(0, 8, prefix);
        break;
    }
    case 5: { // a digit run replaced by another number
        std::vector<size_t> digits;
        for (size_t i = 8; i < headerStop; ++i)
            if (file[i] >= '0' && file[i] <= '9' && (file[i - 1] < '0' || file[i - 1] > '9'))
                digits.push_back(i);
        if (digits.empty())
            break;
        const size_t at = digits[pick(digits.size())];
        size_t end = at;
        while (end < headerStop && file[end] >= '0' && file[end] <= '9')
            ++end;
        static const char* kNumbers[] = {"0", "1", "2", "3", "4", "7", "8", "12", "16", "24", "-4",
            "4.0", "99999999999", "9223372036854775807", "18446744073709551615",
            "184467440737095516160"};
        file.replace(at, end - at, kNumbers[pick(std::size(kNumbers))]);
        break;
    }
    case 6: // a JSON token inserted in the header
        if (headerStop > 8)
            file.insert(8 + pick(headerStop - 8), kTokens[pick(std::size(kTokens))]);
        break;
    case 7: { // a range of the header deleted
        if (headerStop <= 9)
            break;
        const size_t at = 8 + pick(headerStop - 8);
        file.erase(at, 1 + pick(std::min<size_t>(16, headerStop - at)));
        break;
    }
    default: { // a range of the header duplicated
        if (headerStop <= 9)
            break;
        const size_t at = 8 + pick(headerStop - 8);
        const size_t length = 1 + pick(std::min<size_t>(40, headerStop - at));
        file.insert(at, file.substr(at, length));
        break;
    }
    }
}

// An accepted input must be self-consistent: all tensors readable, and a
// rewrite by our writer reads back the same tensors and bytes.
bool checkAccepted(const SafetensorsFile& file, const std::string& rewritePath)
{
    std::vector<std::vector<std::byte>> contents;
    std::vector<TensorToWrite> tensors;
    uint64_t previousEnd = 0;
    for (const TensorInfo& info : file.tensors()) {
        if (info.dataBegin != previousEnd
            || info.dataEnd > file.fileBytes() - file.header().dataOffset())
            return false;
        previousEnd = info.dataEnd;
        auto bytes = file.readBytes(info.name);
        if (!bytes.ok())
            return false;
        contents.push_back(std::move(bytes).value());
    }
    for (size_t i = 0; i < file.tensors().size(); ++i) {
        const TensorInfo& info = file.tensors()[i];
        tensors.push_back({info.name, info.dtype, info.shape, contents[i]});
    }
    if (!writeSafetensors(rewritePath, tensors, file.metadata()).ok())
        return false;
    const auto again = SafetensorsFile::open(rewritePath);
    if (!again.ok() || again->tensors().size() != file.tensors().size())
        return false;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const auto bytes = again->readBytes(tensors[i].name);
        if (!bytes.ok() || *bytes != contents[i])
            return false;
    }
    return true;
}

int envInt(const char* name, int fallback)
{
    const char* text = std::getenv(name);
    return text ? std::atoi(text) : fallback;
}

} // namespace

class TestSafetensorsFuzz : public QObject {
    Q_OBJECT

private slots:
    void mutatedFilesNeverCrashTheReader()
    {
        const int iterations = envInt("TB_FUZZ_ITERATIONS", 10000);
        const auto seed = static_cast<uint64_t>(envInt("TB_FUZZ_SEED", 20240517));
        std::mt19937_64 rng(seed);
        QTemporaryDir dir;
        const std::vector<std::string> seeds = makeSeeds(dir.path(), rng);
        const std::string path = dir.filePath("input.safetensors").toStdString();
        const std::string rewrite = dir.filePath("rewrite.safetensors").toStdString();

        Counts counts;
        for (int i = 0; i < iterations; ++i) {
            std::string input = seeds[rng() % seeds.size()];
            for (int m = 0, n = 1 + static_cast<int>(rng() % 3); m < n; ++m)
                mutate(input, rng);
            writeRaw(path, input);
            ++counts.inputs;
            const auto file = SafetensorsFile::open(path);
            if (!file.ok()) {
                ++counts.refused;
                QVERIFY2(!file.error().message.empty(), "an error without a message");
                continue;
            }
            ++counts.accepted;
            QVERIFY2(checkAccepted(*file, rewrite),
                qPrintable(
                    QString("accepted input %1 (seed %2) is inconsistent").arg(i).arg(seed)));
            QVERIFY(TensorStore::open(path).ok());
        }
        qInfo("fuzz: %d mutated files (seed %llu): %d refused with an error, %d accepted and "
              "verified",
            counts.inputs, static_cast<unsigned long long>(seed), counts.refused, counts.accepted);
        // Mutations that change nothing a reader checks (padding, metadata text) must stay
        // accepted, and most damage must be caught; both kinds have to occur.
        QVERIFY(counts.refused > iterations / 2);
        QVERIFY(counts.accepted > 0);
    }

    void mutatedHeadersNeverCrashTheParser()
    {
        // In memory, so many more inputs fit in the time: the JSON layer alone.
        const int iterations = envInt("TB_FUZZ_ITERATIONS", 10000) * 5;
        const auto seed = static_cast<uint64_t>(envInt("TB_FUZZ_SEED", 20240517)) + 1;
        std::mt19937_64 rng(seed);
        QTemporaryDir dir;
        const std::vector<std::string> seeds = makeSeeds(dir.path(), rng);
        int accepted = 0;
        for (int i = 0; i < iterations; ++i) {
            std::string input = seeds[rng() % seeds.size()];
            for (int m = 0, n = 1 + static_cast<int>(rng() % 4); m < n; ++m)
                mutate(input, rng);
            const uint64_t stop = headerEnd(input);
            if (stop <= 8)
                continue;
            const std::string_view json(input.data() + 8, stop - 8);
            const auto header = parseHeader(json, input.size() - stop, "mem");
            if (header.ok()) {
                ++accepted;
                for (const TensorInfo& t : header->tensors)
                    QVERIFY(t.dataEnd <= input.size() - stop && t.dataBegin <= t.dataEnd);
            }
        }
        qInfo("fuzz: %d mutated headers parsed in memory (seed %llu), %d accepted", iterations,
            static_cast<unsigned long long>(seed), accepted);
    }
};

QTEST_GUILESS_MAIN(TestSafetensorsFuzz)
#include "test_safetensors_fuzz.moc"
