#include "train/flat_parameters.h"

#include "train/host_read.h"
#include "train/tensor_storage.h"

#include <ATen/DeviceAccelerator.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace tb::train {

int unitOfParameter(const std::string& name)
{
    if (name.starts_with("model.embed_tokens."))
        return kEmbeddingUnit;
    const std::string prefix = "model.layers.";
    if (!name.starts_with(prefix))
        return kHeadUnit;
    const size_t end = name.find('.', prefix.size());
    try {
        return 1 + std::stoi(name.substr(prefix.size(), end - prefix.size()));
    } catch (const std::exception&) {
        return kHeadUnit;
    }
}

std::pair<std::int64_t, std::int64_t> FlatParameters::Unit::shardDecayRange() const
{
    const std::int64_t begin = 0;
    const std::int64_t end = std::clamp<std::int64_t>(decayCount - shardOffset, 0, shardNumel);
    return {begin, end};
}

namespace {

// Host memory for states offloaded from `device`. From a GPU it is pinned,
// so copies to and from it run asynchronously (cudaHostAlloc, through
// LibTorch's caching host allocator); a CPU model (the tests' offload) gets
// ordinary memory of its own.
torch::TensorOptions hostFor(const torch::Device& device, torch::ScalarType type)
{
    return torch::TensorOptions().dtype(type).device(torch::kCPU).pinned_memory(device.is_cuda());
}

} // namespace

void FlatParameters::layOut(
    const std::vector<TrainableParameter>& parameters, std::vector<size_t>& parameterOf)
{
    TORCH_CHECK(!parameters.empty(), "no trainable parameter");
    TORCH_CHECK(m_shard.count >= 1 && m_shard.rank >= 0 && m_shard.rank < m_shard.count,
        "shard rank ", m_shard.rank, " of ", m_shard.count);
    m_modelType = parameters.front().tensor.scalar_type();
    // Units in id order; inside each, decayed parameters first, in model order.
    std::map<int, std::vector<size_t>> members;
    for (int pass = 0; pass < 2; ++pass) {
        for (size_t i = 0; i < parameters.size(); ++i) {
            if (parameters[i].decay == (pass == 0))
                members[unitOfParameter(parameters[i].name)].push_back(i);
        }
    }
    for (const auto& [id, indices] : members) {
        Unit unit;
        unit.id = id;
        for (const size_t i : indices) {
            const TrainableParameter& parameter = parameters[i];
            TORCH_CHECK(parameter.tensor.scalar_type() == m_modelType,
                "trainable parameters must share one dtype: ", parameter.name);
            parameterOf.push_back(i);
            unit.segments.push_back(m_segments.size());
            m_segments.push_back({parameter.name, static_cast<int>(m_units.size()), unit.numel,
                parameter.tensor.sizes().vec(), parameter.tensor.numel(), parameter.decay});
            unit.numel += parameter.tensor.numel();
            if (parameter.decay)
                unit.decayCount += parameter.tensor.numel();
        }
        unit.paddedNumel = (unit.numel + m_shard.count - 1) / m_shard.count * m_shard.count;
        unit.shardNumel = unit.paddedNumel / m_shard.count;
        unit.shardOffset = unit.shardNumel * m_shard.rank;
        m_numel += unit.numel;
        m_units.push_back(std::move(unit));
    }
}

void FlatParameters::makeMasterGradients(Unit& unit, const torch::Device& device)
{
    if (m_offloaded)
        unit.masterGradients = torch::zeros({unit.shardNumel}, hostFor(device, m_masterType));
    else if (unit.masterGradientsSeparate)
        unit.masterGradients =
            torch::zeros({unit.shardNumel}, torch::dtype(m_masterType).device(device));
    else
        unit.masterGradients = unit.gradients.narrow(0, unit.shardOffset, unit.shardNumel);
}

