#include "arg_parser.h"
#include "commands.h"

#include "common/atomic_file.h"
#include "common/units.h"
#include "tokenizer/tokenizer.h"
#include "train/evaluation.h"
#include "train/model_loader.h"
#include "train/text_documents.h"

#include <nlohmann/json.hpp>

#include <iostream>
#include <thread>
#include <unistd.h>

namespace tb::cli {

int runEval(const Args& args)
{
    ArgParser parser("eval",
        "Mean loss (nats per token) and perplexity of a model on a text file. "
        "Documents are separated by blank lines; each is scored on its own as "
        "the tokenizer encodes it (BOS included), cut to --seq-len tokens.");
    parser.addOption(
        "model", "DIR", "Hugging Face model folder (config.json, safetensors, tokenizer.json)");
    parser.addOption("data", "FILE", "plain text, documents separated by blank lines");
    parser.addOption(
        "seq-len", "N", "tokens per document at most (default: the model's context, up to 2048)");
    parser.addOption("batch", "N", "documents per forward pass (default 8)");
    parser.addOption("limit", "N", "score only the first N documents");
    parser.addOption("dtype", "TYPE", "compute dtype: fp32 (default), bf16 or fp64");
    parser.addOption("threads", "N", "compute threads (default: every core)");
    parser.addFlag("json", "print the result as JSON");
    if (const std::optional<int> status = parser.parseOrExitStatus(args))
        return *status;
    if (!parser.isSet("model") || !parser.isSet("data")) {
        std::cerr << "tunebench-cli eval: --model and --data are required\n\n" << parser.helpText();
        return kExitUsage;
    }
    const auto hardwareThreads =
        static_cast<long long>(std::max(1u, std::thread::hardware_concurrency()));
    const auto batch = parser.integer("batch", 8, 1, 4096);
    const auto limit = parser.integer("limit", 0, 0, 1LL << 40);
    const auto threads = parser.integer("threads", hardwareThreads, 1, 1024);
    const auto dtype = train::parseComputeDType(parser.value("dtype", "fp32"));
    if (!batch || !limit || !threads || !dtype) {
        const common::Error& error = !batch ? batch.error()
            : !limit                        ? limit.error()
            : !threads                      ? threads.error()
                                            : dtype.error();
        std::cerr << "tunebench-cli eval: " << error.toString() << "\n";
        return kExitUsage;
    }
    train::setComputeThreads(static_cast<int>(*threads));

    const std::string modelDir = parser.value("model");
    const std::string dataPath = parser.value("data");
    const auto tokenizer = tokenizer::Tokenizer::load(modelDir);
    if (!tokenizer) {
        std::cerr << "tunebench-cli eval: " << tokenizer.error().toString() << "\n";
        return kExitUsage;
    }
    const auto model = train::loadCausalLm(modelDir, *dtype);
    if (!model) {
        std::cerr << "tunebench-cli eval: " << model.error().toString() << "\n";
        return kExitUsage;
    }
    const train::LlamaConfig& config = train::configOf(**model);
    const auto seqLen = parser.integer("seq-len",
        std::min<long long>(config.maxPositionEmbeddings, 2048), 2, config.maxPositionEmbeddings);
    if (!seqLen) {
        std::cerr << "tunebench-cli eval: " << seqLen.error().toString()
                  << " (the model's max_position_embeddings)\n";
        return kExitUsage;
    }

    const auto text = common::readFile(dataPath);
    if (!text) {
        std::cerr << "tunebench-cli eval: " << text.error().toString() << "\n";
        return kExitUsage;
    }
    const std::vector<std::string> documents =
        train::splitParagraphs(*text, static_cast<size_t>(*limit));
    if (documents.empty()) {
        std::cerr << "tunebench-cli eval: " << dataPath << ": no text to score\n";
        return kExitUsage;
    }
    std::vector<std::vector<std::int32_t>> sequences;
    sequences.reserve(documents.size());
    std::int64_t tokens = 0;
    for (const std::string& document : documents) {
        sequences.push_back(tokenizer->encode(document));
        tokens += static_cast<std::int64_t>(sequences.back().size());
    }

    train::EvalOptions options;
    options.maxTokens = *seqLen;
    options.batchSize = *batch;
    const bool showProgress = !parser.isSet("json") && ::isatty(STDERR_FILENO);
    if (showProgress) {
        options.progress = [](std::int64_t done, std::int64_t total) {
            std::cerr << "\r  " << done << " / " << total << " documents" << std::flush;
            return true;
        };
    }
    const auto result = train::evaluateLoss(**model, sequences, options);
    if (showProgress)
        std::cerr << "\r" << std::string(40, ' ') << "\r";
    if (!result) {
        std::cerr << "tunebench-cli eval: " << result.error().toString() << "\n";
        return kExitFailure;
    }
    const double tokensPerSecond =
        result->seconds > 0 ? static_cast<double>(result->predictedTokens) / result->seconds : 0.0;
    if (parser.isSet("json")) {
        const nlohmann::json out = {{"model", modelDir}, {"data", dataPath},
            {"dtype", std::string(train::computeDTypeName(*dtype))},
            {"documents", result->sequences}, {"tokens", tokens},
            {"predicted_tokens", result->predictedTokens}, {"mean_loss", result->meanLoss},
            {"perplexity", result->perplexity}, {"seq_len", *seqLen}, {"batch", *batch},
            {"truncated_documents", result->truncatedSequences},
            {"dropped_tokens", result->droppedTokens}, {"seconds", result->seconds},
            {"threads", *threads}};
        std::cout << out.dump(2) << "\n";
        return kExitOk;
    }
    std::cout << "model       " << modelDir << " (" << config.modelType << ", "
              << common::formatCount(static_cast<double>(config.parameterCount()))
              << " parameters, " << train::computeDTypeName(*dtype) << ")\n"
              << "data        " << dataPath << ": " << result->sequences << " documents, " << tokens
              << " tokens (" << result->truncatedSequences << " cut to " << *seqLen << ", "
              << result->droppedTokens << " tokens left out)\n"
              << "mean loss   " << common::formatFixed(result->meanLoss, 6) << " nats/token over "
              << result->predictedTokens << " predicted tokens\n"
              << "perplexity  " << common::formatFixed(result->perplexity, 4) << "\n"
              << "time        " << common::formatDuration(result->seconds) << " ("
              << common::formatFixed(tokensPerSecond, 0) << " tokens/s, " << *threads
              << " threads)\n";
    return kExitOk;
}

} // namespace tb::cli
