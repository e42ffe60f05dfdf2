#include "train/data_parallel.h"

#include "train/host_read.h"

#include "common/training_rules.h"

#include <torch/csrc/autograd/function_hook.h>

#include <cmath>

namespace tb::train {

using config::Sharding;

ShardSpec shardSpecFor(Sharding sharding, const DataParallelGroups& groups)
{
    ShardSpec spec;
    if (sharding == Sharding::Ddp || !groups.shard)
        return spec;
    spec.rank = groups.shard->rank();
    spec.count = groups.shard->size();
    spec.gradients = sharding != Sharding::Zero1;
    spec.parameters = common::shardsParameters(sharding);
    return spec;
}

namespace {

// Tells the engine a parameter's gradient has been accumulated for this
// backward. Subclasses FunctionPostHook directly: the lambda helper's
// signature differs between LibTorch versions (LIBTORCH.md).
class GradientReadyHook : public torch::autograd::FunctionPostHook {
public:
    GradientReadyHook(DataParallel* engine, size_t unit)
        : m_engine(engine)
        , m_unit(unit)
    {
    }
    torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
        const torch::autograd::variable_list& /*inputs*/) override
    {
        m_engine->parameterGradientReady(m_unit);
        return outputs;
    }

private:
    DataParallel* m_engine;
    size_t m_unit;
};

} // namespace

DataParallel::DataParallel(LlamaForCausalLm& model, FlatParameters& parameters, Sharding sharding,
    DataParallelGroups groups, FrozenShards* frozen)
    : m_model(model)
    , m_parameters(parameters)
    , m_sharding(sharding)
    , m_groups(std::move(groups))
    , m_frozen(frozen)
{
    TORCH_CHECK(m_groups.world, "data parallel training needs the world group");
    TORCH_CHECK(!m_frozen || (shardsParameters() && m_groups.shard),
        "a sharded frozen base needs a strategy that shards parameters");
    const auto& units = m_parameters.units();
    m_remaining.assign(units.size(), 0);
    m_reduced.assign(units.size(), false);
    m_gathered.assign(units.size(), !shardsParameters());
    m_layers = static_cast<size_t>(model.config().numLayers);
    m_embeddingIsHead = model.config().tieWordEmbeddings;
    for (size_t u = 0; u < units.size(); ++u)
        m_unitById.emplace(units[u].id, u);
    for (size_t s = 0; s < m_parameters.segments().size(); ++s) {
        const auto unit = static_cast<size_t>(m_parameters.segments()[s].unit);
        auto accumulator = torch::autograd::impl::grad_accumulator(m_parameters.segmentTensor(s));
        accumulator->add_post_hook(std::make_unique<GradientReadyHook>(this, unit));
        m_accumulators.push_back(std::move(accumulator));
    }
    m_model.setForwardHooks(this);
}

DataParallel::~DataParallel()
{
    m_model.setForwardHooks(nullptr);
    for (auto& accumulator : m_accumulators)
        accumulator->post_hooks().clear();
}

bool DataParallel::reshardAfterForward() const
{
    return m_sharding != Sharding::FsdpGradOp;
}

std::optional<size_t> DataParallel::trainableUnit(int id) const
{
    const auto it = m_unitById.find(id);
    return it == m_unitById.end() ? std::nullopt : std::optional<size_t>(it->second);
}

bool DataParallel::staysGathered(size_t u) const
{
    // A tied embedding is read at both ends of the step.
    return m_embeddingIsHead && m_parameters.units()[u].id == kEmbeddingUnit;
}

void DataParallel::beginMicroStep(bool last)
{
    m_communicating = shardsGradients() || last;
    const auto& units = m_parameters.units();
    for (size_t u = 0; u < units.size(); ++u) {
        m_remaining[u] = static_cast<int>(units[u].segments.size());
        m_reduced[u] = false;
    }
}

void DataParallel::parameterGradientReady(size_t unit)
{
    if (--m_remaining[unit] == 0 && m_communicating && !m_reduced[unit])
        startReduction(unit);
}

