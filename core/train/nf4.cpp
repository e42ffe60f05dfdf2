#include "train/nf4.h"

#include "train/tensor_storage.h"

namespace tb::train {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

torch::Tensor valueTable(const torch::Device& device)
{
    const auto& values = nf4Values();
    return torch::tensor(std::vector<float>(values.begin(), values.end()),
        torch::TensorOptions().dtype(torch::kFloat).device(device));
}

// The fp32 absmax of every 64-element block, from its 8-bit form.
torch::Tensor blockAbsmax(const Nf4Tensor& tensor)
{
    const std::int64_t blocks = tensor.absmaxCodes.numel();
    const std::int64_t groups = tensor.absmaxScales.numel();
    torch::Tensor padded =
        torch::zeros({groups * Nf4Tensor::kAbsmaxBlockSize}, tensor.absmaxScales.options());
    padded.narrow(0, 0, blocks).copy_(tensor.absmaxCodes);
    return (padded.view({groups, -1}) * tensor.absmaxScales.unsqueeze(1))
        .reshape({-1})
        .narrow(0, 0, blocks)
        .add(tensor.absmaxMean);
}

struct Nf4Holder : torch::CustomClassHolder {
    const Nf4Linear* layer = nullptr;
};

class Nf4MatmulFunction : public torch::autograd::Function<Nf4MatmulFunction> {
public:
    static torch::Tensor forward(
        AutogradContext* ctx, const torch::Tensor& input, c10::intrusive_ptr<Nf4Holder> holder)
    {
        const torch::Tensor weight = dequantizeNf4(holder->layer->weight(), input.scalar_type());
        ctx->saved_data["layer"] = c10::IValue::make_capsule(holder);
        return at::linear(input, weight, holder->layer->bias());
    }

    static variable_list backward(AutogradContext* ctx, variable_list outputGradients)
    {
        auto holder =
            c10::static_intrusive_pointer_cast<Nf4Holder>(ctx->saved_data["layer"].toCapsule());
        const torch::Tensor& gradient = outputGradients[0];
        const torch::Tensor weight = dequantizeNf4(holder->layer->weight(), gradient.scalar_type());
        return {torch::matmul(gradient, weight), torch::Tensor()};
    }
};

} // namespace

const std::array<float, 16>& nf4Values()
{
    static const std::array<float, 16> values = {-1.0F, -0.6961928009986877F, -0.5250730514526367F,
        -0.39491748809814453F, -0.28444138169288635F, -0.18477343022823334F, -0.09105003625154495F,
        0.0F, 0.07958029955625534F, 0.16093020141124725F, 0.24611230194568634F,
        0.33791524171829224F, 0.44070982933044434F, 0.5626170039176941F, 0.7229568362236023F, 1.0F};
    return values;
}

std::int64_t Nf4Tensor::storageBytes() const
{
    return codes.numel() + absmaxCodes.numel() + absmaxScales.numel() * 4 + 4;
}

Nf4Tensor quantizeNf4(const torch::Tensor& weight)
{
    torch::NoGradGuard noGrad;
    Nf4Tensor out;
    out.shape = weight.sizes().vec();
    out.numel = weight.numel();
    const std::int64_t blocks = (out.numel + Nf4Tensor::kBlockSize - 1) / Nf4Tensor::kBlockSize;
    torch::Tensor flat =
        torch::zeros({blocks * Nf4Tensor::kBlockSize}, weight.options().dtype(torch::kFloat));
    flat.narrow(0, 0, out.numel).copy_(weight.reshape({-1}));
    const torch::Tensor grouped = flat.view({blocks, Nf4Tensor::kBlockSize});
    const torch::Tensor absmax = grouped.abs().amax(1);

    // Double quantisation of the absmax values.
    out.absmaxMean = absmax.mean().reshape({1});
    const std::int64_t groups =
        (blocks + Nf4Tensor::kAbsmaxBlockSize - 1) / Nf4Tensor::kAbsmaxBlockSize;
    torch::Tensor centred = torch::zeros({groups * Nf4Tensor::kAbsmaxBlockSize}, absmax.options());
    centred.narrow(0, 0, blocks).copy_(absmax - out.absmaxMean);
    const torch::Tensor centredGroups = centred.view({groups, -1});
    out.absmaxScales = centredGroups.abs().amax(1).div(127.0).clamp_min(1e-12);
    out.absmaxCodes = (centredGroups / out.absmaxScales.unsqueeze(1))
                          .round()
                          .clamp(-127, 127)
                          .reshape({-1})
                          .narrow(0, 0, blocks)
                          .to(torch::kChar);

    // Each element: the nearest NF4 value of element / absmax (the true
    // absmax, as bitsandbytes quantises before it double-quantises).
    const torch::Tensor normalized = grouped / absmax.clamp_min(1e-12).unsqueeze(1);
    const torch::Tensor table = valueTable(weight.device());
    const torch::Tensor midpoints = (table.narrow(0, 0, 15) + table.narrow(0, 1, 15)) / 2;
    const torch::Tensor indices =
        torch::bucketize(normalized.reshape({-1}), midpoints).to(torch::kByte).view({-1, 2});
    out.codes = indices.select(1, 0).mul(16).add(indices.select(1, 1)).contiguous();
    return out;
}

