#include "../support/chat_template_folder.h"
#include "data/json_records.h"
#include "data/model_chat_template.h"
#include "data/prompt_format.h"
#include "trained_texts.h"

#include <QTest>

// Conversations with tools as datasets give them: OpenAI's messages
// (tool_calls, tool turns, a record's tools, a turn's weight) and ShareGPT's
// conversations with LLaMA-Factory's function_call and observation turns;
// what is refused and how, and what a model's own template trains of them.
// (The text each template writes of such a record is held against
// transformers by tests/reference/test_chat_templates.)
using namespace tb::data;
using tb::config::PromptTemplate;
using tb::test::trainedTexts;
using json = nlohmann::ordered_json;

namespace {

const char* const kWeatherTools = R"([{"type": "function", "function": {"name": "get_weather",
    "description": "Weather of a city", "parameters": {"type": "object", "properties":
    {"city": {"type": "string"}}, "required": ["city"]}}}])";

tb::common::Result<std::vector<Record>> readLine(const std::string& line)
{
    ReaderOptions options;
    options.format = tb::config::DataFormat::Chat;
    options.malformed = tb::config::MalformedPolicy::Fail;
    ReadReport report;
    return parseJsonRecords(line + "\n", "tools.jsonl", options, report);
}

// The OpenAI form: a call without content, the tool's answer, the answer.
std::string openAiLine(const std::string& lastTurnExtra = "")
{
    return std::string(R"({"messages": [{"role": "user", "content": "Weather in Paris?"},)")
        + R"({"role": "assistant", "content": null, "tool_calls": [{"type": "function", )"
        + R"("function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},)"
        + R"({"role": "tool", "tool_call_id": "call_1", "content": "21.5 C"},)"
        + R"({"role": "assistant", "content": "It is 21.5 C.")" + lastTurnExtra + "}], "
        + R"("tools": )" + json::parse(kWeatherTools).dump() + "}";
}

ModelChatTemplate qwen25()
{
    auto model =
        ModelChatTemplate::parse(tb::test::publishedChatTemplate("Qwen-Qwen2.5-7B-Instruct.jinja"),
            "tokenizer_config.json", std::nullopt, "<|im_end|>");
    return model.ok() ? std::move(model).value() : ModelChatTemplate{};
}

} // namespace

class TestDataToolCalls : public QObject {
    Q_OBJECT

private slots:
    void readsOpenAiToolCalls()
    {
        const auto records = readLine(openAiLine());
        QVERIFY2(records.ok(), records.ok() ? "" : records.error().toString().c_str());
        const Record& record = records.value().front();
        QCOMPARE(record.messages.size(), size_t(4));
        const ChatMessage& call = record.messages[1];
        QVERIFY(call.hasToolCalls());
        QVERIFY(call.contentAbsent);
        QCOMPARE(
            call.fields["tool_calls"][0]["function"]["name"].get<std::string>(), "get_weather");
        const ChatMessage& answer = record.messages[2];
        QCOMPARE(answer.role, "tool");
        QCOMPARE(answer.content, "21.5 C");
        QCOMPARE(answer.fields["tool_call_id"].get<std::string>(), "call_1");
        // The schema as written, keys in the file's order.
        QCOMPARE(record.tools.dump(), json::parse(kWeatherTools).dump());
        QCOMPARE(record.tools[0]["function"].begin().key(), "name");
        QVERIFY(record.usesTools());
    }

