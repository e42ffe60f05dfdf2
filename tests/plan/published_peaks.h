#pragma once

#include "../support/test_paths.h"
#include "plan/plan_input.h"
#include "plan/plan_options.h"
#include "plan/plan_result.h"

#include <QtTest>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

// tests/plan/data/published_peaks_plans.csv: how each published measurement
// of tests/plan/data/published_peaks.csv (same id; sources there) is planned,
// which of the three peaks it reports, and whether it counts.
namespace published {

// fit: counted and used to judge mechanisms; unexplained: counted, printed,
// marked (the note says why the planner cannot explain it); holdout: an
// independent check, never tuned against; oom: the source ran out of
// memory, so the plan must not fit; unsupported: not planned (note says why).
enum class Use { Fit, Unexplained, Holdout, Oom, Unsupported };

struct Row {
    std::string id;
    std::string model;
    tb::plan::PlanInput input;
    tb::plan::PeakLevel peak = tb::plan::PeakLevel::Device;
    double measuredBytes = 0;
    Use use = Use::Unsupported;
    std::string note;
    int line = 0;
};

inline const std::string kPlansPath =
    tb::test::sourcePath("tests/plan/data/published_peaks_plans.csv");
inline const std::string kPeaksPath = tb::test::sourcePath("tests/plan/data/published_peaks.csv");

// Fields split at commas; the last column (note) keeps any commas it has.
inline std::vector<std::string> splitFields(const std::string& line, size_t columns)
{
    std::vector<std::string> fields;
    size_t start = 0;
    while (fields.size() + 1 < columns) {
        const size_t comma = line.find(',', start);
        if (comma == std::string::npos)
            break;
        fields.push_back(line.substr(start, comma - start));
        start = comma + 1;
    }
    fields.push_back(line.substr(start));
    return fields;
}

[[noreturn]] inline void fail(
    int line, const std::string& field, const std::string& value, const char* expected)
{
    qFatal("%s:%d: field %s is '%s', expected %s", kPlansPath.c_str(), line, field.c_str(),
        value.c_str(), expected);
}

template <typename T>
T parsed(std::optional<T> value, int line, const char* field, const std::string& text,
    const char* expected)
{
    if (!value)
        fail(line, field, text, expected);
    return *value;
}

inline double number(const std::string& text, int line, const char* field)
{
    try {
        size_t used = 0;
        const double value = std::stod(text, &used);
        if (used == text.size())
            return value;
    } catch (const std::exception&) {
    }
    fail(line, field, text, "a number");
}

inline Use useOf(const std::string& text, int line)
{
    static const std::map<std::string, Use> uses{{"fit", Use::Fit},
        {"unexplained", Use::Unexplained}, {"holdout", Use::Holdout}, {"oom", Use::Oom},
        {"unsupported", Use::Unsupported}};
    const auto it = uses.find(text);
    if (it == uses.end())
        fail(line, "use", text, "fit, unexplained, holdout, oom or unsupported");
    return it->second;
}

inline tb::plan::PeakLevel peakOf(const std::string& text, int line)
{
    for (auto level : {tb::plan::PeakLevel::Allocated, tb::plan::PeakLevel::Reserved,
             tb::plan::PeakLevel::Device})
        if (tb::plan::peakKey(level) == text)
            return level;
    fail(line, "peak", text, "peak_allocated, peak_reserved or device_used");
}

inline std::vector<std::string> targetsOf(const std::string& text)
{
    std::vector<std::string> targets;
    std::istringstream in(text);
    for (std::string t; std::getline(in, t, ';');)
        if (!t.empty())
            targets.push_back(t);
    return targets;
}

inline bool flagOf(const std::map<std::string, std::string>& f, const char* column, int line)
{
    const std::string& text = f.at(column);
    if (text != "true" && text != "false")
        fail(line, column, text, "true or false");
    return text == "true";
}

// The `settings` column: plan file keys the columns do not have, as
// key=value separated by ';' ("fsdp.no_sync=true"), set through the option
// table as a plan file sets them.
inline void applySettings(tb::plan::PlanInput& in, const std::string& text, int line)
{
    for (const std::string& setting : targetsOf(text)) {
        const size_t equals = setting.find('=');
        const tb::plan::PlanOption* option = equals == std::string::npos
            ? nullptr
            : tb::plan::findPlanOption(setting.substr(0, equals));
        if (!option)
            fail(line, "settings", setting, "key=value with a plan file key");
        if (const auto refused = tb::plan::assignText(*option, in, setting.substr(equals + 1)))
            fail(line, "settings", setting, refused->c_str());
    }
}

inline tb::plan::PlanInput inputOf(const std::map<std::string, std::string>& f, int line)
{
    using namespace tb::plan;
    PlanInput in;
    in.method = parsed(parseMethod(f.at("method")), line, "method", f.at("method"), "a method");
    in.lora.rank =
        in.method == Method::Full ? 16 : int(number(f.at("lora_rank"), line, "lora_rank"));
    in.lora.targetModules = targetsOf(f.at("lora_targets"));
    in.lora.dropout = number(f.at("lora_dropout"), line, "lora_dropout");
    if (in.method == Method::Qlora)
        in.doubleQuant = flagOf(f, "double_quant", line);
    else if (!f.at("double_quant").empty())
        fail(line, "double_quant", f.at("double_quant"), "empty (QLoRA's alone)");
    in.precision = parsed(
        parsePrecision(f.at("precision")), line, "precision", f.at("precision"), "a precision");
    in.optimizer = parsed(
        parseOptimizer(f.at("optimizer")), line, "optimizer", f.at("optimizer"), "an optimizer");
    in.optimizerKernel = parsed(parseOptimizerKernel(f.at("optimizer_kernel")), line,
        "optimizer_kernel", f.at("optimizer_kernel"), "auto, foreach or fused");
    in.sharding =
        parsed(parseSharding(f.at("sharding")), line, "sharding", f.at("sharding"), "a sharding");
    in.offload =
        parsed(parseOffload(f.at("offload")), line, "offload", f.at("offload"), "an offload");
    in.gpusPerNode = int(number(f.at("gpus"), line, "gpus"));
    in.nodes = 1;
    in.gradientCheckpointing = flagOf(f, "grad_ckpt", line);
    in.microBatch = int(number(f.at("micro_batch"), line, "micro_batch"));
    in.seqLen = int(number(f.at("seq_len"), line, "seq_len"));
    in.gradAccum = int(number(f.at("grad_accum"), line, "grad_accum"));
    in.attention = parsed(
        parseAttention(f.at("attention")), line, "attention", f.at("attention"), "sdpa or eager");
    in.loss = parsed(parseLossMode(f.at("loss")), line, "loss", f.at("loss"), "a loss mode");
    in.lossChunks = int(number(f.at("loss_chunks"), line, "loss_chunks"));
    in.engine = parsed(
        parseEngine(f.at("engine")), line, "engine", f.at("engine"), "reference or hf-trainer");
    applySettings(in, f.at("settings"), line);
    in.gpu = f.at("gpu");
    in.vmSize.clear();
    return in;
}

inline std::vector<Row> readPlans()
{
    std::ifstream file(kPlansPath);
    if (!file)
        qFatal("cannot open %s", kPlansPath.c_str());
    std::string header;
    std::getline(file, header);
    const std::vector<std::string> names = splitFields(header, 1000);
    std::vector<Row> rows;
    int lineNumber = 1;
    for (std::string line; std::getline(file, line);) {
        ++lineNumber;
        if (line.empty())
            continue;
        const std::vector<std::string> values = splitFields(line, names.size());
        if (values.size() != names.size())
            fail(lineNumber, "(row)", line, "one value per column of the header");
        std::map<std::string, std::string> f;
        for (size_t i = 0; i < names.size(); ++i)
            f[names[i]] = values[i];
        Row row;
        row.line = lineNumber;
        row.id = f.at("id");
        row.use = useOf(f.at("use"), lineNumber);
        row.note = f.at("note");
        if (row.use != Use::Unsupported) {
            row.model = f.at("model");
            row.input = inputOf(f, lineNumber);
            row.peak = peakOf(f.at("peak"), lineNumber);
            row.measuredBytes = number(f.at("measured_bytes"), lineNumber, "measured_bytes");
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

// The ids of the measurements file, in order.
inline std::vector<std::string> publishedIds()
{
    std::ifstream file(kPeaksPath);
    if (!file)
        qFatal("cannot open %s", kPeaksPath.c_str());
    std::vector<std::string> ids;
    std::string line;
    std::getline(file, line);
    while (std::getline(file, line))
        if (!line.empty())
            ids.push_back(line.substr(0, line.find(',')));
    return ids;
}

} // namespace published
