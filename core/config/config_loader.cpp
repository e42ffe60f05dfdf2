#include "config/config_loader.h"

#include "common/hub_cache.h"
#include "config/section_readers.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>

namespace tb::config {

namespace fs = std::filesystem;
using detail::checkSchemaKeys;
using detail::MapReader;
using detail::readChoice;
using detail::ReadState;

namespace {

std::string defaultName(const std::string& sourceName)
{
    const fs::path path(sourceName);
    const std::string extension = path.extension().string();
    if ((extension == ".yaml" || extension == ".yml") && !path.stem().empty())
        return path.stem().string();
    return "run";
}

std::string resolvePath(const std::string& path, const fs::path& baseDir)
{
    fs::path resolved(path);
    if (path == "~" || path.starts_with("~/")) {
        if (const char* home = std::getenv("HOME"))
            resolved = fs::path(home) / path.substr(std::min<size_t>(2, path.size()));
    }
    if (resolved.is_relative())
        resolved = baseDir / resolved;
    std::string text = resolved.lexically_normal().string();
    while (text.size() > 1 && text.ends_with('/'))
        text.pop_back();
    return text;
}

void resolveDefaults(RunConfig& config, const ReadState& state, const std::string& sourceName)
{
    if (!state.has("name"))
        config.name = defaultName(sourceName);
    if (!state.has("tokenizer"))
        config.tokenizer = config.model;
    if (!state.has("training.learning_rate"))
        config.training.learningRate = config.method == Method::Full ? 2e-5 : 2e-4;
    if (!state.has("data.packing"))
        config.data.packing = config.data.format == DataFormat::Text;
    if (!state.has("output.export"))
        config.output.exportKind =
            config.method == Method::Full ? ExportKind::Merged : ExportKind::Adapter;
    if (!state.has("output.dir"))
        config.output.dir = "runs/" + config.name;
}

// A model folder, or a Hub id ("Qwen/Qwen3-8B") that names no folder here:
// its snapshot in the local Hugging Face cache when it is there.
std::string resolveModelPath(const std::string& value, const fs::path& baseDir)
{
    const std::string path = resolvePath(value, baseDir);
    std::error_code error;
    if (fs::exists(path, error) || !common::looksLikeHubId(value))
        return path;
    const common::Result<std::string> cached = common::findCachedModel(value);
    return cached ? *cached : path;
}

void resolvePaths(RunConfig& config, const fs::path& baseDir)
{
    config.model = resolveModelPath(config.model, baseDir);
    config.tokenizer = resolveModelPath(config.tokenizer, baseDir);
    for (std::string& file : config.data.trainFiles)
        file = resolvePath(file, baseDir);
    for (std::string& file : config.data.validationFiles)
        file = resolvePath(file, baseDir);
    config.output.dir = resolvePath(config.output.dir, baseDir);
}

void checkPathsExist(const RunConfig& config, const std::string& modelAsWritten, ReadState& state)
{
    std::error_code error;
    if (!fs::is_directory(config.model, error)) {
        std::string problem = "folder " + config.model + " does not exist";
        std::string hint;
        if (common::looksLikeHubId(modelAsWritten)) {
            if (const common::Result<std::string> cached = common::findCachedModel(modelAsWritten);
                !cached) {
                problem += ", and " + cached.error().message;
                hint = cached.error().hint;
            }
        }
        state.problem("model", problem, hint);
    } else if (!fs::is_regular_file(fs::path(config.model) / "config.json", error))
        state.problem("model",
            "folder " + config.model + " has no config.json; expected a Hugging Face model folder");
    const fs::path tokenizer(config.tokenizer);
    const bool tokenizerFound = fs::is_regular_file(tokenizer, error)
        || fs::is_regular_file(tokenizer / "tokenizer.json", error);
    if (!tokenizerFound && state.has("tokenizer"))
        state.problem("tokenizer",
            config.tokenizer + " is neither a tokenizer.json nor a folder holding one");
    else if (!tokenizerFound && fs::is_directory(config.model, error))
        state.problem("model", "folder " + config.model + " has no tokenizer.json",
            "set tokenizer to the folder or file that has one");
    const auto checkFiles = [&](const std::vector<std::string>& files, const std::string& key) {
        for (const std::string& file : files) {
            if (!fs::is_regular_file(file, error))
                state.problem(key, "file " + file + " does not exist");
        }
    };
    checkFiles(config.data.trainFiles, "data.train");
    checkFiles(config.data.validationFiles, "data.validation_file");
}

// Records where each document starts and ignores its content.
class DocumentStarts : public YAML::EventHandler {
public:
    YAML::Mark start;