    // LLaMA-Factory's ShareGPT: the call as JSON text in a function_call
    // turn, the answer in an observation turn, the tools as JSON text.
    void readsShareGptFunctionCalls()
    {
        const json call = {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}}}};
        const json turns = json::array({{{"from", "human"}, {"value", "Weather in Paris?"}},
            {{"from", "function_call"}, {"value", call.dump()}},
            {{"from", "observation"}, {"value", "21.5 C"}},
            {{"from", "gpt"}, {"value", "It is 21.5 C."}}});
        const std::string line =
            json{{"conversations", turns}, {"tools", json::parse(kWeatherTools).dump()}}.dump();
        const auto records = readLine(line);
        QVERIFY2(records.ok(), records.ok() ? "" : records.error().toString().c_str());
        const Record& record = records.value().front();
        QCOMPARE(record.messages[1].role, "assistant");
        QVERIFY(record.messages[1].contentAbsent);
        QCOMPARE(record.messages[1].fields["tool_calls"].dump(),
            json::parse(R"([{"type": "function", "function": {"name": "get_weather",
                "arguments": {"city": "Paris"}}}])")
                .dump());
        QCOMPARE(record.messages[2].role, "tool");
        QCOMPARE(record.tools.dump(), json::parse(kWeatherTools).dump());
    }

    void refusals_data()
    {
        QTest::addColumn<QString>("line");
        QTest::addColumn<QString>("expected");
        const QString user = R"({"role": "user", "content": "Hi"})";
        const QString answer = R"({"role": "assistant", "content": "Hello."})";
        const auto chat = [&](const QString& turns, const QString& more = {}) {
            return R"({"messages": [)" + turns + "]" + more + "}";
        };
        QTest::addRow("tool calls on a user turn") << chat(
            R"({"role": "user", "content": "Hi", "tool_calls": [{"function": {"name": "f"}}]}, )"
            + answer)
                                                   << "messages[0]: 'tool_calls' on a user turn, "
                                                      "expected only on an assistant turn";
        QTest::addRow("an empty list of calls")
            << chat(user + R"(, {"role": "assistant", "content": "x", "tool_calls": []})")
            << "messages[1]: 'tool_calls' is array and empty";
        QTest::addRow("a call without a function name")
            << chat(user
                   + R"(, {"role": "assistant", "tool_calls": [{"function": {"arguments": {}}}]})")
            << "messages[1]: 'tool_calls[0]' has no function name";
        QTest::addRow("a tool turn without content")
            << chat(user + R"(, {"role": "tool", "tool_call_id": "1"}, )" + answer)
            << "messages[1]: 'content' is missing";
        QTest::addRow("an unknown role")
            << chat(user + R"(, {"role": "function", "content": "x"}, )" + answer)
            << "messages[1]: role 'function', expected system, user, assistant or tool";
        QTest::addRow("a weight of 2")
            << chat(user + R"(, {"role": "assistant", "content": "x", "weight": 2})")
            << "messages[1]: 'weight' is 2, expected 0 or 1 on an assistant turn";
        QTest::addRow("a weight on a user turn")
            << chat(R"({"role": "user", "content": "Hi", "weight": 1}, )" + answer)
            << "messages[0]: 'weight' is 1 on a user turn, expected 0 or 1 on an assistant turn";
        QTest::addRow("every answer untrained")
            << chat(user + R"(, {"role": "assistant", "content": "x", "weight": 0})")
            << "no trained assistant message with content or tool calls: nothing to learn";
        QTest::addRow("tools as text that is no list")
            << chat(user + ", " + answer, ", \"tools\": \"get_weather(city)\"")
            << "'tools' is string that is not JSON ([json.exception.parse_error.101] parse error "
               "at line 1, column 1: syntax error while parsing value - invalid literal; last "
               "read: 'g'), expected a list of function schemas";
        QTest::addRow("tools as text holding an object")
            << chat(user + ", " + answer, ", \"tools\": \"{\\\"name\\\": \\\"f\\\"}\"")
            << "'tools' is string that is not a JSON list, expected a list of function schemas";
        QTest::addRow("tools as a number") << chat(user + ", " + answer,
            R"(, "tools": 5)") << "'tools' is number, expected a list of function schemas";
        QTest::addRow("a function_call that is not JSON")
            << "{\"conversations\": [{\"from\": \"human\", \"value\": \"Hi\"}, {\"from\": "
               "\"function_call\", \"value\": \"get_weather(Paris)\"}]}"
            << "conversations[1]: a function_call's value is not JSON ([json.exception."
               "parse_error.101] parse error at line 1, column 1: syntax error while parsing value "
               "- invalid literal; last read: 'g'), expected {\"name\"";
    }
    void refusals()
    {
        QFETCH(QString, line);
        QFETCH(QString, expected);
        const auto records = readLine(line.toStdString());
        QVERIFY(!records.ok());
        const std::string message = records.error().toString();
        QVERIFY2(message.find("tools.jsonl:1") != std::string::npos, message.c_str());
        QVERIFY2(message.find(expected.toStdString()) != std::string::npos, message.c_str());
    }

    // A built-in format has no way to write a call or a tool's answer: the
    // record is refused, naming the format and what to use instead.
    void builtInFormatsRefuseTools_data()
    {
        QTest::addColumn<PromptTemplate>("format");
        for (const PromptTemplate format : {PromptTemplate::Llama3, PromptTemplate::ChatMl,
                 PromptTemplate::Mistral, PromptTemplate::None})
            QTest::addRow("%s", tb::config::toString(format).data()) << format;
    }
    void builtInFormatsRefuseTools()
    {
        QFETCH(PromptTemplate, format);
        const auto records = readLine(openAiLine());
        QVERIFY(records.ok());
        const auto formatted = formatRecord(records.value().front(), format, nullptr);
        QVERIFY(!formatted.ok());
        const std::string message = formatted.error().message;
        QVERIFY2(message.find(std::string("built-in ") + tb::config::toString(format).data())
                != std::string::npos,
            message.c_str());
        QVERIFY2(formatted.error().hint.find("data.template to model") != std::string::npos,
            formatted.error().hint.c_str());
    }

    // Qwen2.5's own template: the call is trained as the model writes it
    // (the <tool_call> block and the end of the turn), the tool's answer is
    // context, and so is every answer of weight 0.
    void theModelTemplateTrainsCallsNotResults_data()
    {
        QTest::addColumn<QString>("lastTurnExtra");
        QTest::addColumn<QStringList>("trained");
        const QString call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                             "\"Paris\"}}\n</tool_call><|im_end|>\n";
        QTest::addRow("every answer") << "" << QStringList{call, "It is 21.5 C.<|im_end|>\n"};
        QTest::addRow("the last of weight 0") << R"(, "weight": 0)" << QStringList{call};
    }
    void theModelTemplateTrainsCallsNotResults()
    {
        QFETCH(QString, lastTurnExtra);
        QFETCH(QStringList, trained);
        const auto records = readLine(openAiLine(lastTurnExtra.toStdString()));
        QVERIFY2(records.ok(), records.ok() ? "" : records.error().toString().c_str());
        const auto formatted = qwen25().format(records.value().front());
        QVERIFY2(formatted.ok(), formatted.ok() ? "" : formatted.error().message.c_str());
        QCOMPARE(trainedTexts(formatted.value()), trained);
        const std::string text = formatted.value().text();
        QVERIFY(text.find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": "
                          "\"get_weather\"")
            != std::string::npos);
        QVERIFY(text.find("<tool_response>\n21.5 C\n</tool_response>") != std::string::npos);
    }

    // A built-in format leaves an answer of weight 0 untrained too.
    void weightZeroInABuiltInFormat()
    {
        const auto records = readLine(R"({"messages": [{"role": "user", "content": "Hi"}, )"
                                      R"({"role": "assistant", "content": "Hey", "weight": 0}, )"
                                      R"({"role": "user", "content": "Bye"}, )"
                                      R"({"role": "assistant", "content": "Goodbye."}]})");
        QVERIFY(records.ok());
        const auto formatted =
            formatRecord(records.value().front(), PromptTemplate::ChatMl, nullptr);
        QVERIFY(formatted.ok());
        QCOMPARE(trainedTexts(formatted.value()), QStringList{"Goodbye.<|im_end|>"});
    }
};

QTEST_GUILESS_MAIN(TestDataToolCalls)
#include "test_data_tool_calls.moc"
