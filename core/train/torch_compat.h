#pragma once

#include <torch/torch.h>

// Everything that differs between the LibTorch versions we build against
// (Debian's 1.13 on the CPU machines, 2.x on the GPU machines) lives here and
// in torch_compat.cpp, chosen by TORCH_VERSION_* at compile time.
namespace tb::train::compat {

// Fused scaled-dot-product attention: softmax(q k^T / sqrt(d) + mask) v.
// q, k, v: [batch, heads, tokens, headDim] with K/V heads already expanded
// (2.x only takes grouped K/V from 2.5 on, and may then fall back to the math
// kernel). `allowed`: bool [queries, keys], true where a query may attend, or
// undefined; `isCausal` only with no mask and as many queries as keys.
torch::Tensor scaledDotProductAttention(const torch::Tensor& q, const torch::Tensor& k,
    const torch::Tensor& v, const torch::Tensor& allowed, bool isCausal);

// Whether this LibTorch multiplies float16 matrices on the CPU (1.13 does
// not: "addmm_impl_cpu_ not implemented for 'Half'"). Probed once.
bool cpuHalfMatmulSupported();

// "at::_scaled_dot_product_attention (LibTorch 1.13)" and the like, for logs.
const char* fusedAttentionName();

} // namespace tb::train::compat
