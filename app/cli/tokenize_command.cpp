#include "arg_parser.h"
#include "commands.h"

#include "tokenizer/dataset_count.h"
#include "tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <iostream>
#include <iterator>
#include <sstream>

namespace tb::cli {

namespace {

using tokenizer::TokenId;
using tokenizer::Tokenizer;

std::string readStdin()
{
    std::ostringstream buffer;
    buffer << std::cin.rdbuf();
    return buffer.str();
}

int printIds(const Tokenizer& tok, bool addSpecial, bool json)
{
    const std::string text = readStdin();
    const std::vector<TokenId> ids = tok.encode(text, addSpecial);
    if (json) {
        nlohmann::json tokens = nlohmann::json::array();
        for (TokenId id : ids)
            tokens.push_back(tok.idToToken(id).value_or(""));
        const nlohmann::json out = {{"tokenizer", tok.sourcePath()}, {"count", ids.size()},
            {"ids", ids}, {"tokens", tokens}};
        std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
        return kExitOk;
    }
    for (std::size_t i = 0; i < ids.size(); ++i)
        std::cout << (i ? " " : "") << ids[i];
    std::cout << "\n";
    return kExitOk;
}

int printDecoded(const Tokenizer& tok, bool skipSpecial, bool json)
{
    const std::string text = readStdin();
    std::vector<TokenId> ids;
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t start = text.find_first_not_of(" \t\r\n,[]", pos);
        if (start == std::string::npos)
            break;
        const std::size_t end = std::min(text.find_first_of(" \t\r\n,[]", start), text.size());
        long long id = -1;
        const auto [ptr, ec] = std::from_chars(text.data() + start, text.data() + end, id);
        if (ec != std::errc() || ptr != text.data() + end || id < 0
            || static_cast<unsigned long long>(id) >= tok.vocabSize()) {
            std::cerr << "tokenize --decode: stdin: got '" << text.substr(start, end - start)
                      << "', expected token ids from 0 to " << tok.vocabSize() - 1 << "\n";
            return kExitUsage;
        }
        ids.push_back(static_cast<TokenId>(id));
        pos = end;
    }
    const std::string decoded = tok.decode(ids, skipSpecial);
    if (json)
        std::cout << nlohmann::json({{"text", decoded}}).dump() << "\n";
    else
        std::cout << decoded << "\n";
    return kExitOk;
}

int printCount(const Tokenizer& tok, const std::string& file, bool json)
{
    const auto counted = tokenizer::countDatasetTokens(tok, file);
    if (!counted) {
        std::cerr << "tokenize --count: " << counted.error().toString() << "\n";
        return kExitUsage;
    }
    const tokenizer::DatasetTokenCount& c = counted.value();
    const double mean =
        c.records ? static_cast<double>(c.tokensWithSpecial) / static_cast<double>(c.records) : 0.0;
    if (json) {
        const nlohmann::json out = {{"file", file}, {"tokenizer", tok.sourcePath()},
            {"format", c.format}, {"records", c.records}, {"tokens", c.tokens},
            {"tokens_with_special", c.tokensWithSpecial}, {"mean_tokens_per_record", mean},
            {"max_tokens_per_record", c.maxRecordTokens}, {"tokens_by_field", c.tokensByField}};
        std::cout << out.dump(2) << "\n";
        return kExitOk;
    }
    std::cout << "dataset    " << file << " (" << c.format << ", " << c.records << " records)\n"
              << "tokenizer  " << tok.sourcePath() << " (" << tok.summary() << ")\n"
              << "tokens     " << c.tokens << " in text fields, " << c.tokensWithSpecial
              << " with the tokenizer's special tokens per record\n";
    std::ostringstream meanText;
    meanText.precision(1);
    meanText << std::fixed << mean;
    std::cout << "per record mean " << meanText.str() << ", max " << c.maxRecordTokens << "\n";
    for (const auto& [field, tokens] : c.tokensByField)
        std::cout << "  " << field << ": " << tokens << "\n";
    return kExitOk;
}

} // namespace

int runTokenize(const Args& args)
{
    ArgParser parser("tokenize",
        "Print the token ids of stdin, decode ids, or count the tokens "
        "of a dataset file, with a Hugging Face tokenizer.json.");
    parser.addOption("tokenizer", "PATH", "tokenizer.json, or a model folder holding one");
    parser.addOption("count", "FILE",
        "count the tokens of a dataset: *.jsonl, *.json (alpaca records) or "
        "plain text (one record per line)");
    parser.addFlag("decode", "read token ids from stdin and print their text");
    parser.addFlag("no-special",
        "leave out the post-processor's BOS/EOS (and skip special "
        "tokens when decoding)");
    parser.addFlag("json", "print JSON");
    parser.setEpilog("stdin is encoded byte for byte, a final newline included "
                     "(use printf or echo -n to leave it out).");
    if (const std::optional<int> status = parser.parseOrExitStatus(args))
        return *status;
    if (!parser.positionals().empty()) {
        std::cerr << "tokenize: unexpected argument '" << parser.positionals().front()
                  << "' (see --help)\n";
        return kExitUsage;
    }
    if (!parser.isSet("tokenizer")) {
        std::cerr << "tokenize: --tokenizer PATH is required (a tokenizer.json or a model "
                     "folder)\n";
        return kExitUsage;
    }
    if (parser.isSet("count") && parser.isSet("decode")) {
        std::cerr << "tokenize: --count and --decode do not go together\n";
        return kExitUsage;
    }
    const auto loaded = Tokenizer::load(parser.value("tokenizer"));
    if (!loaded) {
        std::cerr << "tokenize: " << loaded.error().toString() << "\n";
        return kExitUsage;
    }
    const bool json = parser.isSet("json");
    const bool noSpecial = parser.isSet("no-special");
    if (parser.isSet("count"))
        return printCount(loaded.value(), parser.value("count"), json);
    if (parser.isSet("decode"))
        return printDecoded(loaded.value(), noSpecial, json);
    return printIds(loaded.value(), !noSpecial, json);
}

} // namespace tb::cli