void DataParallel::startReduction(size_t u)
{
    m_reduced[u] = true;
    // Every node that reads this unit's values has run once all its
    // gradients are in: the reduction needs the gradients only.
    if (shardsParameters() && !staysGathered(u))
        release(u);
    // Sharded gradients exist to save memory: one reduction in flight keeps
    // at most two units' full gradients alive (plus a tied embedding's).
    const size_t maxInFlight = shardsGradients() ? 1 : 2;
    while (m_inFlight.size() >= maxInFlight)
        finishOldestReduction();
    torch::NoGradGuard noGrad;
    FlatParameters::Unit& unit = m_parameters.units()[u];
    Reduction reduction;
    reduction.unit = u;
    if (!m_groups.shard || m_parameters.shard().count == 1) {
        // DDP: all-reduce the whole unit, in fp32 at least (on the GPU when
        // the master gradient is offloaded to the host).
        if (unit.masterGradientsSeparate && !m_parameters.offloaded()) {
            m_parameters.accumulateUnitGradients(unit);
            reduction.input = unit.masterGradients;
        } else {
            reduction.input = unit.gradients;
        }
        if (reduction.input.scalar_type() != torch::kFloat
            && reduction.input.scalar_type() != torch::kDouble)
            reduction.input = reduction.input.to(torch::kFloat);
        reduction.work = m_groups.world->allReduceSum(reduction.input);
    } else {
        reduction.input = unit.gradients.scalar_type() == torch::kFloat
            ? unit.gradients
            : unit.gradients.to(torch::kFloat);
        reduction.output = torch::empty({unit.shardNumel}, reduction.input.options());
        reduction.work = m_groups.shard->reduceScatterSum(reduction.output, reduction.input);
    }
    m_inFlight.push_back(std::move(reduction));
}

void DataParallel::finishReduction(Reduction& reduction)
{
    reduction.work->wait();
    torch::NoGradGuard noGrad;
    FlatParameters::Unit& unit = m_parameters.units()[reduction.unit];
    if (!reduction.output.defined() && m_parameters.offloaded()) {
        m_parameters.stageGradientToHost(unit, reduction.input);
        unit.gradients.zero_();
        return;
    }
    if (!reduction.output.defined()) {
        // DDP: the sum is in place; copy back when it travelled as fp32.
        torch::Tensor& target =
            unit.masterGradientsSeparate ? unit.masterGradients : unit.gradients;
        if (!reduction.input.is_same(target))
            target.copy_(reduction.input);
        return;
    }
    if (m_groups.replicas && m_groups.replicas->size() > 1)
        m_groups.replicas->allReduceSum(reduction.output)->wait();
    if (m_parameters.offloaded())
        m_parameters.stageGradientToHost(unit, reduction.output);
    else
        unit.masterGradients.add_(reduction.output.to(unit.masterGradients.scalar_type()));
    if (shardsGradients())
        m_parameters.releaseGradients(unit);
    else
        unit.gradients.zero_();
}

void DataParallel::finishOldestReduction()
{
    Reduction reduction = std::move(m_inFlight.front());
    m_inFlight.pop_front();
    finishReduction(reduction);
}

void DataParallel::endMicroStep()
{
    if (m_communicating) {
        for (size_t u = 0; u < m_reduced.size(); ++u) {
            if (!m_reduced[u]) {
                m_parameters.allocateGradients(m_parameters.units()[u]);
                startReduction(u);
            }
        }
    }
    while (!m_inFlight.empty())
        finishOldestReduction();
    if (!m_communicating)
        m_parameters.accumulateGradients(/*lastMicroStep=*/false);
    m_parameters.drainHostGradients();
    for (const int id : {kEmbeddingUnit, kHeadUnit})
        if (const auto unit = trainableUnit(id))
            release(*unit);
    releaseAllFrozen();
    m_communicating = false;
}

