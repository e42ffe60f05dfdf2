#include "../support/qt_test_paths.h"
#include "common/atomic_file.h"
#include "data/json_records.h"
#include "data/model_chat_template.h"
#include "jinja/template.h"

#include <QDir>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>

// The chat templates models are published with (tests/data/chat_templates),
// rendered by Tunebench's Jinja engine and by transformers' own
// apply_chat_template path (chat_template_reference.py) for the same
// conversations: the same text to the byte, or both refuse the conversation.
using tb::jinja::Template;
using tb::jinja::Value;
using json = nlohmann::ordered_json;

namespace {

std::string readFile(const QString& path)
{
    const auto text = tb::common::readFile(path.toStdString());
    return text.ok() ? text.value() : std::string();
}

// The variables apply_chat_template gives a template: the messages without
// their null-valued keys, tools and documents (None unless given), the
// special tokens, then the caller's extra variables.
Value variables(const json& test, bool generationPrompt)
{
    json messages = json::array();
    for (const json& message : test["messages"]) {
        json kept = json::object();
        for (const auto& [key, value] : message.items())
            if (!value.is_null())
                kept[key] = value;
        messages.push_back(kept);
    }
    json all = {{"messages", messages}, {"tools", nullptr}, {"documents", nullptr},
        {"add_generation_prompt", generationPrompt}, {"bos_token", "<s>"}, {"eos_token", "</s>"},
        {"date_string", "26 Jul 2024"}};
    if (const auto extra = test.find("extra"); extra != test.end())
        for (const auto& [key, value] : extra->items())
            all[key] = value;
    return Value::fromJson(all);
}

// Conversations that reach what the templates do differently
// (chat_conversations.json): a system turn, several turns, a prompt awaiting
// an answer, reasoning kept in an answer, a tool call and its result, tools
// offered, text to trim and text beyond ASCII.
json conversations()
{
    return json::parse(readFile(tb::test::qSourcePath("tests/reference/chat_conversations.json")));
}

// Variables a chat record can give a template: its tools, nothing else.
bool containsOnlyTools(const json& extra)
{
    for (const auto& [key, value] : extra.items())
        if (key != "tools")
            return false;
    return true;
}

bool hasAnswer(const json& messages)
{
    return std::any_of(
        messages.begin(), messages.end(), [](const json& m) { return m["role"] == "assistant"; });
}

// Where a template writes a conversation so that its answers cannot be
// told apart, and training refuses it: Mistral Nemo's writes the system
// prompt into the last message only when that message is the user's, so
// the text before the answer (the system prompt in it) is not the start of
// the whole conversation's (the system prompt dropped).
bool isInseparable(const std::string& templateName, const std::string& conversation)
{
    return templateName == "mistralai-Mistral-Nemo-Instruct-2407"
        && conversation == "system, user, assistant";
}

} // namespace

class TestChatTemplates : public QObject {
    Q_OBJECT

    QStringList m_templates;
    json m_cases = json::array();
    json m_reference;

private slots:
    void initTestCase()
    {
        const QDir folder(tb::test::qSourcePath("tests/data/chat_templates"));
        for (const QString& name : folder.entryList({"*.jinja"}, QDir::Files, QDir::Name))
            m_templates << folder.filePath(name);
        QVERIFY(m_templates.size() >= 8);
        for (const QString& path : m_templates) {
            for (const json& test : conversations()) {
                json extra = json::object();
                if (const auto given = test.find("extra"); given != test.end())
                    extra = *given;
                const json asRecord = {{"template", path.toStdString()},
                    {"messages", test["messages"]}, {"add_generation_prompt", false},
                    {"bos_token", "<s>"}, {"eos_token", "</s>"}, {"extra", extra},
                    {"name", test["name"]}, {"record", true}};
                const bool recordCanSay = containsOnlyTools(extra);
                extra["date_string"] = "26 Jul 2024";
                for (const bool generationPrompt : {false, true})
                    m_cases.push_back(
                        {{"template", path.toStdString()}, {"messages", test["messages"]},
                            {"add_generation_prompt", generationPrompt}, {"bos_token", "<s>"},
                            {"eos_token", "</s>"}, {"extra", extra}, {"name", test["name"]}});
                // As a record gives it: a template without date_string
                // (Llama 3.2) writes today's date, on both sides.
                if (recordCanSay)
                    m_cases.push_back(asRecord);
            }
        }
        QTemporaryDir dir;
        const QString casesFile = dir.filePath("cases.json");
        QVERIFY(tb::common::writeFileAtomic(casesFile.toStdString(), m_cases.dump()).ok());
        QProcess python;
        python.start(QString::fromUtf8(tb::test::referencePython()),
            {tb::test::qSourcePath("tests/reference/chat_template_reference.py"), casesFile});
        QVERIFY(python.waitForFinished(300000));
        QVERIFY2(python.exitCode() == 0, python.readAllStandardError().constData());
        m_reference = json::parse(python.readAllStandardOutput().toStdString());
        QCOMPARE(m_reference.size(), m_cases.size());
    }

