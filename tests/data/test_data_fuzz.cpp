#include "../support/test_data.h"
#include "data/dataset_reader.h"
#include "data/prompt_format.h"
#include "data/random.h"
#include "data/tokenize.h"

#include "common/atomic_file.h"
#include "common/text.h"

#include <QTest>

#include <filesystem>

using namespace tb::data;
using tb::config::DataFormat;
using tb::config::MalformedPolicy;

namespace {

std::string demoFile(const char* name)
{
    auto text = tb::common::readFile(tb::test::sourcePath("resources/demo/") + name);
    if (!text.ok())
        qFatal("%s", text.error().toString().c_str());
    return text.value();
}

// The demo instructions as a JSON array and as CSV with quoted fields.
std::string asJsonArray(const std::string& jsonl)
{
    std::string out = "[\n";
    for (const std::string& line : tb::common::split(jsonl, '\n')) {
        if (!line.empty())
            out += (out.size() > 2 ? ",\n  " : "  ") + line;
    }
    return out + "\n]\n";
}

std::string csvSample()
{
    return "instruction,input,output\r\n"
           "\"Say \"\"hi\"\"\",,\"Hi, there!\"\r\n"
           "Finish the story.,\"Ben had a kite.\nThe wind was calm.\",\"He waited, and it "
           "flew.\"\r\n"
           "Count to two.,,\"One, two.\"\r\n"
           "Name a color.,\"\",Blue.\r\n";
}

std::string mutate(std::string text, Xoshiro256& random)
{
    static const std::string kSignificant = "{}[]\",:\\\n\r \t0ae";
    const int edits = 1 + int(random.below(4));
    for (int i = 0; i < edits && !text.empty(); ++i) {
        const size_t at = random.below(text.size());
        switch (random.below(5)) {
        case 0:
            text[at] = char(random.next() & 0xff);
            break;
        case 1:
            text.erase(at, 1 + random.below(16));
            break;
        case 2:
            text.insert(at, 1, kSignificant[random.below(kSignificant.size())]);
            break;
        case 3: {
            const size_t from = random.below(text.size());
            text.insert(at, text.substr(from, 1 + random.below(24)));
            break;
        }
        default:
            text.resize(at);
            break;
        }
    }
    return text;
}

} // namespace

class TestDataFuzz : public QObject {
    Q_OBJECT

private slots:
    void mutatedDatasetsNeverCrash()
    {
        auto loaded = tb::tokenizer::Tokenizer::load(tb::test::demoModelDir());
        QVERIFY(loaded.ok());
        const tb::tokenizer::Tokenizer& tokenizer = loaded.value();
        const std::string instructions = demoFile("tiny_instructions.jsonl");
        struct Input {
            const char* name;
            DataFormat format;
            std::string text;
        };
        const std::vector<Input> inputs{
            {"alpaca.jsonl", DataFormat::Alpaca, instructions},
            {"alpaca.json", DataFormat::Alpaca, asJsonArray(instructions)},
            {"chat.jsonl", DataFormat::Chat, demoFile("tiny_chat.jsonl")},
            {"data.csv", DataFormat::Csv, csvSample()},
            {"text.txt", DataFormat::Text, demoFile("README.md")},
        };
        constexpr int kMutantsPerInput = 800;
        Xoshiro256 random(0xf022);
        size_t mutants = 0;
        size_t fileErrors = 0;
        size_t records = 0;
        size_t malformed = 0;
        size_t tokenized = 0;
        for (const Input& input : inputs) {
            for (int i = 0; i < kMutantsPerInput; ++i) {
                const std::string text = mutate(input.text, random);
                ++mutants;
                ReaderOptions options;
                options.format = input.format;
                ReadReport report;
                const auto read = parseRecords(text, input.name, options, report);
                if (!read.ok()) {
                    ++fileErrors;
                    QVERIFY(QString::fromStdString(read.error().message).startsWith(input.name));
                    continue;
                }
                records += read.value().size();
                malformed += report.malformedCount();
                QCOMPARE(read.value().size(), report.records());
                for (const ReadIssue& issue : report.issues()) {
                    QVERIFY(!issue.message.empty());
                    QVERIFY(issue.where.line > 0 || issue.where.index.has_value());
                }
                // Fail mode stops at the first malformed record, or reads the same.
                options.malformed = MalformedPolicy::Fail;
                ReadReport strict;
                const auto failed = parseRecords(text, input.name, options, strict);
                QCOMPARE(failed.ok(), report.malformedCount() == 0);
                if (i % 16 != 0)
                    continue;
                // A few records per mutant: the tokenizer has its own fuzz test.
                for (size_t r = 0; r < read.value().size() && r < 8; ++r) {
                    const Record& record = read.value()[r];
                    const auto format = input.format == DataFormat::Chat
                        ? tb::config::PromptTemplate::ChatMl
                        : tb::config::PromptTemplate::Alpaca;
                    const auto formatted = formatRecord(record, format);
                    if (!formatted.ok())
                        continue;
                    const auto tokens = tokenizeExample(formatted.value(), tokenizer);
                    QVERIFY(tokens.ok());
                    QCOMPARE(tokens.value().labels.size(), tokens.value().inputIds.size());
                    ++tokenized;
                }
            }
        }
        qInfo("data fuzz: %zu mutants: %zu whole-file errors, %zu records read, %zu malformed "
              "records located, %zu examples tokenized",
            mutants, fileErrors, records, malformed, tokenized);
        QVERIFY(malformed > 0 && records > 0);
    }
};

QTEST_GUILESS_MAIN(TestDataFuzz)
#include "test_data_fuzz.moc"