FlatParameters::FlatParameters(std::vector<TrainableParameter> parameters,
    torch::ScalarType masterType, const std::vector<torch::Tensor>& initialMaster, ShardSpec shard,
    bool offloadMaster)
    : m_shard(shard)
    , m_offloaded(offloadMaster)
    , m_masterType(masterType)
{
    TORCH_CHECK(initialMaster.empty() || initialMaster.size() == parameters.size(),
        "initial master values must match the parameters one to one");
    std::vector<size_t> parameterOf; // by segment
    layOut(parameters, parameterOf);
    const torch::Device device = parameters.front().tensor.device();

    torch::NoGradGuard noGrad;
    const auto modelOptions = torch::TensorOptions().dtype(m_modelType).device(device);
    const bool sharded = shard.count > 1;
    for (Unit& unit : m_units) {
        unit.values = torch::zeros({unit.paddedNumel}, modelOptions);
        unit.gradients = torch::zeros({unit.paddedNumel}, modelOptions);
        // The starting values at master precision, whole unit, padding zero.
        torch::Tensor start = torch::zeros({unit.paddedNumel}, modelOptions.dtype(masterType));
        for (const size_t s : unit.segments) {
            const Segment& slot = m_segments[s];
            const size_t i = parameterOf[s];
            const torch::Tensor& from =
                initialMaster.empty() ? parameters[i].tensor : initialMaster[i];
            TORCH_CHECK(from.numel() == slot.numel, "initial value of ", slot.name, " has ",
                from.numel(), " elements, expected ", slot.numel);
            start.narrow(0, slot.offset, slot.numel).copy_(from.reshape({-1}));
            unit.values.narrow(0, slot.offset, slot.numel)
                .copy_(parameters[i].tensor.reshape({-1}));
            torch::Tensor view = unit.values.narrow(0, slot.offset, slot.numel).view(slot.shape);
            parameters[i].tensor.set_data(view);
            parameters[i].tensor.mutable_grad() =
                unit.gradients.narrow(0, slot.offset, slot.numel).view(slot.shape);
        }
        unit.masterSeparate =
            m_offloaded || masterType != m_modelType || (sharded && shard.parameters);
        unit.masterGradientsSeparate = m_offloaded || masterType != m_modelType || sharded;
        const torch::Tensor startShard = start.narrow(0, unit.shardOffset, unit.shardNumel);
        if (m_offloaded) {
            unit.master = torch::empty({unit.shardNumel}, hostFor(device, masterType));
            unit.master.copy_(startShard);
        } else if (unit.masterSeparate) {
            unit.master = startShard.clone();
        } else {
            unit.master = unit.values.narrow(0, unit.shardOffset, unit.shardNumel);
        }
        if (unit.masterSeparate && masterType != m_modelType)
            unit.values.copy_(start); // the model copy rounded from the exact start
        makeMasterGradients(unit, device);
        if (shard.parameters && sharded)
            releaseValues(unit);
        if (shard.gradients && sharded)
            releaseGradients(unit);
    }
    m_parameters = std::move(parameters);
    m_parameterOf = std::move(parameterOf);
}

FlatParameters::FlatParameters(std::vector<TrainableParameter> parameters,
    torch::ScalarType masterType, ShardSpec shard, bool offloadMaster, const torch::Device& device,
    const SliceReader& read)
    : m_shard(shard)
    , m_offloaded(offloadMaster)
    , m_masterType(masterType)
{
    TORCH_CHECK(shard.parameters && shard.gradients && shard.count > 1,
        "a sharded load needs sharded parameters and gradients");
    std::vector<size_t> parameterOf; // by segment
    layOut(parameters, parameterOf);

    torch::NoGradGuard noGrad;
    const auto modelOptions = torch::TensorOptions().dtype(m_modelType).device(device);
    for (Unit& unit : m_units) {
        unit.values = tensorWithoutStorage({unit.paddedNumel}, modelOptions);
        unit.gradients = tensorWithoutStorage({unit.paddedNumel}, modelOptions);
        unit.masterSeparate = true;
        unit.masterGradientsSeparate = true;
        unit.master = m_offloaded ? torch::zeros({unit.shardNumel}, hostFor(device, masterType))
                                  : torch::zeros({unit.shardNumel}, modelOptions.dtype(masterType));
        // This rank's elements [shardOffset, shardOffset + shardNumel) of the
        // unit, segment by segment; the padding stays zero.
        const std::int64_t shardEnd = unit.shardOffset + unit.shardNumel;
        for (const size_t s : unit.segments) {
            const Segment& slot = m_segments[s];
            const std::int64_t from = std::max(slot.offset, unit.shardOffset);
            const std::int64_t to = std::min(slot.offset + slot.numel, shardEnd);
            if (from < to)
                read(parameterOf[s], from - slot.offset,
                    unit.master.narrow(0, from - unit.shardOffset, to - from));
        }
        // Views are taken over storage (LibTorch checks their bounds), which
        // is freed again before any of it is touched.
        allocateStorage(unit.values);
        allocateStorage(unit.gradients);
        for (const size_t s : unit.segments) {
            const Segment& slot = m_segments[s];
            torch::Tensor& tensor = parameters[parameterOf[s]].tensor;
            tensor.set_data(unit.values.narrow(0, slot.offset, slot.numel).view(slot.shape));
            tensor.mutable_grad() =
                unit.gradients.narrow(0, slot.offset, slot.numel).view(slot.shape);
        }
        releaseValues(unit);
        releaseGradients(unit);
        makeMasterGradients(unit, device);
    }
    m_parameters = std::move(parameters);
    m_parameterOf = std::move(parameterOf);
}

