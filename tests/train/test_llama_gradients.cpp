#include "train/attention.h"
#include "train/layers.h"
#include "train/llama_model.h"
#include "train/model_loader.h"
#include "train_test_util.h"

#include <QTest>

using namespace tb::train;
using namespace tb::train::testutil;

// Autograd through every layer type against central finite differences in
// float64: d loss / d w ~ (loss(w + h) - loss(w - h)) / 2h with h = 1e-5.
// Its error (h^2 truncation, 1e-16 / h rounding) stays near 1e-9 here, far
// below the 1e-7 tolerance, while a wrong gradient term is off by O(1).
// Part 2 trains through exactly these modules.
namespace {

constexpr double kStep = 1e-5;
constexpr double kTolerance = 1e-7;

struct Check {
    double worstError = 0.0;
    std::string worstName;
    int values = 0;
};

// Compares autograd's gradient of loss() to finite differences for up to
// `samples` entries of each tensor (all of them for small tensors).
Check checkGradients(const std::function<torch::Tensor()>& loss,
    const std::vector<std::pair<std::string, torch::Tensor>>& tensors, int samples,
    std::uint64_t seed)
{
    for (const auto& [name, tensor] : tensors) {
        if (tensor.grad().defined())
            tensor.mutable_grad().zero_();
    }
    loss().backward();
    at::Generator generator = at::detail::createCPUGenerator(seed);
    Check check;
    for (const auto& [name, tensor] : tensors) {
        const torch::Tensor analytic = tensor.grad().reshape({-1}).clone();
        const std::int64_t count = tensor.numel();
        torch::Tensor picks = count <= samples
            ? torch::arange(count)
            : torch::randperm(count, generator, torch::kLong).slice(0, 0, samples);
        for (std::int64_t p = 0; p < picks.size(0); ++p) {
            const std::int64_t index = picks[p].item<std::int64_t>();
            torch::NoGradGuard noGrad;
            torch::Tensor flat = tensor.view({-1});
            const double original = flat[index].item<double>();
            flat[index].fill_(original + kStep);
            const double up = loss().item<double>();
            flat[index].fill_(original - kStep);
            const double down = loss().item<double>();
            flat[index].fill_(original);
            const double numeric = (up - down) / (2 * kStep);
            const double exact = analytic[index].item<double>();
            const double error = std::abs(numeric - exact) / std::max(1.0, std::abs(exact));
            if (error >= check.worstError) {
                check.worstError = error;
                check.worstName = name + "[" + std::to_string(index) + "]";
            }
            ++check.values;
        }
    }
    return check;
}

void randomize(torch::nn::Module& module, std::uint64_t seed)
{
    torch::NoGradGuard noGrad;
    at::Generator generator = at::detail::createCPUGenerator(seed);
    for (auto& parameter : module.parameters())
        parameter.normal_(0.0, 0.5, generator);
}

torch::Tensor randomTensor(c10::IntArrayRef shape, std::uint64_t seed, bool requiresGrad = false)
{
    at::Generator generator = at::detail::createCPUGenerator(seed);
    return torch::randn(shape, generator, torch::kDouble).set_requires_grad(requiresGrad);
}

std::vector<std::pair<std::string, torch::Tensor>> withParameters(
    torch::nn::Module& module, std::vector<std::pair<std::string, torch::Tensor>> extra)
{
    for (const auto& item : module.named_parameters())
        extra.emplace_back(item.key(), item.value());
    return extra;
}

void report(const char* what, const Check& check)
{
    qInfo("%s: %d values, worst relative error %.2g at %s", what, check.values, check.worstError,
        check.worstName.c_str());
}

const auto kDouble = torch::TensorOptions().dtype(torch::kDouble);

} // namespace

