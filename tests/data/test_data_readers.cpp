#include "../support/deep_json.h"
#include "../support/skip.h"
#include "../support/test_data.h"
#include "data/csv_parser.h"
#include "data/dataset_reader.h"

#include <QTest>

#include <filesystem>

using namespace tb::data;
using tb::config::DataFormat;
using tb::config::MalformedPolicy;

namespace {

// The repository's test datasets, or ../shared/data's for `shared`.
std::string datasetPath(bool shared, const QString& relative)
{
    const std::string folder =
        shared ? tb::test::sharedDataPath("datasets/") : tb::test::testDatasetsPath("");
    return folder + relative.toStdString();
}

// Rows as "line:field|field|...", "!" marking a malformed row.
QStringList describe(const std::vector<CsvRow>& rows)
{
    QStringList out;
    for (const CsvRow& row : rows) {
        QStringList fields;
        for (const std::string& field : row.fields)
            fields << QString::fromStdString(field);
        out << QString::number(row.line) + (row.problem.empty() ? ":" : "!:") + fields.join('|');
    }
    return out;
}

ReaderOptions options(DataFormat format, MalformedPolicy policy = MalformedPolicy::Skip)
{
    ReaderOptions result;
    result.format = format;
    result.malformed = policy;
    return result;
}

struct Parsed {
    std::vector<Record> records;
    ReadReport report;
    std::string error;
};

Parsed parse(const std::string& text, const ReaderOptions& readerOptions,
    const std::string& file = "data.jsonl")
{
    Parsed parsed;
    auto result = parseRecords(text, file, readerOptions, parsed.report);
    if (result.ok())
        parsed.records = std::move(result).value();
    else
        parsed.error = result.error().toString();
    return parsed;
}

QStringList issues(const ReadReport& report)
{
    QStringList out;
    for (const ReadIssue& issue : report.issues())
        out << QString::fromStdString(issue.toString());
    return out;
}

} // namespace