    void OnDocumentStart(const YAML::Mark& mark) override { start = mark; }
    void OnDocumentEnd() override { }
    void OnNull(const YAML::Mark&, YAML::anchor_t) override { }
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override { }
    void OnScalar(
        const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override
    {
    }
    void OnSequenceStart(
        const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override
    {
    }
    void OnSequenceEnd() override { }
    void OnMapStart(
        const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override
    {
    }
    void OnMapEnd() override { }
};

struct DocumentScan {
    int count = 0; // at most 3
    YAML::Mark second; // where the second document starts
};

// Counts the documents of `text` without YAML::LoadAll: yaml-cpp 0.7 does not
// get past some malformed input (a plain scalar that starts with a comma,
// jbeder/yaml-cpp#1040), reporting empty documents at the same place for
// ever, and LoadAll then allocates until the process is killed. A document
// that starts where the one before it did is reported as invalid YAML there.
DocumentScan scanDocuments(const std::string& text)
{
    std::istringstream input(text);
    YAML::Parser parser(input);
    DocumentScan scan;
    DocumentStarts handler;
    std::optional<YAML::Mark> previous;
    while (scan.count < 3 && parser.HandleNextDocument(handler)) {
        if (previous && previous->pos == handler.start.pos)
            throw YAML::ParserException(handler.start, "cannot be parsed from here on");
        previous = handler.start;
        if (++scan.count == 2)
            scan.second = handler.start;
    }
    return scan;
}

void readDocument(const YAML::Node& root, RunConfig& config, ReadState& state)
{
    MapReader top(root, "", state.problems);
    top.recordNodes(state.nodes);
    top.string("name", config.name, false, "a run name");
    if (!top.has("model"))
        state.problems.add(detail::problemAt(root, YAML::Node(), "model",
            "missing; expected the path of a Hugging Face "
            "model folder"));
    top.string("model", config.model, false, "the path of a Hugging Face model folder");
    top.string("tokenizer", config.tokenizer, false, "a tokenizer.json or its folder");
    readChoice(top, "method", config.method);
    readChoice(top, "objective", config.objective);
    top.boolean("activation_checkpointing", config.activationCheckpointing);
    if (readChoice(top, "precision", config.precision) && config.precision == Precision::Fp16Mixed)
        top.report("precision",
            "got " + top.value("precision").Scalar() + ", expected fp32, bf16-mixed or bf16",
            "the trainer has no fp16 loss scaling; bf16-mixed needs none");
    readChoice(top, "device", config.device);
    detail::readLoraSection(top, config, state);
    detail::readDpoSection(top, config, state);
    detail::readDataSection(top, config, state);
    detail::readTrainingSection(top, config, state);
    detail::readOutputSection(top, config, state);
    detail::readDistributedSection(top, config, state);
    if (!state.has("data.train"))
        state.problems.add(detail::problemAt(state.has("data") ? state.nodes.at("data") : root,
            YAML::Node(), "data.train", "missing; expected the training file(s)"));
    checkSchemaKeys(top);
}

} // namespace

LoadReport parseRunConfig(std::string_view yamlText, const LoadOptions& options)
{
    LoadReport report;
    report.sourceName = options.sourceName;
    ReadState state{report.problems, report.warnings, {}};
    RunConfig config;
    try {
        const std::string text(yamlText);
        const DocumentScan scan = scanDocuments(text);
        if (scan.count > 1) {
            state.problems.add(ConfigProblem{"", scan.second.line + 1, scan.second.column + 1,
                "holds " + std::string(scan.count > 2 ? "3 or more" : "2")
                    + " YAML documents; expected one",
                {}});
            return report;
        }
        const YAML::Node root = YAML::Load(text);
        if (root.IsNull()) {
            state.problems.add(ConfigProblem{"", 0, 0,
                "is empty; expected a mapping with at least model "
                "and data.train",
                {}});
            return report;
        }
        if (!root.IsMap()) {
            state.problems.add(detail::problemAt(root, YAML::Node(), "",
                "got " + detail::describe(root) + ", expected a mapping of keys"));
            return report;
        }
        readDocument(root, config, state);
        // Cross-key rules run even when a key was wrong, so one pass shows
        // every problem; a wrong key keeps its default, which breaks no rule
        // by itself.
        resolveDefaults(config, state, options.sourceName);
        detail::checkCombinations(config, state);
        std::error_code error;
        fs::path baseDir = options.baseDir;
        if (baseDir.empty() && !options.sourceName.empty()
            && fs::path(options.sourceName).has_parent_path())
            baseDir = fs::path(options.sourceName).parent_path();
        if (baseDir.empty() || baseDir.is_relative())
            baseDir = fs::absolute(baseDir.empty() ? fs::path(".") : baseDir, error);
        const std::string modelAsWritten = config.model;
        resolvePaths(config, baseDir);
        if (options.checkPaths)
            checkPathsExist(config, modelAsWritten, state);
    } catch (const YAML::Exception& exception) {
        ConfigProblem problem{"", 0, 0, "not valid YAML: " + exception.msg, {}};
        if (!exception.mark.is_null()) {
            problem.line = exception.mark.line + 1;
            problem.column = exception.mark.column + 1;
        }
        state.problems.add(std::move(problem));
    } catch (const std::exception& exception) {
        state.problems.add(
            ConfigProblem{"", 0, 0, std::string("cannot be read: ") + exception.what(), {}});
    }
    report.problems.sortByPosition();
    report.warnings.sortByPosition();
    if (report.problems.isEmpty())
        report.config = std::move(config);
    return report;
}

LoadReport readRunConfigFile(const std::string& path, LoadOptions options)
{
    if (options.sourceName.empty())
        options.sourceName = path;
    const common::Result<std::string> text = yaml::readYamlFile(path);
    if (!text.ok()) {
        LoadReport report;
        report.sourceName = options.sourceName;
        report.problems.add(ConfigProblem{"", 0, 0, text.error().message, {}});
        return report;
    }
    return parseRunConfig(text.value(), options);
}

common::Result<RunConfig> loadRunConfig(const std::string& path, LoadOptions options)
{
    LoadReport report = readRunConfigFile(path, std::move(options));
    if (!report.ok())
        return report.error();
    return std::move(*report.config);
}

} // namespace tb::config
