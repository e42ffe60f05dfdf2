#include "../support/test_paths.h"
#include "config/config_loader.h"
#include "config/config_writer.h"

#include "common/atomic_file.h"

#include <QTest>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

using namespace tb::config;

namespace {

// splitmix64: a fixed, documented generator, so a failing case can be
// replayed from its seed and index.
struct Mutator {
    std::uint64_t state;

    std::uint64_t next()
    {
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    std::size_t below(std::size_t bound) { return bound == 0 ? 0 : next() % bound; }

    std::string mutate(std::string text)
    {
        static const std::string kSignificant = ":-[]{}#&*!|>'\"%@`,? \n\t0123456789.";
        const int edits = 1 + static_cast<int>(below(4));
        for (int i = 0; i < edits && !text.empty(); ++i) {
            const std::size_t at = below(text.size());
            switch (below(6)) {
            case 0: // flip a byte
                text[at] = static_cast<char>(next() & 0xff);
                break;
            case 1: // delete a run
                text.erase(at, 1 + below(8));
                break;
            case 2: // insert YAML punctuation
                text.insert(at, 1, kSignificant[below(kSignificant.size())]);
                break;
            case 3: { // duplicate a line
                const std::size_t begin =
                    text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
                const std::size_t end = text.find('\n', at);
                const std::string line = text.substr(
                    begin, end == std::string::npos ? std::string::npos : end - begin + 1);
                text.insert(begin, line);
                break;
            }
            case 4: // change indentation
                text.insert(at, below(2) ? "  " : "\n  ");
                break;
            default: // truncate
                text.resize(at);
                break;
            }
        }
        return text;
    }
};

} // namespace

class TestConfigFuzz : public QObject {
    Q_OBJECT

private slots:
    void mutatedRecipesNeverCrash()
    {
        constexpr int kMutantsPerRecipe = 1500;
        int rejected = 0;
        int accepted = 0;
        // The recipes have no distributed section; one of them gets one so
        // that its reader and offload rule are mutated too.
        const std::string distributed = "distributed:\n  sharding: zero-3\n"
                                        "  offload: optimizer+params\n  timeout_seconds: 90\n";
        const std::pair<const char*, std::string> inputs[] = {
            {"full.yaml", ""}, {"lora.yaml", ""}, {"qlora.yaml", ""}, {"qlora.yaml", distributed}};
        for (const auto& [name, extra] : inputs) {
            const auto original =
                tb::common::readFile(tb::test::sourcePath("presets/recipes/") + name);
            QVERIFY(original.ok());
            Mutator mutator{0x7b5eed0000000000ull ^ std::hash<std::string>{}(name + extra)};
            for (int i = 0; i < kMutantsPerRecipe; ++i) {
                const std::string text = mutator.mutate(original.value() + extra);
                LoadOptions options;
                options.sourceName = name;
                const LoadReport report = parseRunConfig(text, options);
                if (report.ok()) {
                    ++accepted;
                    QVERIFY(report.problems.isEmpty());
                    QVERIFY(report.config->data.sequenceLength >= 2);
                    QVERIFY(report.config->training.learningRate > 0.0);
                    // Whatever was accepted survives the writer unchanged.
                    LoadOptions again;
                    again.baseDir = "/";
                    const LoadReport reread = parseRunConfig(toYaml(*report.config), again);
                    QVERIFY2(reread.ok(), text.c_str());
                    QVERIFY2(*reread.config == *report.config, text.c_str());
                    QVERIFY(toJson(*report.config).is_object());
                    continue;
                }
                ++rejected;
                for (const ConfigProblem& problem : report.problems.items()) {
                    QVERIFY2(!problem.message.empty(), text.c_str());
                    QVERIFY(problem.line >= 0 && problem.column >= 0);
                }
            }
        }
        qInfo("config fuzz: %d mutants, %d rejected with located problems, %d still valid",
            accepted + rejected, rejected, accepted);
        QVERIFY(rejected > 0 && accepted > 0);
    }
};

QTEST_GUILESS_MAIN(TestConfigFuzz)
#include "test_config_fuzz.moc"