torch::Tensor DataParallel::scalarBuffer(double value) const
{
    // NCCL reduces tensors on the GPU only; Gloo takes either.
    const torch::Device device = m_parameters.units().front().values.device();
    return torch::full({1}, value, torch::TensorOptions().dtype(torch::kDouble).device(device));
}

double DataParallel::sumOverWorld(double value)
{
    return readToHost(sumOverWorld(scalarBuffer(value)));
}

torch::Tensor DataParallel::sumOverWorld(torch::Tensor values)
{
    torch::Tensor buffer = values.to(m_parameters.units().front().values.device()).contiguous();
    m_groups.world->allReduceSum(buffer)->wait();
    return buffer;
}

torch::Tensor DataParallel::gradientSquares()
{
    torch::Tensor squares = m_parameters.gradientSquares().reshape({1}).contiguous();
    if (m_parameters.shard().count > 1)
        m_groups.shard->allReduceSum(squares)->wait();
    return squares;
}

void DataParallel::afterOptimizerStep()
{
    if (m_parameters.shard().count == 1) {
        m_parameters.copyMasterToModel();
        return;
    }
    if (shardsParameters())
        return; // gathered from the master shards when next used
    torch::NoGradGuard noGrad;
    std::vector<Gather> gathers;
    for (FlatParameters::Unit& unit : m_parameters.units()) {
        Gather gather;
        gather.source = m_parameters.masterAsModel(unit, /*fresh=*/true);
        gather.work = m_groups.shard->allGather(unit.values, gather.source);
        gathers.push_back(std::move(gather));
    }
    for (Gather& gather : gathers)
        gather.work->wait();
}

void DataParallel::startGather(size_t u)
{
    torch::NoGradGuard noGrad;
    FlatParameters::Unit& unit = m_parameters.units()[u];
    m_parameters.allocateValues(unit);
    Gather gather;
    gather.source = m_parameters.masterAsModel(unit, /*fresh=*/false);
    gather.work = m_groups.shard->allGather(unit.values, gather.source);
    m_gathers.emplace(u, std::move(gather));
}

void DataParallel::ensureGathered(size_t u)
{
    if (m_gathered[u])
        return;
    if (!m_gathers.contains(u))
        startGather(u);
    m_gathers.at(u).work->wait();
    m_gathers.erase(u);
    m_gathered[u] = true;
}

void DataParallel::release(size_t u)
{
    if (!shardsParameters() || !m_gathered[u])
        return;
    m_parameters.releaseValues(m_parameters.units()[u]);
    m_gathered[u] = false;
}

void DataParallel::releaseGathered()
{
    for (size_t u = 0; u < m_gathered.size(); ++u)
        release(u);
    releaseAllFrozen();
}

std::optional<size_t> DataParallel::frozenUnit(int id) const
{
    return m_frozen ? m_frozen->unitWithId(id) : std::nullopt;
}

void DataParallel::startFrozenGather(size_t u)
{
    torch::NoGradGuard noGrad;
    FrozenShards::Unit& unit = m_frozen->units()[u];
    m_frozen->allocate(unit);
    Gather gather;
    gather.source = m_frozen->shardOnDevice(unit);
    gather.work = m_groups.shard->allGather(unit.whole, gather.source);
    m_frozenGathers.emplace(u, std::move(gather));
}

void DataParallel::ensureFrozenGathered(size_t u)
{
    if (!m_frozenGathers.contains(u)) {
        if (m_frozen->gathered(u))
            return;
        startFrozenGather(u);
    }
    m_frozenGathers.at(u).work->wait();
    m_frozenGathers.erase(u);
}

void DataParallel::releaseFrozen(size_t u)
{
    // Never free a buffer a collective is still writing.
    if (const auto inFlight = m_frozenGathers.find(u); inFlight != m_frozenGathers.end()) {
        inFlight->second.work->wait();
        m_frozenGathers.erase(inFlight);
    }
    m_frozen->release(m_frozen->units()[u]);
}

