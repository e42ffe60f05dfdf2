#include "../support/qt_test_paths.h"
#include "common/atomic_file.h"
#include "model/hf_config.h"
#include "model/parameter_count.h"

#include <QtTest>

using namespace tb;

class TestHfConfig : public QObject {
    Q_OBJECT

private slots:
    // Configs as their authors publish them (the fields that matter), with
    // the published totals.
    void publishedConfigs_data()
    {
        QTest::addColumn<QString>("json");
        QTest::addColumn<qint64>("expected");
        QTest::addRow("llama-3-8b")
            << R"({"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":4096,"intermediate_size":14336,
                 "num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"vocab_size":128256,
                 "tie_word_embeddings":false,"attention_bias":false,"mlp_bias":false,"rope_theta":500000.0,"head_dim":null})"
            << qint64(8'030'261'248);
        QTest::addRow("mistral-7b")
            << R"({"model_type":"mistral","hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,
                 "num_attention_heads":32,"num_key_value_heads":8,"vocab_size":32000,"tie_word_embeddings":false,
                 "sliding_window":4096})"
            << qint64(7'241'732'096);
        QTest::addRow("qwen2.5-7b (qkv bias implied)")
            << R"({"model_type":"qwen2","hidden_size":3584,"intermediate_size":18944,"num_hidden_layers":28,
                 "num_attention_heads":28,"num_key_value_heads":4,"vocab_size":152064,"tie_word_embeddings":false})"
            << qint64(7'615'616'512);
        QTest::addRow("qwen3-8b (q/k norms)")
            << R"({"model_type":"qwen3","hidden_size":4096,"intermediate_size":12288,"num_hidden_layers":36,
                 "num_attention_heads":32,"num_key_value_heads":8,"head_dim":128,"vocab_size":151936,
                 "tie_word_embeddings":false,"attention_bias":false})"
            << qint64(8'190'735'360);
        QTest::addRow("gemma-2-2b (4 norms, tied by default)")
            << R"({"model_type":"gemma2","hidden_size":2304,"intermediate_size":9216,"num_hidden_layers":26,
                 "num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,"vocab_size":256000})"
            << qint64(2'614'341'888);
        QTest::addRow("phi-3-mini (fused)")
            << R"({"model_type":"phi3","hidden_size":3072,"intermediate_size":8192,"num_hidden_layers":32,
                 "num_attention_heads":32,"num_key_value_heads":32,"vocab_size":32064,"tie_word_embeddings":false})"
            << qint64(3'821'079'552);
        QTest::addRow("mixtral-8x7b (8 experts)")
            << R"({"architectures":["MixtralForCausalLM"],"model_type":"mixtral","hidden_size":4096,
                 "intermediate_size":14336,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,
                 "num_local_experts":8,"num_experts_per_tok":2,"vocab_size":32000,"tie_word_embeddings":false,
                 "router_aux_loss_coef":0.02,"sliding_window":null})"
            << qint64(46'702'792'704);
        QTest::addRow("qwen3-30b-a3b (128 experts)")
            << R"({"architectures":["Qwen3MoeForCausalLM"],"model_type":"qwen3_moe","hidden_size":2048,
                 "intermediate_size":6144,"moe_intermediate_size":768,"num_hidden_layers":48,"num_attention_heads":32,
                 "num_key_value_heads":4,"head_dim":128,"num_experts":128,"num_experts_per_tok":8,
                 "norm_topk_prob":true,"decoder_sparse_step":1,"mlp_only_layers":[],"vocab_size":151936,
                 "tie_word_embeddings":false,"attention_bias":false})"
            << qint64(30'532'122'624);
        // openai/gpt-oss-20b's config.json, its fields that count: biases on
        // every projection by attention_bias's gpt_oss default, the experts'
        // and the router's biases, a sink per head (transformers 5.23's
        // GptOssForCausalLM holds 20,914,757,184: test_gpt_oss_count).
        QTest::addRow("gpt-oss-20b (32 experts, sinks, biases)")
            << R"({"architectures":["GptOssForCausalLM"],"model_type":"gpt_oss","hidden_size":2880,
                 "intermediate_size":2880,"num_hidden_layers":24,"num_attention_heads":64,
                 "num_key_value_heads":8,"head_dim":64,"num_local_experts":32,"num_experts_per_tok":4,
                 "experts_per_token":4,"vocab_size":201088,"tie_word_embeddings":false,
                 "sliding_window":128,"rope_theta":150000,"router_aux_loss_coef":0.9,
                 "rope_scaling":{"beta_fast":32.0,"beta_slow":1.0,"factor":32.0,
                 "original_max_position_embeddings":4096,"rope_type":"yarn","truncate":false},
                 "quantization_config":{"modules_to_not_convert":["model.layers.*.self_attn",
                 "model.layers.*.mlp.router","model.embed_tokens","lm_head"],"quant_method":"mxfp4"}})"
            << qint64(20'914'757'184);
        QTest::addRow("smollm2-135m (tied)")
            << R"({"model_type":"llama","hidden_size":576,"intermediate_size":1536,"num_hidden_layers":30,
                 "num_attention_heads":9,"num_key_value_heads":3,"vocab_size":49152,"tie_word_embeddings":true})"
            << qint64(134'515'008);
        QTest::addRow("multimodal text_config")
            << R"({"model_type":"llava","text_config":{"model_type":"llama","hidden_size":576,"intermediate_size":1536,
                 "num_hidden_layers":30,"num_attention_heads":9,"num_key_value_heads":3,"vocab_size":49152,
                 "tie_word_embeddings":true},"vision_config":{"hidden_size":1024}})"
            << qint64(134'515'008);
    }
    void publishedConfigs()
    {
        QFETCH(QString, json);
        QFETCH(qint64, expected);
        const auto spec = model::parseHfConfig(json.toStdString(), "config.json");
        QVERIFY2(spec.ok(), spec.ok() ? "" : spec.error().message.c_str());
        QCOMPARE(model::countParameters(*spec).total, expected);
    }

    // A field the file leaves out takes the default of its model_type's
    // configuration class in transformers 5.23, not PretrainedConfig's.
    void architectureDefaults_data()
    {
        QTest::addColumn<QString>("type");
        QTest::addColumn<bool>("tied");
        QTest::addColumn<qint64>("maxPositions");
        QTest::addColumn<qint64>("kvHeads");
        QTest::addColumn<qint64>("headDim");
        QTest::addColumn<double>("eps");
        QTest::addColumn<double>("theta");
        QTest::addColumn<qint64>("window");
        QTest::addRow("llama") << "llama" << false << qint64(2048) << qint64(32) << qint64(64)
                               << 1e-6 << 10000.0 << qint64(0);
        QTest::addRow("mistral") << "mistral" << false << qint64(131072) << qint64(8) << qint64(64)
                                 << 1e-6 << 10000.0 << qint64(4096);
        QTest::addRow("qwen2") << "qwen2" << false << qint64(32768) << qint64(32) << qint64(64)
                               << 1e-6 << 10000.0 << qint64(0);
        QTest::addRow("qwen3") << "qwen3" << false << qint64(32768) << qint64(32) << qint64(128)
                               << 1e-6 << 10000.0 << qint64(0);
        QTest::addRow("phi3") << "phi3" << false << qint64(4096) << qint64(32) << qint64(64) << 1e-5
                              << 10000.0 << qint64(0);
        QTest::addRow("gemma") << "gemma" << true << qint64(8192) << qint64(16) << qint64(256)
                               << 1e-6 << 10000.0 << qint64(0);
        QTest::addRow("gemma2") << "gemma2" << true << qint64(8192) << qint64(4) << qint64(256)
                                << 1e-6 << 10000.0 << qint64(4096);
        QTest::addRow("gemma3_text") << "gemma3_text" << true << qint64(131072) << qint64(4)
                                     << qint64(256) << 1e-6 << 1000000.0 << qint64(4096);
        QTest::addRow("unknown type reads as llama")
            << "granite" << false << qint64(2048) << qint64(32) << qint64(64) << 1e-6 << 10000.0
            << qint64(0);
    }
    void architectureDefaults()
    {
        QFETCH(QString, type);
        QFETCH(bool, tied);
        QFETCH(qint64, maxPositions);
        QFETCH(qint64, kvHeads);
        QFETCH(qint64, headDim);
        QFETCH(double, eps);
        QFETCH(double, theta);
        QFETCH(qint64, window);
        const QString json =
            QStringLiteral(R"({"model_type":"%1","hidden_size":2048,"intermediate_size":4096,
                "num_hidden_layers":2,"num_attention_heads":32,"vocab_size":1000})")
                .arg(type);
        const auto config = model::parseHfModelConfig(json.toStdString(), "config.json");
        QVERIFY2(config.ok(), config.ok() ? "" : config.error().message.c_str());
        QCOMPARE(config->tieWordEmbeddings, tied);
        QCOMPARE(config->maxPositionEmbeddings, maxPositions);
        QCOMPARE(config->numKvHeads, kvHeads);
        QCOMPARE(config->headDim, headDim);
        QCOMPARE(config->rmsNormEps, eps);
        QCOMPARE(config->ropeTheta, theta);
        QCOMPARE(config->slidingWindow.value_or(0), window);
    }

    void gemmaScalingAndLayerKinds_data()
    {
        QTest::addColumn<QString>("fields");
        QTest::addColumn<double>("scalar");
        QTest::addColumn<double>("attnCap");
        QTest::addColumn<double>("finalCap");
        QTest::addColumn<QString>("windowed"); // one character per layer: w windowed, - not
        // transformers 5.23's Gemma2Config and Gemma3TextConfig defaults.
        QTest::addRow("gemma2 defaults")
            << R"("model_type":"gemma2")" << 256.0 << 50.0 << 30.0 << "w-w-w-w-";
        QTest::addRow("gemma2, caps null")
            << R"("model_type":"gemma2","attn_logit_softcapping":null,
            "final_logit_softcapping":null,"query_pre_attn_scalar":144)"
            << 144.0 << 0.0 << 0.0 << "w-w-w-w-";
        QTest::addRow("gemma2, no window")
            << R"("model_type":"gemma2","sliding_window":null)" << 256.0 << 50.0 << 30.0 << "";
        QTest::addRow("gemma3_text: five local, one global")
            << R"("model_type":"gemma3_text")" << 256.0 << 0.0 << 0.0 << "wwwww-ww";
        QTest::addRow("layer_types as written")
            << R"("model_type":"gemma2","layer_types":["full_attention","full_attention",
                "sliding_attention","full_attention","full_attention","full_attention",
                "full_attention","sliding_attention"])"
            << 256.0 << 50.0 << 30.0 << "--w----w";
        QTest::addRow("mistral: every layer")
            << R"("model_type":"mistral")" << 0.0 << 0.0 << 0.0 << "wwwwwwww";
        QTest::addRow("llama: no Gemma scaling")
            << R"("model_type":"llama")" << 0.0 << 0.0 << 0.0 << "";
    }
    void gemmaScalingAndLayerKinds()
    {
        QFETCH(QString, fields);
        QFETCH(double, scalar);
        QFETCH(double, attnCap);
        QFETCH(double, finalCap);
        QFETCH(QString, windowed);
        const QString json = QStringLiteral(R"({%1,"hidden_size":256,"intermediate_size":512,
                "num_hidden_layers":8,"num_attention_heads":8,"vocab_size":1000})")
                                 .arg(fields);
        const auto config = model::parseHfModelConfig(json.toStdString(), "config.json");
        QVERIFY2(config.ok(), config.ok() ? "" : config.error().message.c_str());
        QCOMPARE(config->gemmaScaling, config->modelType.starts_with("gemma"));
        QCOMPARE(config->queryPreAttnScalar, scalar);
        QCOMPARE(config->attnLogitSoftcap, attnCap);
        QCOMPARE(config->finalLogitSoftcap, finalCap);
        QString layers;
        for (std::int64_t i = 0; i < config->numLayers && config->slidingWindow; ++i)
            layers += config->layerIsWindowed(i) ? 'w' : '-';
        QCOMPARE(layers, windowed);
    }

    void ropePerLayerType_data()
    {
        QTest::addColumn<QString>("rope");
        QTest::addColumn<double>("globalTheta");
        QTest::addColumn<double>("globalFactor");
        QTest::addColumn<double>("localTheta");
        // Gemma 3 4B's file as transformers 4.50 wrote it, and as 5.x writes it.
        QTest::addRow("rope_theta, rope_local_base_freq, rope_scaling")
            << R"("rope_theta":1000000.0,"rope_local_base_freq":10000.0,
                "rope_scaling":{"rope_type":"linear","factor":8.0})"
            << 1e6 << 8.0 << 1e4;
        QTest::addRow("rope_parameters per layer type")
            << R"("rope_parameters":{"full_attention":{"rope_type":"linear","factor":8.0,
                "rope_theta":1000000.0},"sliding_attention":{"rope_type":"default",
                "rope_theta":20000.0}})"
            << 1e6 << 8.0 << 2e4;
        QTest::addRow("nothing: the class defaults") << "" << 1e6 << 1.0 << 1e4;
    }
    void ropePerLayerType()
    {
        QFETCH(QString, rope);
        QFETCH(double, globalTheta);
        QFETCH(double, globalFactor);
        QFETCH(double, localTheta);
        const QString json = QStringLiteral(R"({"model_type":"gemma3_text","hidden_size":256,
                "intermediate_size":512,"num_hidden_layers":6,"num_attention_heads":4,
                "vocab_size":1000%1})")
                                 .arg(rope.isEmpty() ? QString() : "," + rope);
        const auto config = model::parseHfModelConfig(json.toStdString(), "config.json");
        QVERIFY2(config.ok(), config.ok() ? "" : config.error().message.c_str());
        QCOMPARE(config->ropeTheta, globalTheta);
        QCOMPARE(config->ropeScaling.factor, globalFactor);
        QCOMPARE(config->slidingRopeTheta.value_or(0), localTheta);
        QCOMPARE(config->slidingRopeScaling.type, model::RopeScalingType::None);
    }

    // What the trainer routes by: the experts, top-k, renormalisation and the
    // balancing loss, each from the file or the class default.
    void expertRouting_data()
    {
        QTest::addColumn<QString>("json");
        QTest::addColumn<qint64>("experts");
        QTest::addColumn<qint64>("topK");
        QTest::addColumn<qint64>("expertWidth");
        QTest::addColumn<bool>("normTopk");
        QTest::addColumn<double>("auxCoef");
        QTest::addColumn<bool>("auxLoss");
        const QString shape =
            R"("hidden_size":64,"intermediate_size":96,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100)";
        QTest::addRow("mixtral defaults")
            << "{\"model_type\":\"mixtral\",\"num_key_value_heads\":2," + shape + "}" << qint64(8)
            << qint64(2) << qint64(96) << true << 0.001 << false;
        QTest::addRow("qwen3_moe defaults")
            << "{\"model_type\":\"qwen3_moe\"," + shape + "}" << qint64(128) << qint64(8)
            << qint64(768) << false << 0.001 << false;
        QTest::addRow("qwen3_moe as transformers 5 saves it")
            << "{\"model_type\":\"qwen3_moe\"," + shape
                + R"(,"num_local_experts":4,"num_experts_per_tok":2,"moe_intermediate_size":16,"norm_topk_prob":true,"output_router_logits":true,"router_aux_loss_coef":0.01})"
            << qint64(4) << qint64(2) << qint64(16) << true << 0.01 << true;
        QTest::addRow("gpt_oss defaults")
            << "{\"model_type\":\"gpt_oss\",\"num_key_value_heads\":2," + shape + "}" << qint64(128)
            << qint64(4) << qint64(96) << true << 0.001 << false;
        QTest::addRow("gpt_oss top-k as OpenAI names it")
            << "{\"model_type\":\"gpt_oss\",\"num_key_value_heads\":2," + shape
                + R"(,"num_local_experts":8,"experts_per_token":3,"router_aux_loss_coef":0.9})"
            << qint64(8) << qint64(3) << qint64(96) << true << 0.9 << false;
        QTest::addRow("dense") << "{\"model_type\":\"llama\"," + shape + "}" << qint64(0)
                               << qint64(0) << qint64(0) << false << 0.001 << false;
    }
    void expertRouting()
    {
        QFETCH(QString, json);
        const auto config = model::parseHfModelConfig(json.toStdString(), "config.json");
        QVERIFY2(config.ok(), config.ok() ? "" : config.error().message.c_str());
        QFETCH(qint64, experts);
        QFETCH(qint64, topK);
        QFETCH(qint64, expertWidth);
        QFETCH(bool, normTopk);
        QFETCH(double, auxCoef);
        QFETCH(bool, auxLoss);
        QCOMPARE(config->experts, experts);
        QCOMPARE(config->expertsPerToken, topK);
        QCOMPARE(config->expertIntermediateSize, expertWidth);
        QCOMPARE(config->normTopkProb, normTopk);
        QCOMPARE(config->routerAuxLossCoef, auxCoef);
        QCOMPARE(config->outputRouterLogits, auxLoss);
    }

    void layerTypesNeedOnePerLayer()
    {
        const auto config = model::parseHfModelConfig(
            R"({"model_type":"gemma2","hidden_size":256,"intermediate_size":512,
                "num_hidden_layers":3,"num_attention_heads":4,"vocab_size":1000,
                "layer_types":["full_attention","sliding_attention"]})",
            "gemma/config.json");
        QVERIFY(!config.ok());
        QCOMPARE(QString::fromStdString(config.error().message),
            "gemma/config.json: field 'layer_types': got 2 entries, expected one per layer (3)");
    }

    void attentionBiasCountsEveryProjection()
    {
        const auto plain = model::parseHfConfig(
            R"({"model_type":"llama","hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,
                "num_attention_heads":4,"vocab_size":100})",
            "a");
        const auto biased = model::parseHfConfig(
            R"({"model_type":"llama","hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,
                "num_attention_heads":4,"vocab_size":100,"attention_bias":true,"mlp_bias":true})",
            "b");
        QVERIFY(plain.ok() && biased.ok());
        // q, k, v, o biases (4 x 64) and gate, up, down biases (128 + 128 + 64), per layer.
        QCOMPARE(model::countParameters(*biased).total - model::countParameters(*plain).total,
            qint64(2 * (4 * 64 + 128 + 128 + 64)));
    }

    void unknownTypeWarns()
    {
        const auto spec = model::parseHfConfig(
            R"({"model_type":"granite","hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,
                "num_attention_heads":4,"vocab_size":100})",
            "c");
        QVERIFY(spec.ok());
        QVERIFY(!spec->warnings.empty());
        QVERIFY(QString::fromStdString(spec->warnings[0]).contains("granite"));
    }

    void demoModel()
    {
        const QString dir = tb::test::qDemoModelDir();
        // The folder and the file itself both work; 260,032 is the published count (SOURCES.md).
        for (const QString& path : {dir, dir + "/config.json"}) {
            const auto spec = model::readHfConfig(path.toStdString());
            QVERIFY2(spec.ok(), spec.ok() ? "" : spec.error().message.c_str());
            QCOMPARE(model::countParameters(*spec).total, qint64(260'032));
            QCOMPARE(spec->name, std::string("stories260K"));
        }
    }

    void errors_data()
    {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("expected");
        const QString ok =
            R"("hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100)";
        QTest::addRow("not json") << "{\"hidden_size\": 64,"
                                  << "not valid JSON";
        QTest::addRow("number overflow") << "{\"hidden_size\": 1e999999}"
                                         << "not valid JSON";
        QTest::addRow("nested 100,000 deep")
            << "{\"x\":" + QString(100000, '[') + QString(100000, ']') + "}"
            << "nested deeper than 64 levels";
        // Refused by its size before nlohmann builds a tree 10 to 20 times it.
        QTest::addRow("over 64 MiB") << "{\"x\":\"" + QString(64 << 20, 'a') + "\"}"
                                     << "bytes, more than the limit of 67108864";
        QTest::addRow("array") << "[1,2]"
                               << "expected a JSON object";
        QTest::addRow("missing hidden")
            << R"({"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100})"
            << "field 'hidden_size': missing";
        QTest::addRow("string") << "{"
                + QString(ok).replace("\"hidden_size\":64", "\"hidden_size\":\"64\"") + "}"
                                << "field 'hidden_size': got \"64\", expected a positive integer";
        QTest::addRow("float") << "{"
                + QString(ok).replace("\"vocab_size\":100", "\"vocab_size\":100.5") + "}"
                               << "field 'vocab_size': got 100.5";
        QTest::addRow("negative") << "{"
                + QString(ok).replace("\"num_hidden_layers\":2", "\"num_hidden_layers\":-2") + "}"
                                  << "field 'num_hidden_layers': got -2";
        QTest::addRow("huge") << "{"
                + QString(ok).replace("\"hidden_size\":64", "\"hidden_size\":18446744073709551615")
                + "}"
                              << "field 'hidden_size'";
        QTest::addRow("too large")
            << "{" + QString(ok).replace("\"vocab_size\":100", "\"vocab_size\":999999999999") + "}"
            << "vocab_size: got 999999999999, expected at most";
        QTest::addRow("heads do not divide")
            << "{" + QString(ok).replace("\"num_attention_heads\":4", "\"num_attention_heads\":5")
                + "}"
            << "does not divide hidden_size";
        QTest::addRow("kv heads") << "{" + ok + ",\"num_key_value_heads\":3}"
                                  << "field 'num_key_value_heads': got 3, expected a divisor";
        QTest::addRow("moe of another family")
            << "{" + ok + ",\"num_local_experts\":8}"
            << "field 'num_local_experts': got 8: mixture-of-experts model_type 'llama' is not "
               "supported";
        QTest::addRow("deepseek experts")
            << "{\"model_type\":\"deepseek_v3\"," + ok + ",\"n_routed_experts\":256}"
            << "field 'n_routed_experts': got 256";
        QTest::addRow("top-k above experts")
            << "{\"model_type\":\"mixtral\",\"num_key_value_heads\":2," + ok
                + ",\"num_local_experts\":4,\"num_experts_per_tok\":6}"
            << "experts_per_token: got 6, expected 1 to the number of experts (4)";
        QTest::addRow("qwen3_moe dense layers")
            << "{\"model_type\":\"qwen3_moe\"," + ok + ",\"mlp_only_layers\":[0]}"
            << "field 'mlp_only_layers': got [0], only []";
        QTest::addRow("qwen3_moe sparse step")
            << "{\"model_type\":\"qwen3_moe\"," + ok + ",\"decoder_sparse_step\":2}"
            << "field 'decoder_sparse_step': got 2";
        QTest::addRow("aux coefficient")
            << "{\"model_type\":\"mixtral\",\"num_key_value_heads\":2," + ok
                + ",\"router_aux_loss_coef\":\"x\"}"
            << "field 'router_aux_loss_coef': got \"x\", expected a number";
        const QString gptOss = "{\"model_type\":\"gpt_oss\",\"num_key_value_heads\":2," + ok;
        QTest::addRow("gpt_oss top-k given twice, differently")
            << gptOss + ",\"num_experts_per_tok\":4,\"experts_per_token\":2}"
            << "field 'experts_per_token': got 2, expected num_experts_per_tok's 4";
        QTest::addRow("gpt_oss quantised otherwise")
            << gptOss + ",\"quantization_config\":{\"quant_method\":\"bitsandbytes\"}}"
            << "field 'quantization_config.quant_method': got \"bitsandbytes\", expected \"mxfp4\"";
        QTest::addRow("bad bool") << "{" + ok + ",\"tie_word_embeddings\":\"yes\"}"
                                  << "field 'tie_word_embeddings'";
    }
    void errors()
    {
        QFETCH(QString, json);
        QFETCH(QString, expected);
        const auto spec = model::parseHfConfig(json.toStdString(), "/m/config.json");
        QVERIFY(!spec.ok());
        const QString message = QString::fromStdString(spec.error().toString());
        QVERIFY2(message.contains(expected), qPrintable(message));
        QVERIFY2(message.contains("/m/config.json"), qPrintable(message));
    }

    void missingFile()
    {
        const auto spec = model::readHfConfig("/nonexistent/config.json");
        QVERIFY(!spec.ok());
        QVERIFY(QString::fromStdString(spec.error().message).contains("/nonexistent/config.json"));
    }
};

QTEST_GUILESS_MAIN(TestHfConfig)
#include "test_hf_config.moc"