    void rendersAsTransformers_data()
    {
        QTest::addColumn<int>("index");
        for (std::size_t i = 0; i < m_cases.size(); ++i) {
            const json& test = m_cases[i];
            if (test.contains("record"))
                continue;
            QTest::addRow("%s: %s%s",
                qPrintable(QFileInfo(QString::fromStdString(test["template"])).completeBaseName()),
                test["name"].get<std::string>().c_str(),
                test["add_generation_prompt"].get<bool>() ? ", generation prompt" : "")
                << int(i);
        }
    }
    void rendersAsTransformers()
    {
        QFETCH(int, index);
        const json& test = m_cases[std::size_t(index)];
        const json& expected = m_reference[std::size_t(index)];
        auto parsed = Template::parse(readFile(QString::fromStdString(test["template"])));
        QVERIFY2(parsed.ok(), parsed.ok() ? "" : parsed.error().message.c_str());
        json variablesCase = test;
        auto rendered = parsed.value().render(
            variables(variablesCase, test["add_generation_prompt"].get<bool>()));
        if (expected.contains("error")) {
            QVERIFY2(!rendered.ok(),
                ("transformers refused (" + expected["error"].get<std::string>()
                    + ") but we rendered: " + (rendered.ok() ? rendered.value().text : ""))
                    .c_str());
            return;
        }
        QVERIFY2(rendered.ok(), rendered.ok() ? "" : rendered.error().message.c_str());
        QCOMPARE(QString::fromStdString(rendered.value().text),
            QString::fromStdString(expected["text"].get<std::string>()));
    }

    // The same conversations as chat records in a JSON Lines file (the
    // messages, tool calls and tool turns as written, the tools beside
    // them), read by the dataset reader and written by the model's own
    // template as training formats them: the text apply_chat_template
    // writes, or both refuse.
    void recordsRenderAsTransformers_data()
    {
        QTest::addColumn<int>("index");
        for (std::size_t i = 0; i < m_cases.size(); ++i) {
            const json& test = m_cases[i];
            if (test.contains("record"))
                QTest::addRow("%s: %s",
                    qPrintable(
                        QFileInfo(QString::fromStdString(test["template"])).completeBaseName()),
                    test["name"].get<std::string>().c_str())
                    << int(i);
        }
    }
    void recordsRenderAsTransformers()
    {
        QFETCH(int, index);
        const json& test = m_cases[std::size_t(index)];
        const json& expected = m_reference[std::size_t(index)];
        json line = {{"messages", test["messages"]}};
        if (test["extra"].contains("tools"))
            line["tools"] = test["extra"]["tools"];
        tb::data::ReaderOptions options;
        options.format = tb::config::DataFormat::Chat;
        options.malformed = tb::config::MalformedPolicy::Fail;
        tb::data::ReadReport report;
        const auto records =
            tb::data::parseJsonRecords(line.dump() + "\n", "chats.jsonl", options, report);
        if (!hasAnswer(test["messages"])) {
            QVERIFY(!records.ok());
            QVERIFY2(records.error().message.find("nothing to learn") != std::string::npos,
                records.error().message.c_str());
            return;
        }
        QVERIFY2(records.ok(), records.ok() ? "" : records.error().toString().c_str());
        QCOMPARE(records.value().size(), size_t(1));
        auto model =
            tb::data::ModelChatTemplate::parse(readFile(QString::fromStdString(test["template"])),
                "tokenizer_config.json", "<s>", "</s>");
        QVERIFY2(model.ok(), model.ok() ? "" : model.error().message.c_str());
        const auto formatted = model.value().format(records.value().front());
        const std::string name =
            QFileInfo(QString::fromStdString(test["template"])).completeBaseName().toStdString();
        if (isInseparable(name, test["name"])) {
            QVERIFY(!formatted.ok());
            QVERIFY2(formatted.error().message.find("differently once later turns follow")
                    != std::string::npos,
                formatted.error().message.c_str());
            return;
        }
        if (expected.contains("error")) {
            QVERIFY2(!formatted.ok(), "transformers refused, but the record was formatted");
            return;
        }
        QVERIFY2(formatted.ok(), formatted.ok() ? "" : formatted.error().message.c_str());
        QCOMPARE(QString::fromStdString(formatted.value().text()),
            QString::fromStdString(expected["text"].get<std::string>()));
    }
};

QTEST_GUILESS_MAIN(TestChatTemplates)
#include "test_chat_templates.moc"
