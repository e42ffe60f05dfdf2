#include "../support/chat_template_folder.h"
#include "common/atomic_file.h"
#include "config/run_config.h"
#include "data/model_chat_template.h"
#include "data/prepare_data.h"
#include "tokenizer/tokenizer.h"
#include "trained_texts.h"

#include <QTemporaryDir>
#include <QTest>

// Records through the chat templates models are published with
// (tests/data/chat_templates; their text is held against transformers by
// tests/reference/test_chat_templates): what each answer's trained text is,
// what a template refuses, and the whole pipeline on a model folder whose
// tokenizer_config.json carries one.
using namespace tb::data;
using tb::config::PromptTemplate;
using tb::test::trainedTexts;

namespace {

std::string publishedTemplate(const QString& name)
{
    return tb::test::publishedChatTemplate(name.toStdString());
}

Record chat(std::vector<ChatMessage> messages)
{
    Record record;
    record.kind = RecordKind::Chat;
    record.messages = std::move(messages);
    record.source = {"chats.jsonl", 3, std::nullopt};
    return record;
}

const std::vector<ChatMessage> kTwoTurns{{"user", "Name a fruit."}, {"assistant", "Apple."},
    {"user", "Another?"}, {"assistant", "Pear."}};

} // namespace

class TestDataModelTemplate : public QObject {
    Q_OBJECT

private slots:
    // What each published template makes of two turns: the answers with
    // the markers that end them are trained, and nothing else; the texts
    // together are the template's whole text.
    void answersAreTrained_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QStringList>("trained");
        QTest::addRow("Qwen2.5") << "Qwen-Qwen2.5-7B-Instruct.jinja"
                                 << QStringList{"Apple.<|im_end|>\n", "Pear.<|im_end|>\n"};
        QTest::addRow("Qwen3: reasoning block on the last answer only")
            << "Qwen-Qwen3-0.6B.jinja"
            << QStringList{"Apple.<|im_end|>\n", "<think>\n\n</think>\n\nPear.<|im_end|>\n"};
        QTest::addRow("Llama 3.3") << "meta-llama-Llama-3.3-70B-Instruct.jinja"
                                   << QStringList{"Apple.<|eot_id|>", "Pear.<|eot_id|>"};
        QTest::addRow("Gemma 2") << "google-gemma-2-2b-it.jinja"
                                 << QStringList{"Apple.<end_of_turn>\n", "Pear.<end_of_turn>\n"};
        QTest::addRow("Gemma 3") << "google-gemma-3-4b-it.jinja"
                                 << QStringList{"Apple.<end_of_turn>\n", "Pear.<end_of_turn>\n"};
        QTest::addRow("Phi-3.5: the closing EOS on the last answer")
            << "microsoft-Phi-3.5-mini-instruct.jinja"
            << QStringList{"Apple.<|end|>\n", "Pear.<|end|>\n</s>"};
        QTest::addRow("Mistral NeMo") << "mistralai-Mistral-Nemo-Instruct-2407.jinja"
                                      << QStringList{"Apple.</s>", "Pear.</s>"};
    }
    void answersAreTrained()
    {
        QFETCH(QString, file);
        QFETCH(QStringList, trained);
        auto model = ModelChatTemplate::parse(publishedTemplate(file), "tokenizer_config.json",
            std::string("<s>"), std::string("</s>"));
        QVERIFY2(model.ok(), model.ok() ? "" : model.error().message.c_str());
        const auto formatted = model.value().format(chat(kTwoTurns));
        QVERIFY2(formatted.ok(), formatted.ok() ? "" : formatted.error().message.c_str());
        QCOMPARE(trainedTexts(formatted.value()), trained);
        QVERIFY(!formatted.value().addSpecialTokens);
        QVERIFY(!formatted.value().appendEos);
        QCOMPARE(formatted.value().source.line, std::size_t(3));
    }

    // An instruction record is a system, user and assistant turn; Qwen2.5
    // writes its own system prompt when the record has none.
    void instructionRecordsAreConversations()
    {
        auto model = ModelChatTemplate::parse(
            publishedTemplate("Qwen-Qwen2.5-7B-Instruct.jinja"), "tokenizer_config.json", {}, {});
        QVERIFY(model.ok());
        Record record;
        record.kind = RecordKind::Instruction;
        record.instruction = "Name a fruit.";
        record.response = "Apple.";
        const auto formatted = model.value().format(record);
        QVERIFY(formatted.ok());
        QCOMPARE(QString::fromStdString(formatted.value().text()),
            QString("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
                    "assistant.<|im_end|>\n<|im_start|>user\nName a fruit.<|im_end|>\n<|im_start|>"
                    "assistant\nApple.<|im_end|>\n"));
        QCOMPARE(trainedTexts(formatted.value()), QStringList{"Apple.<|im_end|>\n"});
    }

    void refusals_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("message");
        QTest::addRow("Gemma 2 has no system role")
            << "google-gemma-2-2b-it.jinja"
            << "tokenizer_config.json: chat_template: the template raised: System role not "
               "supported";
        QTest::addRow("Mistral NeMo moves the system text to the last user turn")
            << "mistralai-Mistral-Nemo-Instruct-2407.jinja"
            << "tokenizer_config.json: chat_template writes the turns before message 2 "
               "differently once later turns follow";
    }
    void refusals()
    {
        QFETCH(QString, file);
        QFETCH(QString, message);
        auto model = ModelChatTemplate::parse(publishedTemplate(file), "tokenizer_config.json",
            std::string("<s>"), std::string("</s>"));
        QVERIFY(model.ok());
        std::vector<ChatMessage> messages = kTwoTurns;
        messages.insert(messages.begin(), {"system", "Be brief."});
        const auto formatted = model.value().format(chat(messages));
        QVERIFY(!formatted.ok());
        QVERIFY2(QString::fromStdString(formatted.error().message).startsWith(message),
            formatted.error().message.c_str());
    }

    // A template that marks the assistant's text itself: exactly that.
    void generationBlocksAreTheAnswer()
    {
        auto model = ModelChatTemplate::parse(
            "{% for m in messages %}<{{ m.role }}>{% if m.role == 'assistant' %}{% generation "
            "%}{{ m.content }}{% endgeneration %}</a>{% else %}{{ m.content }}{% endif %}{% endfor "
            "%}",
            "chat_template.jinja", {}, {});
        QVERIFY(model.ok());
        const auto formatted = model.value().format(chat(kTwoTurns));
        QVERIFY(formatted.ok());
        QCOMPARE(trainedTexts(formatted.value()), (QStringList{"Apple.", "Pear."}));
    }

    void aTemplateThatDoesNotParse()
    {
        const auto model =
            ModelChatTemplate::parse("{% for m in messages %}", "tokenizer_config.json", {}, {});
        QVERIFY(!model.ok());
        QVERIFY2(QString::fromStdString(model.error().message)
                     .startsWith("tokenizer_config.json: chat_template: line 1, column 1: "),
            model.error().message.c_str());
        QVERIFY(QString::fromStdString(model.error().hint).contains("llama3, chatml"));
    }

    // The pipeline: a model folder whose tokenizer_config.json carries
    // Qwen2.5's template, the demo chats, data.template auto: the model's
    // own template, and every trained token decodes to an answer's text.
    void prepareUsesTheModelsOwnTemplate()
    {
        QTemporaryDir dir;
        const std::string folder = tb::test::demoTokenizerWithTemplate(
            dir.filePath("tokenizer").toStdString(), "Qwen-Qwen2.5-7B-Instruct.jinja");
        QVERIFY(!folder.empty());
        const auto tokenizer = tb::tokenizer::Tokenizer::load(folder);
        QVERIFY(tokenizer.ok());
        tb::config::RunConfig run;
        run.tokenizer = folder;
        run.data.trainFiles = {tb::test::sourcePath("resources/demo/tiny_chat.jsonl")};
        run.data.format = tb::config::DataFormat::Chat;
        run.data.packing = false;
        run.data.sequenceLength = 512;
        const auto prepared = prepareData(run, tokenizer.value());
        QVERIFY2(prepared.ok(), prepared.ok() ? "" : prepared.error().toString().c_str());
        QVERIFY(prepared.value().stats.promptTemplate == PromptTemplate::Model);
        QCOMPARE(prepared.value().stats.records.malformedCount(), std::size_t(0));
        const TokenizedExample& first = prepared.value().train.front();
        std::vector<tb::tokenizer::TokenId> trained;
        for (std::size_t i = 0; i < first.labels.size(); ++i)
            if (first.labels[i] != kIgnoreIndex)
                trained.push_back(first.labels[i]);
        const QString answers = QString::fromStdString(tokenizer.value().decode(trained));
        QVERIFY2(answers.contains("<|im_end|>") && !answers.contains("user"), qPrintable(answers));
    }
};

QTEST_APPLESS_MAIN(TestDataModelTemplate)
#include "test_data_model_template.moc"
