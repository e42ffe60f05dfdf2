#include "train/chunked_loss.h"

#include <algorithm>

namespace tb::train {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

torch::ScalarType lossTypeFor(const torch::Tensor& hidden)
{
    return hidden.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
}

struct ChunkPass {
    torch::Tensor loss; // scalar, summed nll / normalizer
    torch::Tensor hiddenGradient; // undefined unless asked for
    torch::Tensor weightGradient; // in the loss dtype
};

struct ChunkOptions {
    double normalizer = 1;
    std::int64_t chunkRows = 0;
    double softcap = 0;
    bool wantHidden = false;
    bool wantWeight = false;
};

ChunkPass runChunks(const torch::Tensor& hidden, const torch::Tensor& weight,
    const torch::Tensor& targets, const ChunkOptions& options)
{
    const auto [normalizer, chunkRows, softcap, wantHidden, wantWeight] = options;
    torch::NoGradGuard noGrad;
    const auto lossType = lossTypeFor(hidden);
    const std::int64_t rows = hidden.size(0);
    const std::int64_t chunk = chunkRows > 0 ? chunkRows : defaultLossChunkRows(weight.size(0));
    ChunkPass pass;
    pass.loss = torch::zeros({}, hidden.options().dtype(lossType));
    if (wantHidden)
        pass.hiddenGradient = torch::empty_like(hidden);
    if (wantWeight)
        pass.weightGradient = torch::zeros(weight.sizes(), weight.options().dtype(lossType));
    for (std::int64_t begin = 0; begin < rows; begin += chunk) {
        const std::int64_t count = std::min(chunk, rows - begin);
        const torch::Tensor h = hidden.narrow(0, begin, count);
        const torch::Tensor t = targets.narrow(0, begin, count).unsqueeze(1);
        torch::Tensor logits = torch::matmul(h, weight.t()).to(lossType);
        torch::Tensor capped; // tanh(z / c), for the cap's derivative 1 - tanh^2
        if (softcap > 0) {
            capped = logits.div_(softcap).tanh_();
            logits = capped * softcap;
        }
        const torch::Tensor logSumExp = torch::logsumexp(logits, 1, true);
        pass.loss.add_((logSumExp - logits.gather(1, t)).sum());
        if (!wantHidden && !wantWeight)
            continue;
        // d(nll)/d(logits) = softmax - onehot, in place of the logits.
        torch::Tensor g = logits.sub_(logSumExp).exp_();
        g.scatter_add_(1, t, torch::full({count, 1}, -1.0, g.options()));
        g.div_(normalizer);
        if (capped.defined())
            g.mul_(capped.square_().neg_().add_(1.0));
        const torch::Tensor gCompute = g.to(hidden.scalar_type());
        if (wantHidden)
            pass.hiddenGradient.narrow(0, begin, count).copy_(torch::matmul(gCompute, weight));
        if (wantWeight) {
            if (lossType == hidden.scalar_type())
                pass.weightGradient.addmm_(g.t(), h);
            else
                pass.weightGradient.add_(torch::matmul(gCompute.t(), h));
        }
    }
    pass.loss.div_(normalizer);
    return pass;
}

class ChunkedCrossEntropyFunction : public torch::autograd::Function<ChunkedCrossEntropyFunction> {
public:
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& hidden,
        const torch::Tensor& weight, const torch::Tensor& targets, double normalizer,
        std::int64_t chunkRows, double softcap, bool wantHidden, bool wantWeight)
    {
        ChunkPass pass = runChunks(
            hidden, weight, targets, {normalizer, chunkRows, softcap, wantHidden, wantWeight});
        ctx->saved_data["hidden_grad"] = pass.hiddenGradient;
        ctx->saved_data["weight_grad"] = pass.weightGradient;
        ctx->saved_data["hidden_type"] = static_cast<std::int64_t>(hidden.scalar_type());
        ctx->saved_data["weight_type"] = static_cast<std::int64_t>(weight.scalar_type());
        return pass.loss;
    }

    static variable_list backward(AutogradContext* ctx, variable_list outputGradients)
    {
        const torch::Tensor& scale = outputGradients[0];
        torch::Tensor hiddenGradient = ctx->saved_data["hidden_grad"].toTensor();
        torch::Tensor weightGradient = ctx->saved_data["weight_grad"].toTensor();
        const auto hiddenType =
            static_cast<torch::ScalarType>(ctx->saved_data["hidden_type"].toInt());
        const auto weightType =
            static_cast<torch::ScalarType>(ctx->saved_data["weight_type"].toInt());
        // In place: backward runs once, and the buffers are the size of the
        // weight and of the hidden states.
        if (hiddenGradient.defined()) {
            if (hiddenGradient.scalar_type() == scale.scalar_type())
                hiddenGradient.mul_(scale);
            else
                hiddenGradient = (hiddenGradient.to(scale.scalar_type()) * scale).to(hiddenType);
        }
        if (weightGradient.defined())
            weightGradient = weightGradient.mul_(scale).to(weightType);
        ctx->saved_data.clear();
        return {hiddenGradient, weightGradient, torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
};

} // namespace

LossRows selectLossRows(const torch::Tensor& hidden, const torch::Tensor& labels)
{
    TORCH_CHECK(hidden.dim() == 3 && labels.dim() == 2 && hidden.size(0) == labels.size(0)
            && hidden.size(1) == labels.size(1),
        "hidden states ", hidden.sizes(), " and labels ", labels.sizes(), " do not match");
    const std::int64_t tokens = hidden.size(1);
    if (tokens < 2)
        return {hidden.new_empty({0, hidden.size(2)}), labels.new_empty({0})};
    const torch::Tensor predicting = hidden.narrow(1, 0, tokens - 1).reshape({-1, hidden.size(2)});
    const torch::Tensor next = labels.narrow(1, 1, tokens - 1).reshape({-1});
    const torch::Tensor keep = next.ne(-100).nonzero().squeeze(1);
    const torch::Device device = hidden.device();
    return {predicting.index_select(0, keep.to(device)), next.index_select(0, keep).to(device)};
}

std::int64_t defaultLossChunkRows(std::int64_t vocabSize)
{
    constexpr std::int64_t kChunkBytes = std::int64_t(64) << 20;
    return std::max<std::int64_t>(16, kChunkBytes / (4 * std::max<std::int64_t>(1, vocabSize)));
}

torch::Tensor chunkedCrossEntropy(const torch::Tensor& hidden, const torch::Tensor& weight,
    const torch::Tensor& targets, double normalizer, std::int64_t chunkRows, double softcap)
{
    TORCH_CHECK(hidden.dim() == 2 && weight.dim() == 2 && hidden.size(1) == weight.size(1),
        "hidden rows ", hidden.sizes(), " do not match the output weight ", weight.sizes());
    TORCH_CHECK(normalizer > 0, "the loss normalizer must be positive");
    const bool grad = torch::GradMode::is_enabled();
    const bool wantHidden = grad && hidden.requires_grad();
    const bool wantWeight = grad && weight.requires_grad();
    if (!wantHidden && !wantWeight)
        return runChunks(hidden, weight, targets, {normalizer, chunkRows, softcap}).loss;
    return ChunkedCrossEntropyFunction::apply(
        hidden, weight, targets, normalizer, chunkRows, softcap, wantHidden, wantWeight);
}

} // namespace tb::train
