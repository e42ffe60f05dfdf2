#include "../support/deep_json.h"
#include "../support/test_data.h"
#include "data/chat_template.h"
#include "data/dataset_reader.h"
#include "data/prompt_format.h"
#include "data/tokenize.h"

#include "common/atomic_file.h"

#include <QTemporaryDir>
#include <QTest>

#include <filesystem>

using namespace tb::data;
using tb::config::DataFormat;
using tb::config::PromptTemplate;
using tb::tokenizer::TokenId;
using tb::tokenizer::Tokenizer;

namespace {

std::string modelDir()
{
    return tb::test::demoModelDir();
}

Record chatRecord()
{
    Record record;
    record.kind = RecordKind::Chat;
    record.messages = {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"},
        {"user", "Bye"}, {"assistant", "Goodbye."}};
    return record;
}

Record instructionRecord(std::string input = {})
{
    Record record;
    record.kind = RecordKind::Instruction;
    record.instruction = "Name a fruit.";
    record.input = std::move(input);
    record.response = "An apple.";
    return record;
}

// Segments as "P:text" (prompt) and "T:text" (trained).
QStringList segments(const FormattedExample& example)
{
    QStringList out;
    for (const Segment& segment : example.segments)
        out << (segment.trainable ? "T:" : "P:") + QString::fromStdString(segment.text);
    return out;
}

// Contiguous runs of trained token ids.
std::vector<std::vector<TokenId>> trainedRuns(const TokenizedExample& example)
{
    std::vector<std::vector<TokenId>> runs;
    bool inRun = false;
    for (size_t i = 0; i < example.size(); ++i) {
        const bool trained = example.labels[i] != kIgnoreIndex;
        if (trained && !inRun)
            runs.emplace_back();
        if (trained)
            runs.back().push_back(example.inputIds[i]);
        inRun = trained;
    }
    return runs;
}

} // namespace

class TestDataTemplates : public QObject {
    Q_OBJECT

