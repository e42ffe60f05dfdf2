#include "planner/plan_export.h"

#include "common/atomic_file.h"
#include "common/units.h"
#include "plan/plan_file.h"

#include <sstream>

namespace tb::ui {

namespace {

std::string csvField(const std::string& value)
{
    if (value.find_first_of(",\"\n\r") == std::string::npos)
        return value;
    std::string quoted = "\"";
    for (char c : value) {
        if (c == '"')
            quoted += '"';
        quoted += c;
    }
    return quoted + "\"";
}

// Markdown table cells cannot hold '|' or newlines.
std::string cell(std::string value)
{
    for (char& c : value) {
        if (c == '|')
            c = '/';
        if (c == '\n')
            c = ' ';
    }
    return value;
}

} // namespace

std::string recommendationsCsv(const plan::Recommendation& recommendation)
{
    std::ostringstream out;
    out << "rank,vm_size,gpu,gpus_total,nodes,strategy,precision,fits,per_gpu_bytes,usable_bytes,"
           "tokens_per_second,hours,usd_per_hour,cost_usd,notes\n";
    int rank = 1;
    for (const plan::RecommendedOption& o : recommendation.options) {
        std::string notes;
        for (const std::string& note : o.notes)
            notes += (notes.empty() ? "" : "; ") + note;
        out << rank++ << ',' << csvField(o.vmSize) << ',' << csvField(o.gpuId) << ',' << o.gpusTotal
            << ',' << o.nodes << ',' << plan::toString(o.strategy) << ','
            << plan::toString(o.precision) << ',' << (o.fits ? "true" : "false") << ','
            << static_cast<long long>(o.perGpuBytes) << ',' << static_cast<long long>(o.usableBytes)
            << ',' << o.tokensPerSecond << ',' << o.hours << ',' << o.usdPerHour << ',' << o.costUsd
            << ',' << csvField(notes) << '\n';
    }
    return out.str();
}

std::string planReportMarkdown(const plan::PlanInput& input, const plan::PlanResult& result,
    const plan::Recommendation* recommendation, const ReportImages& images)
{
    using common::formatBytes;
    std::ostringstream md;
    md << "# Fine-tuning plan: " << result.modelName << ", " << plan::toString(input.method)
       << "\n\n";
    md << (result.fits ? "**Fits**" : "**Does not fit**") << ": " << formatBytes(result.perGpuBytes)
       << " per GPU of " << formatBytes(result.usableBytes) << " usable on " << result.gpuId
       << (result.fits ? " (headroom " : " (short by ")
       << formatBytes(result.fits ? result.headroomBytes : -result.headroomBytes) << ").\n\n";
    md << "- Parameters: " << common::formatCount(double(result.paramsTotal)) << " total, "
       << common::formatCount(double(result.paramsTrainable)) << " trainable\n";
    md << "- Hardware: " << result.worldSize << " GPU(s) = " << result.nodes << " node(s) x "
       << result.gpusPerNode << (result.vmSize.empty() ? "" : " on " + result.vmSize) << "\n";
    md << "- Throughput: " << common::formatRate(result.tokensPerSecond, "tokens") << ", step "
       << common::formatDuration(result.stepSeconds) << "\n";
    md << "- Time: " << common::formatDuration(result.hours * 3600.0) << " for "
       << common::formatCount(result.trainingTokens) << " training tokens"
       << (result.costKnown ? ", cost " + common::formatMoney(result.costUsd) : std::string())
       << "\n";
    for (const std::string& warning : result.warnings)
        md << "- Note: " << warning << "\n";
    if (!images.breakdownPng.isEmpty())
        md << "\n![Per-GPU memory](" << images.breakdownPng.toStdString() << ")\n";

    md << "\n## Memory per GPU\n\n| Term | Bytes | How it is computed | Source "
          "|\n|---|---:|---|---|\n";
    for (const plan::MemoryComponent& c : result.memory) {
        if (c.bytes > 0)
            md << "| " << cell(c.label) << " | " << formatBytes(c.bytes) << " | "
               << cell(c.explanation) << " | " << cell(c.source) << " |\n";
    }
    md << "| **Total (device used)** | **" << formatBytes(result.perGpuBytes) << "** | | |\n";
    md << "\nPeaks per GPU: allocated " << formatBytes(result.peaks.allocated)
       << " (torch.cuda.max_memory_allocated), reserved " << formatBytes(result.peaks.reserved)
       << " (max_memory_reserved), device used " << formatBytes(result.peaks.deviceUsed)
       << " (nvidia-smi).\n";
    if (result.cpuBytesPerNode > 0)
        md << "\nCPU memory per node for offload: " << formatBytes(result.cpuBytesPerNode) << " ("
           << cell(result.cpuExplanation) << ")\n";

    md << "\n## Throughput, time and cost\n\n| Figure | Value | How it is computed | Source "
          "|\n|---|---:|---|---|\n";
    for (const plan::Figure& f : result.figures)
        md << "| " << cell(f.label) << " | " << common::formatFixed(f.value, 4) << " " << f.unit
           << " | " << cell(f.explanation) << " | " << cell(f.source) << " |\n";
    if (!images.whatIfPng.isEmpty())
        md << "\n![What-if](" << images.whatIfPng.toStdString() << ")\n";

    if (recommendation && !recommendation->options.empty()) {
        md << "\n## Azure options (best first)\n\n| VM size | GPUs | Nodes | Strategy | Per GPU | "
              "Tokens/s | Hours | Cost |\n|---|---:|---:|---|---:|---:|---:|---:|\n";
        size_t shown = 0;
        for (const plan::RecommendedOption& o : recommendation->options) {
            if (++shown > 15)
                break;
            md << "| " << o.vmSize << " | " << o.gpusTotal << " | " << o.nodes << " | "
               << plan::label(o.strategy) << " | " << formatBytes(o.perGpuBytes) << " | "
               << common::formatCount(o.tokensPerSecond) << " | " << common::formatFixed(o.hours, 1)
               << " | " << common::formatMoney(o.costUsd) << " |\n";
        }
    }
    md << "\n## Plan file\n\n```yaml\n" << plan::planToYaml(input) << "```\n";
    return md.str();
}

common::Status writeTextFile(const QString& path, const std::string& content)
{
    return common::writeFileAtomic(path.toStdString(), content);
}

} // namespace tb::ui
