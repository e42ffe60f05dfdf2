#include "../support/test_data.h"
#include "common/atomic_file.h"
#include "model/hf_config.h"
#include "model/model_preset.h"
#include "model/parameter_count.h"

#include <QtTest>

#include "../support/text_mutator.h"

#include <random>

using namespace tb;

// A seeded mutator (byte flips, deletions, insertions of syntax characters
// and digits, duplicated spans) over real inputs. Every mutant must come back
// as a value or an Error: no crash, no hang, no exception. Run under ASan and
// UBSan by the asan preset. TB_FUZZ_ITERATIONS raises the count for long runs.
namespace {

std::string mutate(const std::string& seed, std::mt19937_64& rng)
{
    static const testutil::MutationOptions kOptions{
        "{}[]:,\"'-.0123456789eE \n\t#&*!|>%@`\\aznull", 8, 8, 40};
    return testutil::mutateText(seed, rng, kOptions);
}

int iterations()
{
    return testutil::fuzzIterations(6000);
}

} // namespace

class TestModelFuzz : public QObject {
    Q_OBJECT

private slots:
    void configJson()
    {
        std::vector<std::string> seeds = {
            R"({"model_type":"llama","hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,
                "num_attention_heads":32,"num_key_value_heads":8,"vocab_size":128256,"tie_word_embeddings":false})",
            R"({"model_type":"gemma2","hidden_size":2304,"intermediate_size":9216,"num_hidden_layers":26,
                "num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,"vocab_size":256000,
                "text_config":{"hidden_size":8}})"};
        const auto demo = common::readFile(tb::test::demoModelDir() + "/config.json");
        QVERIFY(demo.ok());
        seeds.push_back(*demo);
        std::mt19937_64 rng(20261121);
        int accepted = 0;
        const int n = iterations();
        for (int i = 0; i < n; ++i) {
            const std::string text = mutate(seeds[size_t(i) % seeds.size()], rng);
            const auto spec = model::parseHfConfig(text, "fuzz.json");
            if (spec.ok()) {
                ++accepted;
                QVERIFY(model::countParameters(*spec).total > 0);
            } else {
                QVERIFY(!spec.error().message.empty());
            }
        }
        qInfo("config.json reader: %d mutated inputs, %d still valid", n, accepted);
    }

    void presetYaml()
    {
        const auto seed = common::readFile(tb::test::sourcePath("presets/models/qwen2.5-7b.yaml"));
        QVERIFY(seed.ok());
        std::mt19937_64 rng(7);
        int accepted = 0;
        const int n = iterations();
        for (int i = 0; i < n; ++i) {
            const auto spec = model::parseModelPreset(mutate(*seed, rng), "fuzz.yaml");
            if (spec.ok()) {
                ++accepted;
                QVERIFY(model::countParameters(*spec).total > 0);
            } else {
                QVERIFY(!spec.error().message.empty());
            }
        }
        qInfo("model preset reader: %d mutated inputs, %d still valid", n, accepted);
    }
};

QTEST_GUILESS_MAIN(TestModelFuzz)
#include "test_model_fuzz.moc"
