#include "train/llama_model.h"

#include "train/rope.h"

#include <ATen/CPUGeneratorImpl.h>

namespace tb::train {

std::int64_t KvCache::length() const
{
    return layers.empty() || !layers.front().keys.defined() ? 0 : layers.front().keys.size(2);
}

namespace {

GateActivation gateActivationOf(const LlamaConfig& config)
{
    // model_config.cpp refuses every other activation.
    return config.activation == "silu" ? GateActivation::Silu : GateActivation::GeluTanh;
}

} // namespace

DecoderLayer::DecoderLayer(
    const LlamaConfig& config, const torch::TensorOptions& options, std::int64_t index)
{
    const auto norm = [&](const char* name) {
        return register_module(name,
            std::make_shared<RmsNorm>(
                config.hiddenSize, config.rmsNormEps, options, normWeightOf(config)));
    };
    m_inputNorm = norm("input_layernorm");
    m_attention =
        register_module("self_attn", std::make_shared<SelfAttention>(config, options, index));
    m_postAttentionNorm = norm("post_attention_layernorm");
    const bool mixtral = config.modelType == "mixtral";
    m_mlpName = mixtral ? "block_sparse_moe" : "mlp";
    if (config.isMixtureOfExperts()) {
        const GatedMlpShape expert{config.hiddenSize, config.expertIntermediateSize, false,
            gateActivationOf(config), false, mixtral};
        const ExpertRouting routing{
            config.experts, config.expertsPerToken, config.normTopkProb, mixtral};
        m_experts =
            register_module(m_mlpName, std::make_shared<SparseMoe>(expert, routing, options));
    } else {
        m_mlp = register_module(m_mlpName,
            std::make_shared<GatedMlp>(
                GatedMlpShape{config.hiddenSize, config.intermediateSize, config.mlpBias,
                    gateActivationOf(config), config.fusedQkv},
                options));
    }
    if (config.normsPerLayer == 4) {
        m_preFeedforwardNorm = norm("pre_feedforward_layernorm");
        m_postFeedforwardNorm = norm("post_feedforward_layernorm");
    }
}

torch::Tensor DecoderLayer::forward(
    const torch::Tensor& hidden, const AttentionInputs& inputs, LayerCache* cache)
{
    if (!m_preFeedforwardNorm) {
        const torch::Tensor attended =
            hidden + m_attention->forward(m_inputNorm->forward(hidden), inputs, cache);
        return attended + mlpForward(m_postAttentionNorm->forward(attended));
    }
    const torch::Tensor attended = hidden
        + m_postAttentionNorm->forward(
            m_attention->forward(m_inputNorm->forward(hidden), inputs, cache));
    return attended
        + m_postFeedforwardNorm->forward(mlpForward(m_preFeedforwardNorm->forward(attended)));
}

torch::Tensor DecoderLayer::mlpForward(const torch::Tensor& input)
{
    return m_experts ? m_experts->forward(input) : m_mlp->forward(input);
}

std::vector<std::pair<std::string, std::shared_ptr<LinearLayer>>> DecoderLayer::mlpProjections()
{
    std::vector<std::pair<std::string, std::shared_ptr<LinearLayer>>> out;
    const std::vector<std::string> names =
        m_experts ? m_experts->projectionNames() : m_mlp->projectionNames();
    for (const std::string& name : names)
        out.emplace_back(m_mlpName + "." + name,
            m_experts ? m_experts->projection(name) : m_mlp->projection(name));
    return out;
}

void DecoderLayer::replaceMlpProjection(const std::string& name, std::shared_ptr<LinearLayer> layer)
{
    TORCH_CHECK(name.starts_with(m_mlpName + "."), "not a projection of ", m_mlpName, ": ", name);
    const std::string inner = name.substr(m_mlpName.size() + 1);
    if (m_experts)
        m_experts->replaceProjection(inner, std::move(layer));
    else
        m_mlp->replaceProjection(inner, std::move(layer));
}

LlamaModel::LlamaModel(const LlamaConfig& config, const torch::TensorOptions& options)
{
    m_embedding = register_module("embed_tokens",
        std::make_shared<TokenEmbedding>(config.vocabSize, config.hiddenSize, options));
    torch::nn::ModuleList list;
    for (std::int64_t i = 0; i < config.numLayers; ++i) {
        m_layers.push_back(std::make_shared<DecoderLayer>(config, options, i));
        list->push_back(m_layers.back());
    }
    register_module("layers", list);
    m_norm = register_module("norm",
        std::make_shared<RmsNorm>(
            config.hiddenSize, config.rmsNormEps, options, normWeightOf(config)));
}

LlamaForCausalLm::LlamaForCausalLm(const LlamaConfig& config, torch::ScalarType dtype)
    : m_config(config)
    , m_dtype(dtype)
{
    const auto options = torch::TensorOptions().dtype(dtype);
    m_model = register_module("model", std::make_shared<LlamaModel>(config, options));
    if (!config.tieWordEmbeddings)
        m_lmHead = register_module("lm_head",
            std::make_shared<DenseLinear>(config.hiddenSize, config.vocabSize, false, options));
    const auto doubles = torch::TensorOptions().dtype(torch::kDouble);
    m_inverseFrequencies = torch::tensor(ropeInverseFrequencies(config), doubles);
    if (config.ropeScaling.type == RopeScalingType::LongRope)
        m_longInverseFrequencies = torch::tensor(
            ropeInverseFrequencies(config.rotaryDim(), config.ropeTheta, config.ropeScaling, true),
            doubles);
    if (config.slidingRopeTheta)
        m_slidingInverseFrequencies =
            torch::tensor(ropeInverseFrequencies(config.rotaryDim(), *config.slidingRopeTheta,
                              config.slidingRopeScaling),
                doubles);
}

torch::Tensor& LlamaForCausalLm::outputWeight()
{
    return m_lmHead ? m_lmHead->weight() : m_model->embedding().weight();
}

std::pair<torch::Tensor, torch::Tensor> LlamaForCausalLm::rotaryTables(
    std::int64_t first, std::int64_t tokens, const torch::Device& device, bool sliding)
{
    // In double, then cast: positions of long contexts times small
    // frequencies lose digits in fp32 (transformers computes these in fp32).
    const torch::Tensor positions =
        torch::arange(first, first + tokens, torch::TensorOptions().dtype(torch::kDouble));
    // LongRoPE, as transformers: the long factors once the sequence passes
    // the original length, and cos and sin scaled by the attention factor.
    const RopeScaling& scaling = sliding ? m_config.slidingRopeScaling : m_config.ropeScaling;
    const bool longContext = m_longInverseFrequencies.defined() && !sliding
        && first + tokens > scaling.originalMaxPositionEmbeddings;
    const torch::Tensor& inverse = sliding ? m_slidingInverseFrequencies
        : longContext                      ? m_longInverseFrequencies
                                           : m_inverseFrequencies;
    const torch::Tensor angles = torch::outer(positions, inverse);
    const torch::Tensor doubled = torch::cat({angles, angles}, -1);
    const double factor = scaling.type == RopeScalingType::LongRope ? scaling.attentionFactor : 1.0;
    const auto options = torch::TensorOptions().dtype(m_dtype).device(device);
    return {(doubled.cos() * factor).to(options), (doubled.sin() * factor).to(options)};
}

AttentionInputs LlamaForCausalLm::attentionInputs(
    std::int64_t pastLength, std::int64_t tokens, const torch::Device& device)
{
    AttentionInputs inputs;
    std::tie(inputs.cos, inputs.sin) = rotaryTables(pastLength, tokens, device);
    if (m_slidingInverseFrequencies.defined())
        std::tie(inputs.slidingCos, inputs.slidingSin) =
            rotaryTables(pastLength, tokens, device, true);
    inputs.backend = m_backend;
    const std::int64_t keys = pastLength + tokens;
    const bool windowed = m_config.slidingWindow && keys > *m_config.slidingWindow;
    if (tokens == 1 && !windowed)
        return inputs; // one query sees every cached key
    const auto longs = torch::TensorOptions().dtype(torch::kLong).device(device);
    const torch::Tensor queryPositions = torch::arange(pastLength, keys, longs).unsqueeze(1);
    const torch::Tensor keyPositions = torch::arange(0, keys, longs).unsqueeze(0);
    // One query sees every cached key (but those outside a layer's window).
    if (tokens > 1 && pastLength == 0)
        inputs.causal = true;
    else if (tokens > 1)
        inputs.allowed = keyPositions <= queryPositions;
    if (windowed)
        inputs.windowAllowed =
            (keyPositions <= queryPositions)
                .logical_and(keyPositions > queryPositions - *m_config.slidingWindow);
    return inputs;
}

torch::Tensor LlamaForCausalLm::hiddenStates(const torch::Tensor& inputIds, KvCache* cache)
{
    TORCH_CHECK(inputIds.dim() == 2, "input ids must be [batch, tokens], got ", inputIds.sizes());
    if (cache && cache->layers.empty())
        cache->layers.resize(static_cast<size_t>(m_config.numLayers));
    const std::int64_t past = cache ? cache->length() : 0;
    const AttentionInputs inputs = attentionInputs(past, inputIds.size(1), inputIds.device());
    ForwardHooks* hooks = cache ? nullptr : m_hooks;
    if (hooks)
        hooks->beforeEmbedding();
    torch::Tensor hidden = m_model->embedding().forward(inputIds);
    if (m_config.gemmaScaling) {
        // sqrt(hidden_size) rounded to the model's dtype, as transformers multiplies.
        const double root = std::sqrt(static_cast<double>(m_config.hiddenSize));
        hidden = hidden * torch::scalar_tensor(root, hidden.options());
    }
    if (hooks)
        hidden = hooks->afterEmbedding(std::move(hidden));
    auto& layers = m_model->layers();
    for (size_t i = 0; i < layers.size(); ++i) {
        LayerCache* layerCache = cache ? &cache->layers[i] : nullptr;
        if (hooks)
            hooks->beforeLayer(i);
        hidden = m_layerRunner ? m_layerRunner(*layers[i], hidden, inputs, layerCache)
                               : layers[i]->forward(hidden, inputs, layerCache);
        if (hooks)
            hidden = hooks->afterLayer(i, std::move(hidden));
    }
    if (hooks)
        hooks->beforeHead();
    return m_model->norm().forward(hidden);
}

torch::Tensor LlamaForCausalLm::logitsFrom(const torch::Tensor& hidden)
{
    const torch::Tensor logits = at::linear(hidden, outputWeight());
    const double cap = m_config.finalLogitSoftcap;
    return cap > 0 ? torch::tanh(logits / cap) * cap : logits;
}

torch::Tensor LlamaForCausalLm::forward(const torch::Tensor& inputIds, KvCache* cache)
{
    return logitsFrom(hiddenStates(inputIds, cache));
}

torch::Tensor LlamaForCausalLm::nextTokenLoss(
    const LossRows& rows, double normalizer, std::int64_t chunkRows)
{
    return chunkedCrossEntropy(rows.hidden, outputWeight(), rows.targets, normalizer, chunkRows,
        m_config.finalLogitSoftcap);
}

std::vector<std::pair<std::string, std::shared_ptr<LinearLayer>>> LlamaForCausalLm::projections()
{
    std::vector<std::pair<std::string, std::shared_ptr<LinearLayer>>> out;
    auto& layers = m_model->layers();
    for (size_t i = 0; i < layers.size(); ++i) {
        const std::string prefix = "model.layers." + std::to_string(i) + ".";
        for (const std::string& name : layers[i]->attention().projectionNames())
            out.emplace_back(prefix + "self_attn." + name, layers[i]->attention().projection(name));
        for (auto& [name, layer] : layers[i]->mlpProjections())
            out.emplace_back(prefix + name, std::move(layer));
    }
    return out;
}

std::vector<std::vector<std::int64_t>> LlamaForCausalLm::expertRouting()
{
    std::vector<std::vector<std::int64_t>> routed;
    for (auto& layer : m_model->layers())
        if (const SparseMoe* experts = layer->experts())
            routed.push_back(experts->lastRouted());
    return routed;
}

void LlamaForCausalLm::setRouterBalance(RouterBalance* balance)
{
    auto& layers = m_model->layers();
    for (size_t i = 0; i < layers.size(); ++i)
        if (SparseMoe* experts = layers[i]->experts())
            experts->setRouterBalance(balance, static_cast<std::int64_t>(i));
}

bool LlamaForCausalLm::isExpertProjection(const std::string& qualifiedName)
{
    return qualifiedName.find(".experts.") != std::string::npos;
}

void LlamaForCausalLm::replaceProjection(
    const std::string& qualifiedName, std::shared_ptr<LinearLayer> layer)
{
    // model.layers.<i>.<self_attn|mlp|block_sparse_moe>.<name>
    const std::string prefix = "model.layers.";
    TORCH_CHECK(qualifiedName.starts_with(prefix), "not a projection name: ", qualifiedName);
    const size_t indexEnd = qualifiedName.find('.', prefix.size());
    const size_t ownerEnd =
        indexEnd == std::string::npos ? indexEnd : qualifiedName.find('.', indexEnd + 1);
    TORCH_CHECK(ownerEnd != std::string::npos, "not a projection name: ", qualifiedName);
    const std::string indexText = qualifiedName.substr(prefix.size(), indexEnd - prefix.size());
    const std::string owner = qualifiedName.substr(indexEnd + 1, ownerEnd - indexEnd - 1);
    const std::string name = qualifiedName.substr(ownerEnd + 1);
    size_t index = 0;
    try {
        index = std::stoul(indexText);
    } catch (const std::exception&) {
        TORCH_CHECK(false, "not a projection name: ", qualifiedName);
    }
    TORCH_CHECK(index < m_model->layers().size(), "no layer ", index, " in ", qualifiedName);
    DecoderLayer& decoder = *m_model->layers()[index];
    if (owner == "self_attn")
        decoder.attention().replaceProjection(name, std::move(layer));
    else
        decoder.replaceMlpProjection(owner + "." + name, std::move(layer));
}

void LlamaForCausalLm::initializeRandom(std::uint64_t seed, double std)
{
    torch::NoGradGuard noGrad;
    at::Generator generator = at::detail::createCPUGenerator(seed);
    // Drawn in double on the CPU and copied, so one seed gives the same model
    // in every dtype (up to rounding).
    for (auto& item : named_parameters()) {
        torch::Tensor& parameter = item.value();
        const std::string& name = item.key();
        torch::Tensor values =
            torch::empty(parameter.sizes(), torch::TensorOptions().dtype(torch::kDouble));
        if (name.ends_with("norm.weight"))
            values.fill_(m_config.gemmaScaling ? 0.0 : 1.0);
        else if (name.ends_with(".bias"))
            values.zero_();
        else
            values.normal_(0.0, std, generator);
        parameter.copy_(values);
    }
}

} // namespace tb::train