class TestLlamaGradients : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { setComputeThreads(1); }

    void rmsNorm_data()
    {
        QTest::addColumn<int>("kind");
        QTest::newRow("Llama: weight") << int(RmsNorm::Weight::Plain);
        QTest::newRow("Gemma: 1 + weight") << int(RmsNorm::Weight::OffsetByOne);
    }

    void rmsNorm()
    {
        QFETCH(int, kind);
        RmsNorm norm(12, 1e-6, kDouble, RmsNorm::Weight(kind));
        randomize(norm, 1);
        const torch::Tensor x = randomTensor({2, 3, 12}, 2, true);
        const torch::Tensor weights = randomTensor({2, 3, 12}, 3);
        const Check check = checkGradients([&] { return (norm.forward(x) * weights).sum(); },
            withParameters(norm, {{"input", x}}), 100, 4);
        report("RMSNorm", check);
        QVERIFY(check.worstError < kTolerance);
    }

    void gatedMlp_data()
    {
        QTest::addColumn<int>("activation");
        QTest::addColumn<bool>("fused");
        QTest::newRow("SwiGLU") << int(GateActivation::Silu) << false;
        QTest::newRow("GeGLU, tanh GELU") << int(GateActivation::GeluTanh) << false;
        QTest::newRow("SwiGLU, fused gate_up_proj") << int(GateActivation::Silu) << true;
    }

    void gatedMlp()
    {
        QFETCH(int, activation);
        QFETCH(bool, fused);
        GatedMlp mlp({12, 20, true, GateActivation(activation), fused}, kDouble);
        randomize(mlp, 5);
        const torch::Tensor x = randomTensor({2, 3, 12}, 6, true);
        const torch::Tensor weights = randomTensor({2, 3, 12}, 7);
        const Check check = checkGradients([&] { return (mlp.forward(x) * weights).sum(); },
            withParameters(mlp, {{"input", x}}), 40, 8);
        report("gated MLP", check);
        QVERIFY(check.worstError < kTolerance);
    }

    void ropeAttentionWithGroupedKv_data()
    {
        QTest::addColumn<int>("backend");
        QTest::addColumn<bool>("llama3Rope");
        QTest::addColumn<int>("window");
        QTest::addRow("fused, causal") << int(AttentionBackend::Fused) << false << 0;
        QTest::addRow("plain, causal") << int(AttentionBackend::Plain) << false << 0;
        QTest::addRow("fused, llama3 rope") << int(AttentionBackend::Fused) << true << 0;
        QTest::addRow("fused, window mask") << int(AttentionBackend::Fused) << false << 3;
        QTest::addRow("plain, window mask") << int(AttentionBackend::Plain) << false << 3;
    }
    void ropeAttentionWithGroupedKv()
    {
        QFETCH(int, backend);
        QFETCH(bool, llama3Rope);
        QFETCH(int, window);
        const LlamaConfig config = llama3Rope ? tinyTiedConfig() : tinyConfig();
        SelfAttention attention(config, kDouble);
        randomize(attention, 9);
        LlamaForCausalLm tables(config, torch::kDouble);
        const std::int64_t tokens = 7;
        AttentionInputs inputs;
        // Positions far from 0 so rotations are large (and, with llama3, scaled).
        std::tie(inputs.cos, inputs.sin) = tables.rotaryTables(40, tokens, torch::kCPU);
        inputs.backend = static_cast<AttentionBackend>(backend);
        if (window > 0) {
            const torch::Tensor q = torch::arange(tokens).unsqueeze(1);
            const torch::Tensor k = torch::arange(tokens).unsqueeze(0);
            inputs.allowed = (k <= q).logical_and(k > q - window);
        } else {
            inputs.causal = true;
        }
        const torch::Tensor x = randomTensor({2, tokens, config.hiddenSize}, 10, true);
        const torch::Tensor weights = randomTensor({2, tokens, config.hiddenSize}, 11);
        const Check check =
            checkGradients([&] { return (attention.forward(x, inputs, nullptr) * weights).sum(); },
                withParameters(attention, {{"input", x}}), 30, 12);
        report("attention", check);
        QVERIFY(check.worstError < kTolerance);
    }

    void wholeModelWithEmbeddingAndHead_data()
    {
        QTest::addColumn<bool>("tied");
        QTest::addRow("untied head, q/k/v bias") << false;
        QTest::addRow("tied embedding, llama3 rope") << true;
    }
    void wholeModelWithEmbeddingAndHead()
    {
        QFETCH(bool, tied);
        const LlamaConfig config = tied ? tinyTiedConfig() : tinyConfig();
        LlamaForCausalLm model(config, torch::kDouble);
        model.initializeRandom(13, 0.4);
        at::Generator generator = at::detail::createCPUGenerator(14);
        const torch::Tensor input =
            torch::randint(config.vocabSize, {2, 6}, generator, torch::kLong);
        const torch::Tensor targets =
            torch::randint(config.vocabSize, {12}, generator, torch::kLong);
        auto loss = [&] {
            const torch::Tensor logits = model.forward(input);
            return torch::nn::functional::cross_entropy(
                logits.reshape({-1, config.vocabSize}), targets);
        };
        std::vector<std::pair<std::string, torch::Tensor>> tensors = withParameters(model, {});
        const Check check = checkGradients(loss, tensors, 6, 15);
        report(tied ? "model (tied)" : "model (untied)", check);
        QVERIFY(check.worstError < kTolerance);
        // Every parameter received a gradient, the embedding included.
        for (const auto& [name, tensor] : tensors)
            QVERIFY2(tensor.grad().defined() && tensor.grad().abs().sum().item<double>() > 0,
                name.c_str());
    }
};

QTEST_GUILESS_MAIN(TestLlamaGradients)
#include "test_llama_gradients.moc"