torch::Tensor FlatParameters::masterView(const Segment& slot) const
{
    TORCH_CHECK(m_shard.count == 1, "a sharded run gathers its master weights first");
    return m_units[static_cast<size_t>(slot.unit)]
        .master.narrow(0, slot.offset, slot.numel)
        .view(slot.shape);
}

void FlatParameters::accumulateUnitGradients(Unit& unit)
{
    // With a shard group, gradients are summed across ranks into the shard
    // by the data-parallel engine; here only the one-rank case.
    if (!unit.masterGradientsSeparate || m_shard.count > 1)
        return;
    torch::NoGradGuard noGrad;
    if (m_offloaded)
        stageGradientToHost(unit, unit.gradients);
    else
        unit.masterGradients.add_(unit.gradients);
    unit.gradients.zero_();
}

void FlatParameters::accumulateGradients(bool lastMicroStep)
{
    // Offloaded, backward keeps summing into the device buffer, and the sum
    // crosses to the host once per optimizer step: a DDP rank must all-reduce
    // the whole step's gradient, not only its last micro-batch's.
    if (m_offloaded && !lastMicroStep)
        return;
    for (Unit& unit : m_units)
        accumulateUnitGradients(unit);
    drainHostGradients();
}

void FlatParameters::stageGradientToHost(Unit& unit, const torch::Tensor& gradient)
{
    TORCH_CHECK(m_offloaded, "gradients are staged to the host only when offloaded");
    TORCH_CHECK(gradient.numel() == unit.masterGradients.numel(), "staging ", gradient.numel(),
        " gradient elements for a master gradient of ", unit.masterGradients.numel());
    torch::NoGradGuard noGrad;
    const auto length = static_cast<std::int64_t>(gradient.numel());
    HostCopy copy{static_cast<size_t>(&unit - m_units.data()),
        torch::empty({length}, hostFor(gradient.device(), gradient.scalar_type())), std::nullopt};
    const bool fromGpu = gradient.device().is_cuda();
    copy.staging.copy_(gradient.reshape({-1}), /*non_blocking=*/fromGpu);
    if (fromGpu) {
        copy.done.emplace(c10::DeviceType::CUDA);
        copy.done->record(at::accelerator::getCurrentStream(gradient.device().index()));
    }
    m_hostCopies.push_back(std::move(copy));
}

void FlatParameters::drainHostGradients()
{
    torch::NoGradGuard noGrad;
    for (HostCopy& copy : m_hostCopies) {
        if (copy.done)
            copy.done->synchronize();
        m_units[copy.unit].masterGradients.add_(copy.staging);
    }
    m_hostCopies.clear();
}

torch::Tensor FlatParameters::masterAsModel(const Unit& unit, bool fresh) const
{
    const bool same = unit.master.scalar_type() == unit.values.scalar_type()
        && unit.master.device() == unit.values.device();
    if (same && !fresh)
        return unit.master;
    return unit.master.to(unit.values.options(), /*non_blocking=*/false, /*copy=*/true);
}

