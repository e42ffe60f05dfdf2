#include "arg_parser.h"
#include "commands.h"

#include "tokenizer/tokenizer.h"
#include "train/generation.h"
#include "train/model_loader.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <thread>

namespace tb::cli {

namespace {

// Prints the continuation as it grows. Text is decoded from all ids each
// time (prompt included) so leading-space and multi-byte tokens come out as
// the full decode has them; a trailing U+FFFD may be half a character, so it
// waits for the next token.
class TextStream {
public:
    TextStream(const tokenizer::Tokenizer& tok, std::vector<tokenizer::TokenId> prompt)
        : m_tokenizer(tok)
        , m_ids(std::move(prompt))
        , m_promptText(tok.decode(m_ids, true))
    {
    }

    void add(tokenizer::TokenId id, bool print)
    {
        m_ids.push_back(id);
        if (!print)
            return;
        const std::string text = continuation();
        static const std::string kReplacement = "\xEF\xBF\xBD";
        if (!text.starts_with(m_printed) || text.ends_with(kReplacement))
            return;
        std::cout << text.substr(m_printed.size()) << std::flush;
        m_printed = text;
    }

    // Whatever is not printed yet (all of it when the decode went back on itself).
    std::string rest() const
    {
        const std::string text = continuation();
        return text.starts_with(m_printed) ? text.substr(m_printed.size()) : "\n" + text;
    }

    std::string continuation() const
    {
        const std::string full = m_tokenizer.decode(m_ids, true);
        return full.starts_with(m_promptText) ? full.substr(m_promptText.size()) : full;
    }

    const std::string& promptText() const { return m_promptText; }

private:
    const tokenizer::Tokenizer& m_tokenizer;
    std::vector<tokenizer::TokenId> m_ids;
    std::string m_promptText;
    std::string m_printed;
};

} // namespace

int runGenerate(const Args& args)
{
    ArgParser parser("generate",
        "Continue a prompt with a model: greedy by default, sampled with "
        "--temperature above 0 (and --top-p). Stops at the end-of-sequence token.");
    parser.addOption(
        "model", "DIR", "Hugging Face model folder (config.json, safetensors, tokenizer.json)");
    parser.addOption("prompt", "TEXT", "the text to continue (the tokenizer adds BOS)");
    parser.addOption("max-new-tokens", "N", "tokens to add at most (default 128)");
    parser.addOption("temperature", "T", "0 (default) picks the likeliest token; above 0 samples");
    parser.addOption(
        "top-p", "P", "sample from the smallest set of tokens holding P of the mass (default 1)");
    parser.addOption("seed", "S", "sampling seed (default 0): the same seed gives the same text");
    parser.addOption("dtype", "TYPE", "compute dtype: fp32 (default), bf16 or fp64");
    parser.addOption("threads", "N", "compute threads (default: every core)");
    parser.addFlag("json", "print ids, text and why it stopped as JSON");
    if (const std::optional<int> status = parser.parseOrExitStatus(args))
        return *status;
    if (!parser.isSet("model") || !parser.isSet("prompt")) {
        std::cerr << "tunebench-cli generate: --model and --prompt are required\n\n"
                  << parser.helpText();
        return kExitUsage;
    }
    const auto hardwareThreads =
        static_cast<long long>(std::max(1u, std::thread::hardware_concurrency()));
    const auto maxNew = parser.integer("max-new-tokens", 128, 1, 1 << 20);
    const auto temperature = parser.number("temperature", 0.0, 0.0, 100.0);
    const auto topP = parser.number("top-p", 1.0, 1e-6, 1.0);
    const auto seed = parser.integer("seed", 0, 0, std::numeric_limits<long long>::max());
    const auto threads = parser.integer("threads", hardwareThreads, 1, 1024);
    const auto dtype = train::parseComputeDType(parser.value("dtype", "fp32"));
    if (!maxNew || !temperature || !topP || !seed || !threads || !dtype) {
        const common::Error& error = !maxNew ? maxNew.error()
            : !temperature                   ? temperature.error()
            : !topP                          ? topP.error()
            : !seed                          ? seed.error()
            : !threads                       ? threads.error()
                                             : dtype.error();
        std::cerr << "tunebench-cli generate: " << error.toString() << "\n";
        return kExitUsage;
    }
    train::setComputeThreads(static_cast<int>(*threads));

    const std::string modelDir = parser.value("model");
    const auto tokenizer = tokenizer::Tokenizer::load(modelDir);
    if (!tokenizer) {
        std::cerr << "tunebench-cli generate: " << tokenizer.error().toString() << "\n";
        return kExitUsage;
    }
    const auto model = train::loadCausalLm(modelDir, *dtype);
    if (!model) {
        std::cerr << "tunebench-cli generate: " << model.error().toString() << "\n";
        return kExitUsage;
    }
    const train::LlamaConfig& config = train::configOf(**model);
    const std::vector<tokenizer::TokenId> prompt = tokenizer->encode(parser.value("prompt"));
    if (prompt.empty()) {
        std::cerr << "tunebench-cli generate: the prompt encodes to no tokens\n";
        return kExitUsage;
    }

    train::GenerateOptions options;
    options.maxNewTokens = *maxNew;
    options.temperature = *temperature;
    options.topP = *topP;
    options.seed = static_cast<std::uint64_t>(*seed);
    for (const std::int64_t id : config.eosTokenIds)
        options.stopIds.push_back(static_cast<std::int32_t>(id));
    if (const auto eos = tokenizer->eosId())
        options.stopIds.push_back(*eos);
    const bool json = parser.isSet("json");
    TextStream stream(*tokenizer, prompt);
    if (!json)
        std::cout << stream.promptText() << std::flush;
    options.onToken = [&](std::int32_t id) {
        stream.add(id, !json);
        return true;
    };
    const auto produced = train::generate(**model, prompt, options);
    if (!produced) {
        std::cout << "\n";
        std::cerr << "tunebench-cli generate: " << produced.error().toString() << "\n";
        return kExitFailure;
    }
    const bool stopped = !produced->empty()
        && std::find(options.stopIds.begin(), options.stopIds.end(), produced->back())
            != options.stopIds.end();
    const std::string reason = stopped                           ? "end_of_sequence"
        : static_cast<std::int64_t>(produced->size()) == *maxNew ? "max_new_tokens"
                                                                 : "context_length";
    if (json) {
        const nlohmann::json out = {{"prompt", parser.value("prompt")}, {"prompt_ids", prompt},
            {"ids", *produced}, {"text", stream.continuation()}, {"stop_reason", reason},
            {"temperature", *temperature}, {"top_p", *topP}, {"seed", *seed}};
        std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
        return kExitOk;
    }
    std::cout << stream.rest() << "\n";
    std::cerr << "[" << produced->size() << " tokens, stopped: " << reason << "]\n";
    return kExitOk;
}

} // namespace tb::cli