    std::optional<Tokenizer> m_tokenizer;

private slots:
    void initTestCase()
    {
        auto loaded = Tokenizer::load(modelDir());
        QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().toString().c_str());
        m_tokenizer = loaded.value();
    }

    void formats_data()
    {
        QTest::addColumn<int>("format");
        QTest::addColumn<bool>("chat");
        QTest::addColumn<QStringList>("expected");
        QTest::addColumn<bool>("addSpecialTokens");
        QTest::addColumn<bool>("appendEos");
        QTest::addRow("alpaca")
            << int(PromptTemplate::Alpaca) << false
            << QStringList{"P:Below is an instruction that describes a task. Write a response that "
                           "appropriately completes the request.\n\n### Instruction:\nName a "
                           "fruit.\n\n### Response:\n",
                   "T:An apple."}
            << true << true;
        QTest::addRow("llama3")
            << int(PromptTemplate::Llama3) << true
            << QStringList{"P:<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe "
                           "brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|"
                           ">"
                           "<|start_header_id|>assistant<|end_header_id|>\n\n",
                   "T:Hello!<|eot_id|>",
                   "P:<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|><|start_"
                   "header_id|>assistant<|end_header_id|>\n\n",
                   "T:Goodbye.<|eot_id|>"}
            << false << false;
        QTest::addRow("chatml")
            << int(PromptTemplate::ChatMl) << true
            << QStringList{"P:<|im_start|>system\nBe "
                           "brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>"
                           "\n<|im_start|>assistant\n",
                   "T:Hello!<|im_end|>",
                   "P:\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n",
                   "T:Goodbye.<|im_end|>", "P:\n"}
            << false << false;
        QTest::addRow("mistral") << int(PromptTemplate::Mistral) << true
                                 << QStringList{"P:<s>[INST] Be brief.\n\nHi [/INST]",
                                        "T:Hello!</s>", "P:[INST] Bye [/INST]", "T:Goodbye.</s>"}
                                 << false << false;
        QTest::addRow("none, chat")
            << int(PromptTemplate::None) << true
            << QStringList{"P:Be brief.\nHi\n", "T:Hello!\n", "P:Bye\n", "T:Goodbye."} << true
            << true;
        QTest::addRow("none, instruction")
            << int(PromptTemplate::None) << false << QStringList{"P:Name a fruit.\n", "T:An apple."}
            << true << true;
        QTest::addRow("chatml, instruction")
            << int(PromptTemplate::ChatMl) << false
            << QStringList{"P:<|im_start|>user\nName a fruit.<|im_end|>\n<|im_start|>assistant\n",
                   "T:An apple.<|im_end|>", "P:\n"}
            << false << false;
    }
    void formats()
    {
        QFETCH(int, format);
        QFETCH(bool, chat);
        QFETCH(QStringList, expected);
        QFETCH(bool, addSpecialTokens);
        QFETCH(bool, appendEos);
        const auto formatted =
            formatRecord(chat ? chatRecord() : instructionRecord(), PromptTemplate(format));
        QVERIFY(formatted.ok());
        QCOMPARE(segments(formatted.value()), expected);
        QCOMPARE(formatted.value().addSpecialTokens, addSpecialTokens);
        QCOMPARE(formatted.value().appendEos, appendEos);
    }

    void alpacaWithInput()
    {
        QCOMPARE(alpacaPrompt("Say the opposite word.", "big"),
            std::string("Below is an instruction that describes a task, paired with an input "
                        "that provides further context. Write a response that appropriately "
                        "completes the request.\n\n### Instruction:\nSay the opposite "
                        "word.\n\n### Input:\nbig\n\n### Response:\n"));
    }

    void formatErrors_data()
    {
        QTest::addColumn<int>("format");
        QTest::addColumn<QString>("firstRole");
        QTest::addColumn<QString>("message");
        QTest::addRow("alpaca of a chat") << int(PromptTemplate::Alpaca) << "user"
                                          << "needs an instruction record";
        QTest::addRow("mistral starting with assistant")
            << int(PromptTemplate::Mistral) << "assistant"
            << "alternate, starting with user";
        QTest::addRow("auto unresolved") << int(PromptTemplate::Auto) << "user"
                                         << "not resolved";
    }
    void formatErrors()
    {
        QFETCH(int, format);
        QFETCH(QString, firstRole);
        QFETCH(QString, message);
        Record record;
        record.kind = RecordKind::Chat;
        record.messages = {{firstRole.toStdString(), "x"}, {"assistant", "y"}};
        const auto formatted = formatRecord(record, PromptTemplate(format));
        QVERIFY(!formatted.ok());
        QVERIFY2(QString::fromStdString(formatted.error().message).contains(message),
            formatted.error().message.c_str());
    }

    void detect_data()
    {
        QTest::addColumn<QString>("jinja");
        QTest::addColumn<int>("format"); // -1: not recognised
        QTest::addRow("llama3") << "{{ '<|start_header_id|>' + m.role + '<|end_header_id|>\\n\\n' "
                                   "+ m.content | trim + '<|eot_id|>' }}"
                                << int(PromptTemplate::Llama3);
        QTest::addRow("chatml")
            << "{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>' }}"
            << int(PromptTemplate::ChatMl);
        QTest::addRow("mistral") << "{{ bos_token }}{{ '[INST] ' + m.content + ' [/INST]' }}"
                                 << int(PromptTemplate::Mistral);
        QTest::addRow("llama2 is not mistral")
            << "{{ '[INST] <<SYS>>\\n' + system + '\\n<</SYS>>\\n\\n' + m.content + ' [/INST]' }}"
            << -1;
        QTest::addRow("gemma") << "<start_of_turn>{{ role }}\\n{{ content }}<end_of_turn>" << -1;
        QTest::addRow("empty") << "" << -1;
    }
    void detect()
    {
        QFETCH(QString, jinja);
        QFETCH(int, format);
        const auto detected = detectChatTemplate(jinja.toStdString());
        QCOMPARE(detected.has_value(), format >= 0);
        if (detected)
            QCOMPARE(int(*detected), format);
    }

    void modelTemplateFromFolder()
    {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        const auto write = [&](const char* name, const std::string& text) {
            QVERIFY(tb::common::writeFileAtomic(folder + "/" + name, text).ok());
        };
        auto found = modelChatTemplate(folder);
        QVERIFY(found.ok() && !found.value());

        write("tokenizer_config.json", R"({"chat_template": "<|im_start|>{{ x }}<|im_end|>"})");
        found = modelChatTemplate(folder + "/tokenizer.json");
        QVERIFY(found.ok() && found.value() == PromptTemplate::ChatMl);

        write("tokenizer_config.json",
            R"({"chat_template": [{"name": "tool_use", "template": "<|im_start|><|im_end|>"},
                                    {"name": "default", "template": "[INST] x [/INST]"}]})");
        found = modelChatTemplate(folder);
        QVERIFY(found.ok() && found.value() == PromptTemplate::Mistral);

        write("tokenizer_config.json", R"({"bos_token": "<s>"})");
        write("chat_template.jinja", "<|start_header_id|>{{ r }}<|end_header_id|><|eot_id|>");
        found = modelChatTemplate(folder);
        QVERIFY(found.ok() && found.value() == PromptTemplate::Llama3);

        write("tokenizer_config.json", "{broken");
        found = modelChatTemplate(folder);
        QVERIFY(!found.ok());
        QVERIFY(QString::fromStdString(found.error().message).contains("tokenizer_config.json"));

        found = modelChatTemplate(modelDir());
        QVERIFY(found.ok() && !found.value()); // stories260K has no chat template
    }

    // Review M1: a tokenizer_config.json nested 200,000 deep is refused with
    // the file and the limit (before, it was read as having no template).
    void modelTemplateTooDeep_data()
    {
        QTest::addColumn<QByteArray>("config");
        QTest::addRow("an array") << QByteArray::fromStdString(tb::test::deepJsonArray());
        QTest::addRow("an object") << QByteArray::fromStdString(tb::test::deepJsonObject());
        QTest::addRow("chat_template")
            << QByteArray::fromStdString("{\"chat_template\": " + tb::test::deepJsonArray() + "}");
    }
    void modelTemplateTooDeep()
    {
        QFETCH(QByteArray, config);
        QTemporaryDir dir;
        const std::string path = dir.filePath("tokenizer_config.json").toStdString();
        QVERIFY(tb::common::writeFileAtomic(path, config.toStdString()).ok());
        const auto found = modelChatTemplate(dir.path().toStdString());
        QVERIFY(!found.ok());
        const QString message = QString::fromStdString(found.error().message);
        QVERIFY2(message.startsWith(QString::fromStdString(path) + ": "), qPrintable(message));
        QVERIFY2(message.contains("nested deeper than 64 levels"), qPrintable(message));
    }

    void resolve_data()
    {
        QTest::addColumn<int>("requested");
        QTest::addColumn<int>("format");
        QTest::addColumn<bool>("modelTemplate");
        QTest::addColumn<int>("expected"); // -1: an error
        const int error = -1;
        QTest::addRow("auto, instruction, no model template")
            << int(PromptTemplate::Auto) << int(DataFormat::Alpaca) << false
            << int(PromptTemplate::Alpaca);
        QTest::addRow("auto, csv, a model template")
            << int(PromptTemplate::Auto) << int(DataFormat::Csv) << true
            << int(PromptTemplate::Model);
        QTest::addRow("auto, chat, a model template")
            << int(PromptTemplate::Auto) << int(DataFormat::Chat) << true
            << int(PromptTemplate::Model);
        QTest::addRow("auto, chat, no model template")
            << int(PromptTemplate::Auto) << int(DataFormat::Chat) << false << error;
        QTest::addRow("model without a template")
            << int(PromptTemplate::Model) << int(DataFormat::Chat) << false << error;
        QTest::addRow("explicit wins") << int(PromptTemplate::Mistral) << int(DataFormat::Alpaca)
                                       << true << int(PromptTemplate::Mistral);
        QTest::addRow("alpaca on chat")
            << int(PromptTemplate::Alpaca) << int(DataFormat::Chat) << false << error;
        QTest::addRow("text ignores templates")
            << int(PromptTemplate::Auto) << int(DataFormat::Text) << true
            << int(PromptTemplate::None);
    }
    void resolve()
    {
        QFETCH(int, requested);
        QFETCH(int, format);
        QFETCH(bool, modelTemplate);
        QFETCH(int, expected);
        const auto resolved =
            resolveTemplate(PromptTemplate(requested), DataFormat(format), modelTemplate);
        QCOMPARE(resolved.ok(), expected >= 0);
        if (resolved.ok())
            QCOMPARE(int(resolved.value()), expected);
        else
            QVERIFY(!resolved.error().hint.empty());
    }

    // Loss only on responses, checked with the real stories260K tokenizer:
    // the ids are those of the whole formatted text (+ EOS), and every run of
    // trained tokens decodes to exactly one trained segment.
    void masksPromptTokens_data()
    {
        QTest::addColumn<int>("format");
        QTest::addColumn<QString>("file");
        QTest::addRow("alpaca, demo") << int(PromptTemplate::Alpaca) << "tiny_instructions.jsonl";
        QTest::addRow("none, demo") << int(PromptTemplate::None) << "tiny_instructions.jsonl";
        QTest::addRow("chatml, demo chats") << int(PromptTemplate::ChatMl) << "tiny_chat.jsonl";
        QTest::addRow("mistral, demo chats") << int(PromptTemplate::Mistral) << "tiny_chat.jsonl";
        QTest::addRow("llama3, demo chats") << int(PromptTemplate::Llama3) << "tiny_chat.jsonl";
    }
    void masksPromptTokens()
    {
        QFETCH(int, format);
        QFETCH(QString, file);
        ReaderOptions options;
        options.format = file.contains("chat") ? DataFormat::Chat : DataFormat::Alpaca;
        ReadReport report;
        const auto records = readRecords(
            tb::test::sourcePath("resources/demo/") + file.toStdString(), options, report);
        QVERIFY(records.ok());
        const Tokenizer& tokenizer = *m_tokenizer;
        for (const Record& record : records.value()) {
            const auto formatted = formatRecord(record, PromptTemplate(format));
            QVERIFY(formatted.ok());
            const FormattedExample& example = formatted.value();
            const auto tokens = tokenizeExample(example, tokenizer);
            QVERIFY(tokens.ok());
            std::vector<TokenId> expectedIds =
                tokenizer.encode(example.text(), example.addSpecialTokens);
            if (example.appendEos)
                expectedIds.push_back(*tokenizer.eosId());
            QCOMPARE(tokens.value().inputIds, expectedIds);

            std::vector<std::string> trainedTexts;
            for (const Segment& segment : example.segments) {
                if (segment.trainable)
                    trainedTexts.push_back(segment.text);
            }
            if (example.appendEos)
                trainedTexts.back() += "</s>";
            const auto runs = trainedRuns(tokens.value());
            QCOMPARE(runs.size(), trainedTexts.size());
            for (size_t i = 0; i < runs.size(); ++i)
                QCOMPARE(tokenizer.decode(runs[i]), trainedTexts[i]);
        }
    }

    // A token that spans the end of the prompt and the start of the
    // response belongs to the response; every masked token lies wholly in
    // the prompt text.
    void boundaryTokenCountsAsResponse()
    {
        const Tokenizer& tokenizer = *m_tokenizer;
        const std::string prompt = "Once upon a ti";
        const std::string response = "me there was a girl.";
        FormattedExample example{
            {Segment{prompt, false}, Segment{response, true}}, true, false, {}};
        const auto tokens = tokenizeExample(example, tokenizer);
        QVERIFY(tokens.ok());
        std::vector<TokenId> masked;
        std::vector<TokenId> trained;
        for (size_t i = 0; i < tokens.value().size(); ++i)
            (tokens.value().labels[i] == kIgnoreIndex ? masked : trained)
                .push_back(tokens.value().inputIds[i]);
        const std::string maskedText = tokenizer.decode(masked, true);
        const std::string trainedText = tokenizer.decode(trained);
        QVERIFY2(prompt.starts_with(maskedText), maskedText.c_str());
        QVERIFY2(maskedText.size() < prompt.size(), "the boundary token must not be masked");
        QCOMPARE(tokenizer.decode(tokens.value().inputIds, true), prompt + response);
        QVERIFY2(trainedText.ends_with(response), trainedText.c_str());
        // All trained tokens come after all masked ones.
        const auto& labels = tokens.value().labels;
        const auto firstTrained = std::find_if(
            labels.begin(), labels.end(), [](int label) { return label != kIgnoreIndex; });
        QVERIFY(std::all_of(
            firstTrained, labels.end(), [](int label) { return label != kIgnoreIndex; }));
    }
};

QTEST_GUILESS_MAIN(TestDataTemplates)
#include "test_data_templates.moc"
