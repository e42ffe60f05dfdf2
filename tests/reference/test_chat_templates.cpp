#include "../support/qt_test_paths.h"
#include "common/atomic_file.h"
#include "jinja/template.h"

#include <QDir>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

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
                for (const bool generationPrompt : {false, true}) {
                    json extra = json::object();
                    if (const auto given = test.find("extra"); given != test.end())
                        extra = *given;
                    extra["date_string"] = "26 Jul 2024";
                    m_cases.push_back(
                        {{"template", path.toStdString()}, {"messages", test["messages"]},
                            {"add_generation_prompt", generationPrompt}, {"bos_token", "<s>"},
                            {"eos_token", "</s>"}, {"extra", extra}, {"name", test["name"]}});
                }
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
};

QTEST_GUILESS_MAIN(TestChatTemplates)
#include "test_chat_templates.moc"
