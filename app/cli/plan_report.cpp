#include "plan_report.h"

#include "common/units.h"
#include "plan/cpu_device.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

namespace tb::cli {

using common::formatBytes;
using common::formatCount;
using common::formatDuration;
using common::formatFixed;
using common::formatMoney;
using common::formatRate;

namespace {

void row(std::ostream& out, const std::string& label, const std::string& value,
    const std::string& note = {})
{
    out << "  " << std::left << std::setw(34) << label << std::right << std::setw(14) << value;
    if (!note.empty())
        out << "  " << note;
    out << "\n";
}

void because(
    std::ostream& out, bool explain, const std::string& explanation, const std::string& source)
{
    if (!explain || explanation.empty())
        return;
    out << "      = " << explanation << "\n";
    if (!source.empty())
        out << "        [" << source << "]\n";
}

std::string methodText(const plan::PlanInput& in, const plan::PlanResult& r)
{
    std::ostringstream text;
    if (in.method == plan::Method::Full) {
        text << "full fine-tune (" << formatCount(double(r.paramsTrainable)) << " trainable)";
    } else {
        std::string name = in.method == plan::Method::Qlora ? "QLoRA (NF4 base)" : "LoRA";
        if (in.method == plan::Method::Qlora && !in.doubleQuant)
            name = "QLoRA (NF4 base, no double quantization)";
        text << name << " r=" << in.lora.rank << " on ";
        if (in.lora.targetModules.empty()) {
            text << "every linear layer";
        } else {
            for (size_t i = 0; i < in.lora.targetModules.size(); ++i)
                text << (i ? "," : "") << in.lora.targetModules[i];
        }
        for (size_t i = 0; i < in.lora.targetParameters.size(); ++i)
            text << (i ? "," : " and the experts' ") << in.lora.targetParameters[i];
        text << " (" << formatCount(double(r.paramsTrainable)) << " trainable of "
             << formatCount(double(r.paramsTotal)) << ")";
    }
    return text.str();
}

std::string figureValue(const plan::Figure& f)
{
    if (f.unit == "s")
        return f.value < 1 ? formatFixed(f.value * 1000, 1) + " ms"
                           : formatFixed(f.value, 2) + " s";
    if (f.unit == "FLOP")
        return formatCount(f.value);
    if (f.unit == "TFLOP/s") // a CPU's rate reads better in GFLOP/s
        return f.value < 1 ? formatFixed(f.value * 1000, 1) + " GFLOP/s"
                           : formatFixed(f.value, 1) + " TFLOP/s";
    if (f.unit == "USD")
        return formatMoney(f.value);
    if (f.unit == "h")
        return formatDuration(f.value * 3600);
    if (f.key == "optimizer_steps")
        return formatFixed(f.value, 0);
    if (f.key == "utilisation")
        return formatFixed(f.value * 100, 0) + " %";
    if (f.unit == "tokens/s" || f.unit == "samples/s")
        return formatRate(f.value, f.unit.substr(0, f.unit.size() - 2));
    return formatCount(f.value) + (f.unit.empty() ? "" : " " + f.unit);
}

// The components in order, each peak's subtotal after its last component:
// allocated (torch.cuda.max_memory_allocated), then reserved
// (max_memory_reserved); device used is the total.
void printMemory(std::ostream& out, const plan::PlanResult& r, bool explain)
{
    auto subtotal = [&](plan::PeakLevel level, const char* measuredBy) {
        row(out, "= " + std::string(plan::peakLabel(level)), formatBytes(r.peaks.at(level)),
            measuredBy);
    };
    plan::PeakLevel shown = plan::PeakLevel::Allocated;
    for (const plan::MemoryComponent& c : r.memory) {
        const plan::PeakLevel level = plan::peakLevel(c.key);
        if (shown == plan::PeakLevel::Allocated && level != shown)
            subtotal(plan::PeakLevel::Allocated, "torch.cuda.max_memory_allocated");
        if (shown != plan::PeakLevel::Device && level == plan::PeakLevel::Device)
            subtotal(plan::PeakLevel::Reserved, "torch.cuda.max_memory_reserved");
        shown = level;
        row(out, c.label, formatBytes(c.bytes));
        because(out, explain, c.explanation, c.source);
    }
}

// The phases beside forward and backward: the total is the largest of them.
void printPhases(
    std::ostream& out, const plan::PlanInput& in, const plan::PlanResult& r, bool explain)
{
    if (r.phases.size() < 2)
        return;
    row(out, "= Device used, forward/backward", formatBytes(r.peaks.deviceUsed));
    const plan::PhasePeak* peak = r.peakPhase();
    const char* source = in.engine == plan::Engine::Tunebench
        ? "Tunebench's trainer (docs/PLANNER.md 4.11, 4.12)"
        : "docs/PLANNER.md 4.12";
    for (const plan::PhasePeak& p : r.phases) {
        row(out, "  " + std::string(plan::phaseLabel(p.phase)) + " phase", formatBytes(p.bytes),
            &p == peak ? "the peak" : "");
        because(out, explain, p.explanation, source);
    }
}

} // namespace

void printPlan(
    std::ostream& out, const plan::PlanInput& in, const plan::PlanResult& r, bool explain)
{
    out << "Plan: " << r.modelName << ", " << methodText(in, r) << "\n";
    out << "      " << plan::label(*plan::parsePrecision(r.precision)) << ", "
        << plan::toString(in.optimizer) << ", " << plan::label(in.sharding);
    if (in.offload != plan::Offload::None)
        out << ", CPU offload of " << plan::toString(in.offload);
    if (in.engine == plan::Engine::Tunebench)
        out << ", as Tunebench's trainer runs it";
    else if (in.engine == plan::Engine::HfTrainer)
        out << ", as the Hugging Face Trainer runs it with peft";
    out << "\n";
    out << "Hardware: ";
    if (!r.vmSize.empty())
        out << r.nodes << " x " << r.vmSize << " (" << r.gpusPerNode << " x " << r.gpuId
            << " each)";
    else
        out << r.nodes << " node(s) x " << r.gpusPerNode << " x " << r.gpuId;
    out << " = " << r.worldSize << " GPU" << (r.worldSize > 1 ? "s" : "") << "\n";
    if (!r.calibration.empty())
        out << "Calibration: " << r.calibration << " (utilisation, allocator reserve, runtime)\n";
    out << "Batch: micro-batch " << in.microBatch << " x ";
    if (in.data.measured())
        out << in.data.longestRow << " tokens at most (the data's longest row; sequence length "
            << in.seqLen << ") x ";
    else
        out << in.seqLen << " tokens x ";
    out << in.gradAccum << " accumulation x " << r.worldSize << " GPU(s); "
        << (in.gradientCheckpointing ? "activation checkpointing per layer" : "no checkpointing")
        << ", " << (in.attention == plan::Attention::Sdpa ? "SDPA attention" : "eager attention")
        << ", " << plan::toString(plan::resolvedLoss(in)) << " loss\n\n";

    out << "Memory per GPU\n";
    printMemory(out, r, explain);
    printPhases(out, in, r, explain);
    const double usedPercent = r.usableBytes > 0 ? 100.0 * r.perGpuBytes / r.usableBytes : 0;
    row(out, r.phases.size() > 1 ? "= Most in any phase (total)" : "= Device used (total)",
        formatBytes(r.perGpuBytes),
        "of " + formatBytes(r.usableBytes) + " usable (" + formatFixed(usedPercent, 0) + " %); "
            + (r.gpuId == plan::kCpuDeviceId ? "resident memory" : "nvidia-smi"));
    if (r.fits)
        out << "  FITS with " << formatBytes(r.headroomBytes) << " headroom\n";
    else if (r.headroomBytes < 0)
        out << "  DOES NOT FIT: " << formatBytes(-r.headroomBytes)
            << " over the GPU's usable memory\n"
            << "  (try --recommend for sizes that fit; or a smaller --micro-batch or --seq-len,\n"
            << "   --method qlora, more GPUs with --sharding fsdp-full or zero3, or --offload)\n";
    else
        out << "  DOES NOT FIT: the host memory it needs (offloaded states, loading) exceeds the "
               "VM's RAM; see Notes\n";
    if (r.cpuBytesPerNode > 0) {
        row(out, "CPU memory for offload (per node)", formatBytes(r.cpuBytesPerNode));
        because(out, explain, r.cpuExplanation, "ZeRO-Offload / FSDP CPUOffload");
    }
    if (r.loadHostBytesPerNode > 0) {
        row(out, "Host memory while loading (per node)", formatBytes(r.loadHostBytesPerNode));
        because(out, explain, r.loadHostExplanation, "Tunebench's trainer (docs/PLANNER.md 4.11)");
    }
    if (r.checkpointDiskBytes > 0) {
        row(out, "Disk per checkpoint", formatBytes(r.checkpointDiskBytes));
        row(out, "Disk for the export", formatBytes(r.exportDiskBytes));
        because(out, explain, r.diskExplanation, "Tunebench's trainer (docs/PLANNER.md 4.11)");
    }

    out << "\nThroughput, time and cost\n";
    for (const plan::Figure& f : r.figures) {
        row(out, f.label, figureValue(f));
        because(out, explain, f.explanation, f.source);
    }
    if (!r.costKnown)
        row(out, "Cost", "unknown", "no price for this hardware");
    if (!r.warnings.empty()) {
        out << "\nNotes\n";
        for (const std::string& w : r.warnings)
            out << "  - " << w << "\n";
    }
}

void printScaling(std::ostream& out, const std::vector<plan::ScalingPoint>& points)
{
    if (points.size() < 2)
        return;
    out << "\nScaling over nodes (same VM and strategy; efficiency = tokens/s over n x one node)\n "
           " ";
    for (const plan::ScalingPoint& p : points)
        if (p.nodes == 1 || p.nodes == 2 || p.nodes == 4 || p.nodes == 8 || p.nodes == 16
            || p.nodes == points.back().nodes)
            out << p.nodes << " node" << (p.nodes > 1 ? "s " : " ")
                << formatFixed(p.tokensPerSecond, 0) << " tok/s ("
                << formatFixed(p.efficiency * 100, 0) << "%" << (p.fits ? "" : ", does not fit")
                << ")   ";
    out << "\n";
}

void printRecommendation(std::ostream& out, const plan::Recommendation& rec,
    const plan::RecommendOptions& options, bool explain, size_t maxRows)
{
    out << "\nAzure VM sizes that fit, by " << plan::toString(options.rankBy) << " ("
        << rec.evaluated << " plans evaluated" << (rec.cancelled ? ", cancelled" : "") << ")\n";
    if (rec.options.empty()) {
        out << "  none: see the reasons below\n";
    } else {
        out << "  " << std::left << std::setw(4) << "#" << std::setw(30) << "VM size"
            << std::setw(9) << "GPUs" << std::setw(14) << "strategy" << std::right << std::setw(11)
            << "mem/GPU" << std::setw(7) << "used" << std::setw(13) << "tokens/s" << std::setw(12)
            << "time" << std::setw(12) << "cost"
            << "\n";
        const size_t rows = explain ? rec.options.size() : std::min(maxRows, rec.options.size());
        for (size_t i = 0; i < rows; ++i) {
            const plan::RecommendedOption& o = rec.options[i];
            const std::string gpus = std::to_string(o.nodes) + "x" + std::to_string(o.gpusPerNode);
            out << "  " << std::left << std::setw(4) << (i + 1) << std::setw(30) << o.vmSize
                << std::setw(9) << gpus << std::setw(14) << plan::toString(o.strategy) << std::right
                << std::setw(11) << formatBytes(o.perGpuBytes) << std::setw(6)
                << formatFixed(100.0 * o.perGpuBytes / std::max(1.0, o.usableBytes), 0) << "%"
                << std::setw(13) << formatFixed(o.tokensPerSecond, 0) << std::setw(12)
                << formatDuration(o.hours * 3600) << std::setw(12) << formatMoney(o.costUsd);
            if (!o.trainer.runs)
                out << "  [not Tunebench's trainer]";
            for (const std::string& note : o.notes)
                out << "  " << note;
            out << "\n";
        }
        if (rows < rec.options.size())
            out << "  ... " << rec.options.size() - rows << " more (--explain lists all)\n";
        // By reason: a model the trainer does not compute is one line, not
        // one a GPU.
        std::map<std::string, std::set<std::string>> notRunnable;
        for (size_t i = 0; i < rows; ++i)
            if (!rec.options[i].trainer.runs)
                notRunnable[rec.options[i].trainer.reason].insert(rec.options[i].gpuId);
        for (const auto& [reason, gpus] : notRunnable) {
            std::string names;
            for (const std::string& gpu : gpus)
                names.append(names.empty() ? "" : ", ").append(gpu);
            out << "  not Tunebench's trainer: " << names << ": " << reason << "\n";
        }
        // Only where the trainer runs some of them: for a model it does not
        // compute, --runnable-only would leave nothing.
        const bool someRun = std::any_of(rec.options.begin(), rec.options.end(),
            [](const plan::RecommendedOption& o) { return o.trainer.runs; });
        if (!notRunnable.empty() && someRun)
            out << "  (--runnable-only keeps the GPUs Tunebench's own trainer runs on)\n";
    }
    // One line per VM size: the strategies that failed and why, the closest
    // miss first, so 38 sizes x 7 strategies stay readable.
    out << "\nRejected\n";
    std::vector<std::string> order;
    std::map<std::string, std::vector<const plan::RejectedOption*>> byVm;
    for (const plan::RejectedOption& r : rec.rejected) {
        if (!byVm.count(r.vmSize))
            order.push_back(r.vmSize);
        byVm[r.vmSize].push_back(&r);
    }
    std::map<std::string, size_t> fitting;
    for (const plan::RecommendedOption& o : rec.options)
        ++fitting[o.vmSize];
    for (const std::string& vm : order) {
        if (explain) {
            for (const plan::RejectedOption* r : byVm[vm])
                out << "  " << vm << " " << plan::toString(r->strategy) << " nodes " << r->nodesFrom
                    << "-" << r->nodesTo << ": " << plan::toString(r->reason) << ": " << r->detail
                    << "\n";
            continue;
        }
        // The most telling rejection: a strategy that did not fit, the one closest to fitting.
        const plan::RejectedOption* best = nullptr;
        for (const plan::RejectedOption* r : byVm[vm]) {
            if (r->reason == plan::RejectReason::Redundant
                || r->reason == plan::RejectReason::TooManyNodes)
                continue;
            if (!best
                || (r->reason == plan::RejectReason::DoesNotFit
                    && best->reason == plan::RejectReason::DoesNotFit
                    && r->perGpuBytes < best->perGpuBytes))
                best = r;
        }
        if (!best)
            continue;
        out << "  " << std::left << std::setw(38) << vm << std::right;
        if (fitting.count(vm))
            out << "(" << fitting[vm] << " options fit) ";
        if (best->reason == plan::RejectReason::DoesNotFit)
            out << "does-not-fit with " << plan::toString(best->strategy)
                << " (the closest): " << best->detail;
        else
            out << plan::toString(best->reason) << ": " << best->detail;
        out << "\n";
    }
}

} // namespace tb::cli
