#include "launch/exporters.h"

#include "common/text.h"
#include "common/units.h"
#include "launch/text_quote.h"

#include <array>
#include <cmath>
#include <cstdio>

namespace tb::launch {

namespace {

constexpr std::array<std::pair<ExportFormat, const char*>, 4> kFormats = {{
    {ExportFormat::Torchrun, "torchrun"},
    {ExportFormat::Accelerate, "accelerate"},
    {ExportFormat::AzureMl, "azureml"},
    {ExportFormat::Slurm, "slurm"},
}};

} // namespace

std::optional<ExportFormat> parseExportFormat(std::string_view text)
{
    const std::string lower = common::toLower(text);
    for (const auto& [format, name] : kFormats) {
        if (lower == name)
            return format;
    }
    if (lower == "azure-ml" || lower == "azure")
        return ExportFormat::AzureMl;
    if (lower == "sbatch")
        return ExportFormat::Slurm;
    return std::nullopt;
}

std::vector<std::string> exportFormatNames()
{
    std::vector<std::string> names;
    for (const auto& entry : kFormats)
        names.emplace_back(entry.second);
    return names;
}

namespace {

std::string trainerArgumentWords(const ExportJob& job)
{
    std::string words;
    for (const std::string& argument : job.trainerArguments())
        words += " " + shellQuote(argument);
    return words;
}

} // namespace

std::string trainCommandLine(const ExportJob& job, const std::string& configPath)
{
    return shellQuote(job.program) + " train " + shellQuote(configPath) + trainerArgumentWords(job);
}

std::string launchCommandLine(const ExportJob& job, const std::string& configPath,
    const std::string& nodeRankWord, const std::string& masterAddrWord,
    const std::string& masterPortWord)
{
    std::string line = shellQuote(job.program) + " launch " + shellQuote(configPath) + " --nproc "
        + std::to_string(job.gpusPerNode);
    if (job.nodes > 1)
        line += " --nnodes " + std::to_string(job.nodes) + " --node-rank " + nodeRankWord
            + " --master-addr " + masterAddrWord + " --master-port " + masterPortWord;
    if (!job.trainerArguments().empty())
        line += " --" + trainerArgumentWords(job);
    return line;
}

std::string exportHeader(const ExportJob& job, std::string_view what)
{
    std::string text =
        "# " + std::string(what) + " for " + job.jobName + ", written by tunebench-cli export\n";
    if (!job.source.empty())
        text += "# from " + job.source + "\n";
    text += "# " + std::to_string(job.nodes) + " node(s) x " + std::to_string(job.gpusPerNode)
        + (job.onGpus ? " GPU(s)" : " CPU process(es)") + " = " + std::to_string(job.worldSize())
        + " rank(s)";
    if (!job.vmSize.empty())
        text += " on " + job.vmSize;
    else if (!job.gpu.empty())
        text += " of " + job.gpu;
    text += "; " + std::string(plan::label(job.sharding));
    if (job.offload != plan::Offload::None)
        text += ", CPU offload " + std::string(plan::toString(job.offload));
    text += "\n";
    if (job.hours) {
        char hours[64];
        std::snprintf(hours, sizeof hours, "%.2f", *job.hours);
        text += "# planned training time: " + std::string(hours) + " h\n";
    }
    for (const std::string& note : job.notes)
        text += "# note: " + note + "\n";
    return text;
}

std::string slurmTimeLimit(double plannedHours)
{
    const double hours = std::isfinite(plannedHours) ? std::max(0.0, plannedHours) : 0.0;
    // Capped at 365 days: past that the plan is not a job anyone will queue.
    const long long minutes =
        std::min(365LL * 24 * 60, (long long)std::ceil(hours * 60.0 * 1.25 + 30.0));
    const long long days = minutes / (24LL * 60);
    const long long hh = (minutes / 60) % 24;
    const long long mm = minutes % 60;
    char text[48];
    if (days > 0)
        std::snprintf(text, sizeof text, "%lld-%02lld:%02lld:00", days, hh, mm);
    else
        std::snprintf(text, sizeof text, "%02lld:%02lld:00", hh, mm);
    return text;
}

} // namespace tb::launch
