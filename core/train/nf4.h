#pragma once

#include "train/layers.h"

#include <torch/torch.h>

#include <array>

namespace tb::train {

// NormalFloat4 (Dettmers et al., "QLoRA", arXiv:2305.14314, section 3): the
// 16 values, in [-1, 1], as bitsandbytes' create_normal_map() gives them
// (quantiles of N(0, 1) with an exact zero, scaled to absmax 1).
const std::array<float, 16>& nf4Values();

// A weight held in 4 bits a value: blocks of 64 consecutive elements (row
// major), each scaled by its absolute maximum, each element the index of the
// nearest NF4 value. Double quantisation (QLoRA 3, "Double Quantization"):
// the fp32 absmax of every block is stored in 8 bits too, as (absmax -
// mean) in blocks of 256 absmax values with one fp32 scale each (symmetric
// int8; bitsandbytes uses its 8-bit dynamic map there instead). About 4.13
// bits per element in all.
struct Nf4Tensor {
    static constexpr std::int64_t kBlockSize = 64;
    static constexpr std::int64_t kAbsmaxBlockSize = 256;

    std::vector<std::int64_t> shape;
    std::int64_t numel = 0;
    torch::Tensor codes; // uint8 [ceil(numel / 64) * 32]: element 2i in the high nibble
    torch::Tensor absmaxCodes; // int8 [blocks]
    torch::Tensor absmaxScales; // float [ceil(blocks / 256)]
    torch::Tensor absmaxMean; // float [1]: a tensor, so it shards and moves with the rest

    std::int64_t blocks() const { return codes.numel() * 2 / kBlockSize; }
    std::int64_t storageBytes() const;
};

Nf4Tensor quantizeNf4(const torch::Tensor& weight);
// The NF4 form of a weight of `shape` with no storage yet: a sharded load
// quantises the projection when it reaches its unit (Nf4Linear::assign).
Nf4Tensor nf4WithoutStorage(const std::vector<std::int64_t>& shape, const torch::Device& device);
// The weight back in `dtype`, shaped as it was.
torch::Tensor dequantizeNf4(const Nf4Tensor& tensor, torch::ScalarType dtype);

// A frozen projection whose weight is held in NF4. Each forward dequantises
// the weight to the input's dtype, multiplies and drops it; backward
// dequantises it again for the input's gradient (the weight itself takes
// none), so no full-precision copy of any base weight outlives its matmul.
class Nf4Linear : public LinearLayer {
public:
    Nf4Linear(Nf4Tensor weight, torch::Tensor bias);

    torch::Tensor forward(const torch::Tensor& input) override;
    std::int64_t inFeatures() const override { return m_weight.shape[1]; }
    std::int64_t outFeatures() const override { return m_weight.shape[0]; }

    const Nf4Tensor& weight() const { return m_weight; }
    // Gives the layer's buffers these values (their tensors stay, so views
    // and the module's buffer list still see them).
    void assign(const Nf4Tensor& quantized);
    const torch::Tensor& bias() const { return m_bias; } // undefined without bias

private:
    Nf4Tensor m_weight;
    torch::Tensor m_bias;
};

} // namespace tb::train
