#include "train/torch_compat.h"

#include <torch/version.h>

namespace tb::train::compat {

bool cpuHalfMatmulSupported()
{
    static const bool supported = [] {
        try {
            const torch::Tensor a = torch::ones({2, 2}, torch::kHalf);
            return torch::matmul(a, a).defined();
        } catch (const std::exception&) {
            return false;
        }
    }();
    return supported;
}

#if TORCH_VERSION_MAJOR >= 2

torch::Tensor scaledDotProductAttention(const torch::Tensor& q, const torch::Tensor& k,
    const torch::Tensor& v, const torch::Tensor& allowed, bool isCausal)
{
    // Public from 2.0; picks flash, memory-efficient or math kernels itself.
    // A tensor or {} converts to its optional mask, c10:: or std::.
    if (allowed.defined())
        return at::scaled_dot_product_attention(q, k, v, allowed, 0.0, isCausal);
    return at::scaled_dot_product_attention(q, k, v, {}, 0.0, isCausal);
}

const char* fusedAttentionName()
{
    return "at::scaled_dot_product_attention (LibTorch " TORCH_VERSION ")";
}

#elif TORCH_VERSION_MAJOR == 1 && TORCH_VERSION_MINOR >= 13

torch::Tensor scaledDotProductAttention(const torch::Tensor& q, const torch::Tensor& k,
    const torch::Tensor& v, const torch::Tensor& allowed, bool isCausal)
{
    // 1.13 only has the private form, which also returns the weights.
    const c10::optional<at::Tensor> mask =
        allowed.defined() ? c10::optional<at::Tensor>(allowed) : c10::nullopt;
    return std::get<0>(at::_scaled_dot_product_attention(
        q, k, v, mask, 0.0, /*need_attn_weights=*/false, isCausal));
}

const char* fusedAttentionName()
{
    return "at::_scaled_dot_product_attention (LibTorch " TORCH_VERSION ")";
}

#else
#error "Tunebench's trainer needs LibTorch 1.13 or newer"
#endif

} // namespace tb::train::compat
