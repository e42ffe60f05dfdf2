// Gemma 3's image-text checkpoints as the trainer reads them: the language
// model's tensors under our names in both stored layouts, the vision tower
// left out, and the config.json of the language model alone.
#include "model/hf_config.h"
#include "model/multimodal_language_model.h"
#include "model/parameter_count.h"

#include <QtTest>

#include <nlohmann/json.hpp>

using namespace tb;

namespace {

// google/gemma-3-4b-it's config.json, its vision_config shortened.
const char* kGemma3_4b = R"({"architectures":["Gemma3ForConditionalGeneration"],
 "eos_token_id":[1,106],"model_type":"gemma3","torch_dtype":"bfloat16",
 "text_config":{"hidden_size":2560,"intermediate_size":10240,"model_type":"gemma3_text",
 "num_hidden_layers":34,"rope_scaling":{"factor":8.0,"rope_type":"linear"},
 "sliding_window":1024},"vision_config":{"model_type":"siglip_vision_model"}})";

const char* kLlama = R"({"model_type":"llama","hidden_size":64,"intermediate_size":128,
 "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":4,"vocab_size":96})";

model::HfConfig parsed(const char* json)
{
    auto config = model::parseHfModelConfig(json, "config.json");
    if (!config.ok())
        qFatal("%s", config.error().message.c_str());
    return std::move(config).value();
}

} // namespace

class TestMultimodalLanguageModel : public QObject {
    Q_OBJECT

private slots:
    void tensorsByOurNames_data()
    {
        QTest::addColumn<QString>("stored");
        QTest::addColumn<QString>("ours"); // empty: left out
        QTest::addRow("as published") << "language_model.model.layers.3.self_attn.q_proj.weight"
                                      << "model.layers.3.self_attn.q_proj.weight";
        QTest::addRow("as transformers 4.52 stored it")
            << "model.language_model.embed_tokens.weight"
            << "model.embed_tokens.weight";
        QTest::addRow("an untied head, as published") << "language_model.lm_head.weight"
                                                      << "lm_head.weight";
        QTest::addRow("a head") << "lm_head.weight"
                                << "lm_head.weight";
        QTest::addRow("the tower, as published")
            << "vision_tower.vision_model.encoder.layers.0.self_attn.q_proj.weight"
            << "";
        QTest::addRow("the tower, nested")
            << "model.vision_tower.vision_model.post_layernorm.weight"
            << "";
        QTest::addRow("the projector") << "multi_modal_projector.mm_input_projection_weight"
                                       << "";
        QTest::addRow("something else keeps its name, for the loader to refuse")
            << "audio_tower.conv.weight"
            << "audio_tower.conv.weight";
    }
    void tensorsByOurNames()
    {
        QFETCH(QString, stored);
        QFETCH(QString, ours);
        const model::HfConfig config = parsed(kGemma3_4b);
        QVERIFY(config.isGemma3Multimodal());
        QCOMPARE(model::decoderModulePrefix(config), std::string("model.language_model."));
        const std::optional<std::string> name =
            model::languageModelTensorName(config, stored.toStdString());
        QCOMPARE(QString::fromStdString(name.value_or("")), ours);
    }

    // Our decoder's module names as peft names them in each model.
    void decoderModulesByTheirNames()
    {
        QCOMPARE(model::decoderModuleName(parsed(kGemma3_4b), "model.layers.1.mlp.up_proj"),
            std::string("model.language_model.layers.1.mlp.up_proj"));
        QCOMPARE(model::decoderModuleName(parsed(kLlama), "model.layers.1.mlp.up_proj"),
            std::string("model.layers.1.mlp.up_proj"));
        QCOMPARE(model::decoderModuleName(parsed(kGemma3_4b), "lm_head"), std::string("lm_head"));
    }

    // A causal LM's names are ours already.
    void aCausalLmKeepsItsNames()
    {
        const model::HfConfig config = parsed(kLlama);
        QVERIFY(!config.isGemma3Multimodal());
        QCOMPARE(model::decoderModulePrefix(config), std::string("model."));
        QCOMPARE(model::languageModelTensorName(config, "vision_tower.x").value_or(""),
            std::string("vision_tower.x"));
    }

    // The export's config.json: Gemma3ForCausalLM's, the same language
    // model (its parameter count), the tie, dtype and tokens carried over.
    void theLanguageModelsConfig()
    {
        const auto text = model::languageModelConfigJson(kGemma3_4b, "config.json");
        QVERIFY2(text.ok(), text.ok() ? "" : text.error().message.c_str());
        const nlohmann::json json = nlohmann::json::parse(*text);
        QCOMPARE(
            json.at("architectures").at(0).get<std::string>(), std::string("Gemma3ForCausalLM"));
        QCOMPARE(json.at("model_type").get<std::string>(), std::string("gemma3_text"));
        QCOMPARE(json.at("torch_dtype").get<std::string>(), std::string("bfloat16"));
        QCOMPARE(json.at("eos_token_id").dump(), std::string("[1,106]"));
        QVERIFY(!json.contains("tie_word_embeddings") || json.at("tie_word_embeddings") == true);
        const model::HfConfig alone = parsed(text->c_str());
        QVERIFY(!alone.fromTextConfig);
        QCOMPARE(
            model::countParameters(alone).total, model::countParameters(parsed(kGemma3_4b)).total);
    }

    void aConfigWithoutTextConfigIsRefused()
    {
        const auto text = model::languageModelConfigJson(kLlama, "base/config.json");
        QVERIFY(!text.ok());
        QCOMPARE(QString::fromStdString(text.error().message),
            QString("base/config.json: field 'text_config': absent, expected an object"));
    }
};

QTEST_GUILESS_MAIN(TestMultimodalLanguageModel)
#include "test_multimodal_language_model.moc"