void FlatParameters::zeroGradients()
{
    torch::NoGradGuard noGrad;
    for (Unit& unit : m_units) {
        if (holdsStorage(unit.gradients))
            unit.gradients.zero_();
        if (unit.masterGradientsSeparate)
            unit.masterGradients.zero_();
    }
}

torch::Tensor FlatParameters::gradientSquares() const
{
    torch::NoGradGuard noGrad;
    const torch::Device device = m_units.front().values.device();
    torch::Tensor sum =
        torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
    for (const Unit& unit : m_units) {
        // The norm in at least fp32 even for a bf16 gradient.
        const torch::Tensor& g = unit.masterGradients;
        const bool narrow = g.scalar_type() == torch::kBFloat16 || g.scalar_type() == torch::kHalf;
        sum += (narrow ? g.to(torch::kFloat) : g).norm().to(device, torch::kDouble).square();
    }
    return sum;
}

double FlatParameters::localGradientSquares() const
{
    return readToHost(gradientSquares());
}

void FlatParameters::scaleGradients(double factor)
{
    torch::NoGradGuard noGrad;
    for (Unit& unit : m_units)
        unit.masterGradients.mul_(factor);
}

void FlatParameters::clipToNorm(double norm, double maxNorm)
{
    if (maxNorm <= 0 || !std::isfinite(norm))
        return;
    const double coefficient = maxNorm / (norm + 1e-6);
    if (coefficient < 1.0)
        scaleGradients(coefficient);
}

double FlatParameters::clipGradientNorm(double maxNorm)
{
    const double norm = std::sqrt(localGradientSquares());
    clipToNorm(norm, maxNorm);
    return norm;
}

void FlatParameters::copyMasterToModel()
{
    if (m_shard.count > 1)
        return;
    torch::NoGradGuard noGrad;
    for (Unit& unit : m_units) {
        if (unit.masterSeparate)
            unit.values.copy_(unit.master, /*non_blocking=*/m_offloaded);
    }
}

namespace {

void keepLarger(ResidentStateBytes& peak, const ResidentStateBytes& now)
{
    peak.parameters = std::max(peak.parameters, now.parameters);
    peak.gradients = std::max(peak.gradients, now.gradients);
    peak.master = std::max(peak.master, now.master);
    peak.masterOnHost = now.masterOnHost;
}

} // namespace

ResidentStateBytes FlatParameters::peakResidentBytes() const
{
    ResidentStateBytes peak = m_peak;
    keepLarger(peak, residentBytes());
    return peak;
}

void FlatParameters::resetPeakResidentBytes()
{
    m_peak = residentBytes();
}

void FlatParameters::releaseValues(Unit& unit)
{
    releaseStorage(unit.values);
}

void FlatParameters::allocateValues(Unit& unit)
{
    if (!holdsStorage(unit.values)) {
        allocateStorage(unit.values);
        keepLarger(m_peak, residentBytes());
    }
}

void FlatParameters::releaseGradients(Unit& unit)
{
    releaseStorage(unit.gradients);
}

void FlatParameters::allocateGradients(Unit& unit)
{
    if (holdsStorage(unit.gradients))
        return;
    allocateStorage(unit.gradients);
    keepLarger(m_peak, residentBytes());
    torch::NoGradGuard noGrad;
    // Written below autograd's version counting: the parameter's .grad
    // views must not look modified to anything that saved them.
    at::AutoDispatchBelowADInplaceOrView guard;
    unit.gradients.zero_();
}

ResidentStateBytes FlatParameters::residentBytes() const
{
    ResidentStateBytes bytes;
    std::set<const void*> seen;
    auto count = [&](const torch::Tensor& tensor, std::int64_t& into) {
        if (!holdsStorage(tensor))
            return;
        const void* storage = tensor.storage().unsafeGetStorageImpl();
        if (seen.insert(storage).second)
            into += static_cast<std::int64_t>(tensor.storage().nbytes());
    };
    for (const Unit& unit : m_units) {
        count(unit.values, bytes.parameters);
        count(unit.gradients, bytes.gradients);
        count(unit.master, bytes.master);
        count(unit.masterGradients, bytes.master);
    }
    bytes.masterOnHost = m_offloaded;
    return bytes;
}

} // namespace tb::train