void DataParallel::releaseAllFrozen()
{
    for (size_t u = 0; m_frozen && u < m_frozen->units().size(); ++u)
        releaseFrozen(u);
}

void DataParallel::gatherUnits(int id)
{
    if (const auto unit = trainableUnit(id))
        ensureGathered(*unit);
    if (const auto frozen = frozenUnit(id))
        ensureFrozenGathered(*frozen);
}

void DataParallel::prefetchUnits(int id)
{
    if (const auto unit = trainableUnit(id)) {
        if (!m_gathered[*unit] && !m_gathers.contains(*unit))
            startGather(*unit);
    }
    if (const auto frozen = frozenUnit(id)) {
        if (!m_frozen->gathered(*frozen))
            startFrozenGather(*frozen);
    }
}

void DataParallel::releaseUnits(int id)
{
    if (const auto unit = trainableUnit(id))
        release(*unit);
    if (const auto frozen = frozenUnit(id))
        releaseFrozen(*frozen);
}

void DataParallel::allocateGradientsOf(int id)
{
    if (const auto unit = trainableUnit(id); unit && shardsGradients())
        m_parameters.allocateGradients(m_parameters.units()[*unit]);
}

bool DataParallel::hasUnits(int id) const
{
    return trainableUnit(id) || frozenUnit(id);
}

void DataParallel::beforeEmbedding()
{
    if (shardsParameters())
        gatherUnits(kEmbeddingUnit);
    // A tied embedding's gradient takes the head's part first and the
    // embedding's last: it lives the whole step.
    if (m_embeddingIsHead && torch::GradMode::is_enabled())
        allocateGradientsOf(kEmbeddingUnit);
}

torch::Tensor DataParallel::afterEmbedding(torch::Tensor hidden)
{
    if (m_embeddingIsHead)
        return hidden;
    // The embedding's backward reads the token ids, not the weight: the
    // values go now, and the gradient appears just before that backward.
    if (shardsParameters())
        releaseUnits(kEmbeddingUnit);
    if (shardsGradients() && hidden.requires_grad() && trainableUnit(kEmbeddingUnit))
        hidden.register_hook([this](const torch::Tensor&) { allocateGradientsOf(kEmbeddingUnit); });
    return hidden;
}

void DataParallel::beforeLayer(size_t layer)
{
    if (!shardsParameters())
        return;
    gatherUnits(layerId(layer));
    // Prefetch: the next unit's gather runs while this layer computes.
    prefetchUnits(layer + 1 < m_layers ? layerId(layer + 1) : kHeadUnit);
}

torch::Tensor DataParallel::afterLayer(size_t layer, torch::Tensor hidden)
{
    if (!hasUnits(layerId(layer)) || (!shardsParameters() && !shardsGradients()))
        return hidden;
    const bool training = torch::GradMode::is_enabled() && hidden.requires_grad();
    if (!training) {
        releaseUnits(layerId(layer));
        return hidden;
    }
    hidden.register_hook([this, layer](const torch::Tensor&) { beforeLayerBackward(layer); });
    if (reshardAfterForward())
        releaseUnits(layerId(layer));
    return hidden;
}

void DataParallel::beforeHead()
{
    if (shardsParameters())
        gatherUnits(kHeadUnit);
    if (torch::GradMode::is_enabled())
        allocateGradientsOf(kHeadUnit);
}

// Runs when the gradient of the layer's output is complete: the unit above
// (the next layer, or the head) has finished its backward, this layer's is
// about to start.
void DataParallel::beforeLayerBackward(size_t layer)
{
    allocateGradientsOf(layerId(layer));
    if (!shardsParameters())
        return;
    gatherUnits(layerId(layer));
    // The unit above read its frozen base for the last time (its trainable
    // unit goes when its gradients are reduced).
    if (const auto above = frozenUnit(layer + 1 < m_layers ? layerId(layer + 1) : kHeadUnit))
        releaseFrozen(*above);
    if (layer > 0)
        prefetchUnits(layerId(layer - 1));
}

} // namespace tb::train
