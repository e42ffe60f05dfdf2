// Forward throughput of a ~15M-parameter Llama (the stories15M shape of
// llama2.c: dim 288, 6 layers, 6 heads, SwiGLU 768, vocab 32000, tied) with
// random weights, against the CPU's own matrix-multiply rate measured in the
// same run. The ratio (model FLOP/s over matmul FLOP/s) is how much of what
// this machine's BLAS can do the whole forward pass achieves.
//
//   bench_llama_forward [threads] [batch] [tokens]
//
// Model FLOPs per token, forward only (PaLM appendix B, the forward third of
// 6N + 12 L d T): 2 N_matmul + 4 L d T, where N_matmul counts every weight
// used in a matrix product (the tied output projection included, the
// embedding lookup not) and 4 L d T is Q K^T and P V over T positions.

#include "llama_bench_util.h"
#include "train/llama_model.h"
#include "train/model_loader.h"

#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

using namespace tb::train;

namespace {

using tb::bench::forwardFlopsPerToken;
using tb::bench::median;
using tb::bench::stories15mShape;
using tb::bench::timed;

} // namespace

int main(int argc, char** argv)
{
    const int threads =
        argc > 1 ? std::atoi(argv[1]) : int(std::max(1u, std::thread::hardware_concurrency()));
    const std::int64_t batch = argc > 2 ? std::atoll(argv[2]) : 4;
    const std::int64_t tokens = argc > 3 ? std::atoll(argv[3]) : 256;
    setComputeThreads(threads);
    torch::NoGradGuard noGrad;

    const LlamaConfig config = stories15mShape();
    std::printf("LibTorch %s, %d threads; model: stories15M shape, %.2f M parameters; batch %lld x "
                "%lld tokens\n",
        TORCH_VERSION, computeThreads(), double(config.parameterCount()) / 1e6,
        static_cast<long long>(batch), static_cast<long long>(tokens));
    const double flopsPerToken = forwardFlopsPerToken(config, tokens);
    std::printf("forward FLOPs per token: %.1f M (2 N_matmul + 4 L d T)\n\n", flopsPerToken / 1e6);
    std::printf("%-8s %-7s %12s %12s %14s %10s\n", "dtype", "attn", "tokens/s", "GFLOP/s",
        "matmul GFLOP/s", "ratio");

    const torch::Tensor ids = torch::randint(config.vocabSize, {batch, tokens}, torch::kLong);
    struct Case {
        const char* name;
        torch::ScalarType dtype;
        AttentionBackend backend;
    };
    const Case cases[] = {{"float32", torch::kFloat, AttentionBackend::Fused},
        {"float32", torch::kFloat, AttentionBackend::Plain},
        {"bfloat16", torch::kBFloat16, AttentionBackend::Fused}};
    // Square matmul at a size where BLAS runs near its peak on this CPU.
    const std::int64_t n = 1024;
    for (const Case& c : cases) {
        LlamaForCausalLm model(config, c.dtype);
        model.initializeRandom(1);
        model.eval();
        model.setAttentionBackend(c.backend);
        const auto options = torch::TensorOptions().dtype(c.dtype);
        const torch::Tensor a = torch::randn({n, n}).to(options);
        const torch::Tensor b = torch::randn({n, n}).to(options);
        model.forward(ids);
        torch::matmul(a, b);
        // Model and reference alternate, so both see the same machine load
        // (other processes share these cores); medians of each.
        std::vector<double> forwardTimes, matmulTimes;
        for (int round = 0; round < 7; ++round) {
            forwardTimes.push_back(timed([&] { model.forward(ids); }));
            matmulTimes.push_back(timed([&] { torch::matmul(a, b); }));
        }
        const double tokensPerSecond = double(batch * tokens) / median(forwardTimes);
        const double gflops = tokensPerSecond * flopsPerToken / 1e9;
        const double reference = 2.0 * double(n * n * n) / median(matmulTimes) / 1e9;
        std::printf("%-8s %-7s %12.0f %12.1f %14.1f %9.1f%%\n", c.name,
            c.backend == AttentionBackend::Fused ? "fused" : "plain", tokensPerSecond, gflops,
            reference, 100.0 * gflops / reference);
    }
    std::printf(
        "\nfused attention: at::scaled_dot_product_attention (LibTorch %s)\n", TORCH_VERSION);
    return 0;
}