class TestDataReaders : public QObject {
    Q_OBJECT

private slots:
    void csv_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QStringList>("rows");
        QTest::addRow("plain") << "a,b\n1,2\n" << QStringList{"1:a|b", "2:1|2"};
        QTest::addRow("no final newline") << "a,b\n1,2" << QStringList{"1:a|b", "2:1|2"};
        QTest::addRow("crlf") << "a,b\r\n1,2\r\n" << QStringList{"1:a|b", "2:1|2"};
        QTest::addRow("empty fields") << "a,,c\n,,\n" << QStringList{"1:a||c", "2:||"};
        QTest::addRow("quoted comma") << "\"x,y\",z\n" << QStringList{"1:x,y|z"};
        QTest::addRow("doubled quotes") << "\"say \"\"hi\"\"\",2\n"
                                        << QStringList{"1:say \"hi\"|2"};
        QTest::addRow("newline in field") << "a,b\n\"line 1\nline 2\",x\n3,4\n"
                                          << QStringList{"1:a|b", "2:line 1\nline 2|x", "4:3|4"};
        QTest::addRow("crlf in field") << "\"p\r\nq\",1\r\n2,3\r\n"
                                       << QStringList{"1:p\r\nq|1", "3:2|3"};
        QTest::addRow("empty quoted") << "\"\",\"\"\n" << QStringList{"1:|"};
        QTest::addRow("blank lines skipped") << "a\n\n\nb\n" << QStringList{"1:a", "4:b"};
        QTest::addRow("byte order mark") << "\xEF\xBB\xBFid,x\n" << QStringList{"1:id|x"};
        QTest::addRow("quote inside unquoted") << "ab\"c,d\n" << QStringList{"1:ab\"c|d"};
        QTest::addRow("text after closing quote") << "\"ab\"c,d\n1,2\n"
                                                  << QStringList{"1!:abc|d", "2:1|2"};
        QTest::addRow("never closed") << "a,b\n\"open,1\n2,3\n"
                                      << QStringList{"1:a|b", "2!:open,1\n2,3\n"};
        QTest::addRow("lone cr") << "a,b\r1,2\r" << QStringList{"1:a|b", "2:1|2"};
    }
    void csv()
    {
        QFETCH(QString, text);
        QFETCH(QStringList, rows);
        QCOMPARE(describe(parseCsv(text.toStdString())), rows);
    }

    void malformedRecordsAreLocated_data()
    {
        QTest::addColumn<int>("format");
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("records");
        QTest::addColumn<QStringList>("issues");
        const int alpaca = int(DataFormat::Alpaca);
        const int chat = int(DataFormat::Chat);
        const int csv = int(DataFormat::Csv);
        QTest::addRow("jsonl") << alpaca << "a.jsonl"
                               << "{\"instruction\":\"i\",\"output\":\"o\"}\n"
                                  "{\"instruction\":\"i\",\"output\":\"o\"\n"
                                  "\n"
                                  "{\"instruction\":\"i\"}\n"
                                  "[1]\n"
                                  "{\"instruction\":\"i\",\"output\":\"\"}\n"
                                  "{\"instruction\":\"i\",\"input\":null,\"output\":\"o\"}\n"
                                  "{\"instruction\":\"i\",\"output\":5}\n"
                                  "{\"instruction\":\"\",\"input\":\"\",\"output\":\"o\"}\n"
                               << 2
                               << QStringList{"a.jsonl:2: not valid JSON",
                                      "a.jsonl:4: 'output' is missing",
                                      "a.jsonl:5: expected a JSON object, got array",
                                      "a.jsonl:6: 'output' is empty: nothing to learn",
                                      "a.jsonl:8: 'output' is number, expected a string",
                                      "a.jsonl:9: 'instruction' and 'input' are both empty"};
        QTest::addRow("json array")
            << alpaca << "a.json"
            << "[\n  {\"instruction\": \"i\", \"output\": \"o\"},\n  \"text\",\n"
               "  {\"instruction\": \"[{,\\\"\", \"output\": \"o\"},\n  {\"output\": \"o\"}\n]\n"
            << 2
            << QStringList{"a.json:3 (record 1): expected a JSON object, got string",
                   "a.json:5 (record 3): 'instruction' is missing"};
        QTest::addRow("chat")
            << chat << "c.jsonl"
            << "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\","
               "\"content\":\"a\"}]}\n"
               "{\"messages\":[]}\n"
               "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"}]}\n"
               "{\"messages\":[{\"role\":\"bot\",\"content\":\"q\"}]}\n"
               "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"system\","
               "\"content\":\"s\"}]}\n"
               "{\"messages\":[{\"role\":\"user\"}]}\n"
               "{\"msgs\":[]}\n"
            << 1
            << QStringList{"c.jsonl:2: 'messages' is array and empty",
                   "c.jsonl:3: no trained assistant message with content or tool calls",
                   "c.jsonl:4: messages[0]: role 'bot', expected system, user, assistant or tool",
                   "c.jsonl:5: messages[1]: a system message is only allowed first",
                   "c.jsonl:6: messages[0]: 'content' is missing",
                   "c.jsonl:7: 'messages' is missing"};
        QTest::addRow("sharegpt")
            << chat << "s.jsonl"
            << "{\"conversations\":[{\"from\":\"system\",\"value\":\"s\"},{\"from\":\"human\","
               "\"value\":\"q\"},{\"from\":\"gpt\",\"value\":\"a\"}]}\n"
               "{\"conversations\":[{\"from\":\"human\",\"value\":\"q\"},{\"from\":"
               "\"bot\",\"value\":\"{}\"}]}\n"
               "{\"conversations\":[{\"from\":\"human\"}]}\n"
            << 1
            << QStringList{"s.jsonl:2: conversations[1]: from 'bot', expected system, "
                           "human, gpt, function_call or observation",
                   "s.jsonl:3: conversations[0]: 'value' is missing"};
        // Review M1: a line nested 200,000 deep is one malformed line, and the
        // next line is still read.
        QTest::addRow("jsonl, a line 200,000 deep")
            << alpaca << "deep.jsonl"
            << QString::fromStdString("{\"instruction\":\"i\",\"output\":\"o\"}\n"
                   + tb::test::deepJsonObject() + "\n" + tb::test::deepJsonArray()
                   + "\n{\"instruction\":\"i\",\"output\":\"o\"}\n")
            << 2
            << QStringList{"deep.jsonl:2: not valid JSON: nested deeper than 64 levels",
                   "deep.jsonl:3: not valid JSON: nested deeper than 64 levels"};
        QTest::addRow("csv") << csv << "d.csv"
                             << "instruction,input,output\n"
                                "\"multi\nline\",x,y\n"
                                "a,b\n"
                                "a,b,c,d\n"
                                "\"q\"z,1,2\n"
                                "p,,\n"
                                "ok,,fine\n"
                             << 2
                             << QStringList{"d.csv:4: has 2 fields, the header has 3",
                                    "d.csv:5: has 4 fields, the header has 3",
                                    "d.csv:6: text after the closing quote of field 1 on line 6",
                                    "d.csv:7: 'output' is empty: nothing to learn"};
    }
    void malformedRecordsAreLocated()
    {
        QFETCH(int, format);
        QFETCH(QString, file);
        QFETCH(QString, text);
        QFETCH(int, records);
        QFETCH(QStringList, issues);
        const Parsed skipped =
            parse(text.toStdString(), options(DataFormat(format)), file.toStdString());
        QVERIFY2(skipped.error.empty(), skipped.error.c_str());
        QCOMPARE(int(skipped.records.size()), records);
        QCOMPARE(int(skipped.report.records()), records);
        QCOMPARE(int(skipped.report.malformedCount()), int(issues.size()));
        const QStringList found = ::issues(skipped.report);
        QCOMPARE(found.size(), issues.size());
        for (int i = 0; i < issues.size(); ++i)
            QVERIFY2(found[i].startsWith(issues[i]), qPrintable(found[i] + " / " + issues[i]));
        for (const Record& record : skipped.records) // ShareGPT's speakers read as roles
            for (const ChatMessage& message : record.messages)
                QVERIFY(message.role == "system" || message.role == "user"
                    || message.role == "assistant");

        // With malformed: fail, the first one stops the read with the same words.
        const Parsed failed = parse(text.toStdString(),
            options(DataFormat(format), MalformedPolicy::Fail), file.toStdString());
        QVERIFY(failed.records.empty());
        QVERIFY2(
            QString::fromStdString(failed.error).startsWith(issues.front()), failed.error.c_str());
        QVERIFY(QString::fromStdString(failed.error).contains("data.malformed: skip"));
    }

    void wholeFileErrors_data()
    {
        QTest::addColumn<int>("format");
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("message");
        QTest::addRow("broken array") << int(DataFormat::Alpaca) << "[\n{\"a\": 1},\n{\"b\"\n"
                                      << "data.jsonl: line 4: not valid JSON";
        QTest::addRow("object, not array") << int(DataFormat::Alpaca) << "{\"a\": 1} {\"b\": 2}"
                                           << "data.jsonl:1: not valid JSON";
        QTest::addRow("not json") << int(DataFormat::Alpaca) << "\n\nhello"
                                  << "data.jsonl: line 3: expected a JSON array";
        QTest::addRow("a number") << int(DataFormat::Alpaca) << "5"
                                  << "data.jsonl: line 1: expected a JSON array of records";
        QTest::addRow("json array 200,000 deep")
            << int(DataFormat::Alpaca) << QString::fromStdString(tb::test::deepJsonArray())
            << "data.jsonl: not valid JSON: nested deeper than 64 levels";
        QTest::addRow("csv without response column")
            << int(DataFormat::Csv) << "instruction,input,answer\na,b,c\n"
            << "data.jsonl: line 1: the header has no column 'output' (data.columns.response)";
        QTest::addRow("csv broken header") << int(DataFormat::Csv) << "\"a\"b,c\n"
                                           << "data.jsonl: line 1: header";
    }
    void wholeFileErrors()
    {
        QFETCH(int, format);
        QFETCH(QString, text);
        QFETCH(QString, message);
        const Parsed parsed = parse(text.toStdString(), options(DataFormat(format)));
        if (message.startsWith("data.jsonl:1:")) {
            // JSON Lines: the bad line is a skipped record, not a file error.
            QVERIFY(parsed.error.empty());
            QCOMPARE(issues(parsed.report).size(), 1);
            QVERIFY2(issues(parsed.report).front().startsWith(message),
                qPrintable(issues(parsed.report).front()));
            return;
        }
        QVERIFY2(QString::fromStdString(parsed.error).startsWith(message), parsed.error.c_str());
    }

    void csvMissingColumnSuggestsNearest()
    {
        ReaderOptions csv = options(DataFormat::Csv);
        csv.columns.response = "sumary";
        const Parsed parsed = parse("dialogue,summary\na,b\n", csv);
        QVERIFY(QString::fromStdString(parsed.error).contains("did you mean summary?"));
    }

    void columnMapping()
    {
        ReaderOptions json = options(DataFormat::Alpaca);
        json.columns.prompt = "dialogue";
        json.columns.response = "summary";
        const Parsed mapped =
            parse("{\"dialogue\":\"A: hi\\nB: hey\",\"summary\":\"They greet.\"}\n", json);
        QCOMPARE(mapped.records.size(), size_t(1));
        QCOMPARE(mapped.records[0].instruction, std::string("A: hi\nB: hey"));
        QCOMPARE(mapped.records[0].response, std::string("They greet."));

        // A fixed instruction, the dialogue as input, and a nested path.
        json.instruction = "Summarize the dialogue.";
        json.columns.input = "turns.0.text";
        json.columns.response = "out.summary";
        const Parsed nested = parse(R"({"turns":[{"text":"A: hi"}],"out":{"summary":"A greets."}})"
                                    "\n",
            json);
        QCOMPARE(nested.records.size(), size_t(1));
        QCOMPARE(nested.records[0].instruction, std::string("Summarize the dialogue."));
        QCOMPARE(nested.records[0].input, std::string("A: hi"));
        QCOMPARE(nested.records[0].response, std::string("A greets."));
    }

    void textDocuments_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("separator");
        QTest::addColumn<QStringList>("documents");
        QTest::addColumn<QList<int>>("lines");
        QTest::addRow("blank lines")
            << "one\ntwo\n\nthree\n\n\n\nfour"
            << "\n\n"
            << QStringList{"one\ntwo", "three", "four"} << QList<int>{1, 4, 8};
        QTest::addRow("crlf") << "a\r\n\r\nb\r\n"
                              << "\n\n"
                              << QStringList{"a", "b"} << QList<int>{1, 3};
        QTest::addRow("endoftext")
            << "s1\n<|endoftext|>\ns2 ends\n<|endoftext|>\n"
            << "<|endoftext|>" << QStringList{"s1", "s2 ends"} << QList<int>{1, 3};
        QTest::addRow("only spaces") << "  \n\n \n"
                                     << "\n\n"
                                     << QStringList{} << QList<int>{};
    }
    void textDocuments()
    {
        QFETCH(QString, text);
        QFETCH(QString, separator);
        QFETCH(QStringList, documents);
        QFETCH(QList<int>, lines);
        ReaderOptions textOptions = options(DataFormat::Text);
        textOptions.textSeparator = separator.toStdString();
        const Parsed parsed = parse(text.toStdString(), textOptions, "t.txt");
        QStringList found;
        QList<int> foundLines;
        for (const Record& record : parsed.records) {
            QVERIFY(record.kind == RecordKind::Text);
            found << QString::fromStdString(record.text);
            foundLines << int(record.source.line);
        }
        QCOMPARE(found, documents);
        QCOMPARE(foundLines, lines);
    }

    void demoDatasets()
    {
        ReadReport report;
        const auto instructions =
            readRecords(tb::test::sourcePath("resources/demo/tiny_instructions.jsonl"),
                options(DataFormat::Alpaca), report);
        QVERIFY(instructions.ok());
        QCOMPARE(instructions.value().size(), size_t(64));
        const auto chats = readRecords(tb::test::sourcePath("resources/demo/tiny_chat.jsonl"),
            options(DataFormat::Chat), report);
        QVERIFY(chats.ok());
        QCOMPARE(chats.value().size(), size_t(12));
        QCOMPARE(report.malformedCount(), size_t(0));
        QCOMPARE(chats.value()[0].messages.front().role, std::string("system"));
    }

    // Real and synthetic datasets, whole. Counts and byte totals were taken
    // with Python's json and csv modules, an independent reader. Rows marked
    // shared read data we may not redistribute (Alpaca CC BY-NC 4.0, SAMSum
    // CC BY-NC-ND 4.0) in place from ../shared/data and skip where it is
    // absent; every other row reads the repository's tests/data/datasets.
    void datasets_data()
    {
        QTest::addColumn<bool>("shared");
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("format");
        QTest::addColumn<QString>("columns"); // prompt;input;response;instruction
        QTest::addColumn<QString>("separator");
        QTest::addColumn<int>("records");
        QTest::addRow("synthetic alpaca json")
            << false << "synthetic/instructions.json" << int(DataFormat::Alpaca) << ""
            << "" << 40;
        QTest::addRow("synthetic csv") << false << "synthetic/dialogues.csv" << int(DataFormat::Csv)
                                       << ";dialogue;summary;Summarize the dialogue."
                                       << "" << 20;
        QTest::addRow("synthetic nested jsonl")
            << false << "synthetic/tasks.jsonl" << int(DataFormat::Alpaca)
            << "instruction;instances.0.input;instances.0.output;"
            << "" << 15;
        QTest::addRow("tinystories paragraphs")
            << false << "tinystories/tinystories_val_first800.txt" << int(DataFormat::Text) << ""
            << "\n\n"
            << 800;
        QTest::addRow("tinystories stories")
            << false << "tinystories/tinystories_train_first100.txt" << int(DataFormat::Text) << ""
            << "<|endoftext|>" << 100;
        QTest::addRow("alpaca json (shared)")
            << true << "alpaca/alpaca_en_demo.json" << int(DataFormat::Alpaca) << ""
            << "" << 999;
        QTest::addRow("samsum csv (shared)")
            << true << "samsum/samsum-validation.csv" << int(DataFormat::Csv)
            << ";dialogue;summary;Summarize the dialogue."
            << "" << 818;
    }
    void datasets()
    {
        QFETCH(bool, shared);
        QFETCH(QString, file);
        QFETCH(int, format);
        QFETCH(QString, columns);
        QFETCH(QString, separator);
        QFETCH(int, records);
        const std::string path = datasetPath(shared, file);
        if (shared && !std::filesystem::exists(path))
            TB_SKIP("non-redistributable dataset absent: " + QString::fromStdString(path));
        ReaderOptions readerOptions = options(DataFormat(format), MalformedPolicy::Fail);
        if (!columns.isEmpty()) {
            const QStringList parts = columns.split(';');
            if (!parts[0].isEmpty())
                readerOptions.columns.prompt = parts[0].toStdString();
            readerOptions.columns.input = parts[1].toStdString();
            readerOptions.columns.response = parts[2].toStdString();
            readerOptions.instruction = parts[3].toStdString();
        }
        if (!separator.isEmpty())
            readerOptions.textSeparator = separator.toStdString();
        ReadReport report;
        const auto read = readRecords(path, readerOptions, report);
        QVERIFY2(read.ok(), read.ok() ? "" : read.error().toString().c_str());
        QCOMPARE(int(read.value().size()), records);
        QCOMPARE(report.malformedCount(), size_t(0));
        for (const Record& record : read.value())
            QVERIFY(record.source.line > 0);
    }

    // Python: csv.reader(open(path, newline='')), sums of len(field.encode()),
    // and the line each record starts on.
    void csvFieldsMatchAnIndependentReader_data()
    {
        QTest::addColumn<bool>("shared");
        QTest::addColumn<QString>("file");
        QTest::addColumn<qulonglong>("dialogueBytes");
        QTest::addColumn<qulonglong>("summaryBytes");
        QTest::addColumn<qulonglong>("tenthLine");
        QTest::addColumn<qulonglong>("lastLine");
        QTest::addColumn<QString>("lastSummary");
        QTest::addRow("synthetic") << false << "synthetic/dialogues.csv" << 1803ull << 943ull
                                   << 28ull << 55ull << "Lia is late; Gus will save her a seat";
        QTest::addRow("samsum (shared)")
            << true << "samsum/samsum-validation.csv" << 402830ull << 90136ull << 122ull << 8852ull
            << "Paige wants to have the declaration";
    }
    void csvFieldsMatchAnIndependentReader()
    {
        QFETCH(bool, shared);
        QFETCH(QString, file);
        QFETCH(qulonglong, dialogueBytes);
        QFETCH(qulonglong, summaryBytes);
        QFETCH(qulonglong, tenthLine);
        QFETCH(qulonglong, lastLine);
        QFETCH(QString, lastSummary);
        const std::string path = datasetPath(shared, file);
        if (shared && !std::filesystem::exists(path))
            TB_SKIP("non-redistributable dataset absent: " + QString::fromStdString(path));
        ReaderOptions csv = options(DataFormat::Csv, MalformedPolicy::Fail);
        csv.columns.input = "dialogue";
        csv.columns.response = "summary";
        csv.instruction = "Summarize the dialogue.";
        ReadReport report;
        const auto read = readRecords(path, csv, report);
        QVERIFY(read.ok());
        qulonglong inputs = 0;
        qulonglong responses = 0;
        for (const Record& record : read.value()) {
            inputs += record.input.size();
            responses += record.response.size();
        }
        QCOMPARE(inputs, dialogueBytes);
        QCOMPARE(responses, summaryBytes);
        QCOMPARE(qulonglong(read.value()[9].source.line), tenthLine);
        QCOMPARE(qulonglong(read.value().back().source.line), lastLine);
        QVERIFY(read.value().back().response.starts_with(lastSummary.toStdString()));
    }

    void unreadableFile()
    {
        ReadReport report;
        const auto read =
            readRecords("/nonexistent/train.jsonl", options(DataFormat::Alpaca), report);
        QVERIFY(!read.ok());
        QVERIFY(
            QString::fromStdString(read.error().toString()).contains("/nonexistent/train.jsonl"));
    }
};

QTEST_GUILESS_MAIN(TestDataReaders)
#include "test_data_readers.moc"