Nf4Tensor nf4WithoutStorage(const std::vector<std::int64_t>& shape, const torch::Device& device)
{
    Nf4Tensor out;
    out.shape = shape;
    out.numel = c10::multiply_integers(shape);
    const std::int64_t blocks = (out.numel + Nf4Tensor::kBlockSize - 1) / Nf4Tensor::kBlockSize;
    const std::int64_t groups =
        (blocks + Nf4Tensor::kAbsmaxBlockSize - 1) / Nf4Tensor::kAbsmaxBlockSize;
    const auto options = torch::TensorOptions().device(device);
    out.codes =
        tensorWithoutStorage({blocks * Nf4Tensor::kBlockSize / 2}, options.dtype(torch::kByte));
    out.absmaxCodes = tensorWithoutStorage({blocks}, options.dtype(torch::kChar));
    out.absmaxScales = tensorWithoutStorage({groups}, options.dtype(torch::kFloat));
    out.absmaxMean = tensorWithoutStorage({1}, options.dtype(torch::kFloat));
    return out;
}

torch::Tensor dequantizeNf4(const Nf4Tensor& tensor, torch::ScalarType dtype)
{
    torch::NoGradGuard noGrad;
    const torch::Tensor high = tensor.codes.div(16, "floor");
    const torch::Tensor low = tensor.codes.remainder(16);
    const torch::Tensor indices = torch::stack({high, low}, 1).reshape({-1}).to(torch::kLong);
    const torch::Tensor values = valueTable(tensor.codes.device()).index_select(0, indices);
    const torch::Tensor scaled =
        values.view({-1, Nf4Tensor::kBlockSize}) * blockAbsmax(tensor).unsqueeze(1);
    return scaled.reshape({-1}).narrow(0, 0, tensor.numel).view(tensor.shape).to(dtype);
}

Nf4Linear::Nf4Linear(Nf4Tensor weight, torch::Tensor bias)
    : m_weight(std::move(weight))
    , m_bias(std::move(bias))
{
    TORCH_CHECK(m_weight.shape.size() == 2, "an NF4 linear layer needs a 2-D weight");
    // As buffers, so Module::to() moves them to the training device; they
    // are not parameters, so no optimizer or weight file ever sees them.
    m_weight.codes = register_buffer("weight_nf4_codes", m_weight.codes);
    m_weight.absmaxCodes = register_buffer("weight_absmax_codes", m_weight.absmaxCodes);
    m_weight.absmaxScales = register_buffer("weight_absmax_scales", m_weight.absmaxScales);
    m_weight.absmaxMean = register_buffer("weight_absmax_mean", m_weight.absmaxMean);
    if (m_bias.defined())
        m_bias = register_buffer("bias", m_bias);
}

void Nf4Linear::assign(const Nf4Tensor& quantized)
{
    TORCH_CHECK(quantized.shape == m_weight.shape, "an NF4 weight of another shape");
    torch::NoGradGuard noGrad;
    const torch::Device device = m_weight.codes.device();
    m_weight.codes.set_data(quantized.codes.to(device));
    m_weight.absmaxCodes.set_data(quantized.absmaxCodes.to(device));
    m_weight.absmaxScales.set_data(quantized.absmaxScales.to(device));
    m_weight.absmaxMean.set_data(quantized.absmaxMean.to(device));
}

torch::Tensor Nf4Linear::forward(const torch::Tensor& input)
{
    auto holder = c10::make_intrusive<Nf4Holder>();
    holder->layer = this;
    if (torch::GradMode::is_enabled() && input.requires_grad())
        return Nf4MatmulFunction::apply(input, holder);
    return at::linear(input, dequantizeNf4(m_weight, input.scalar_type()), m_bias);
}

} // namespace tb::train
