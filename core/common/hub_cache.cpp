#include "common/hub_cache.h"

#include "common/atomic_file.h"
#include "common/text.h"

#include <cstdlib>
#include <filesystem>

namespace tb::common {

namespace fs = std::filesystem;

namespace {

std::string environment(const char* name)
{
    const char* value = std::getenv(name);
    return value ? std::string(value) : std::string();
}

bool isHubPart(std::string_view part)
{
    if (part.empty() || part == "." || part == "..")
        return false;
    for (const char c : part) {
        const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
            || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
        if (!allowed)
            return false;
    }
    return true;
}

std::string downloadHint(const std::string& repoId)
{
    return "download it first: hf download " + repoId + " (huggingface_hub's CLI)";
}

} // namespace

std::string hubCacheDir()
{
    for (const char* name : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"})
        if (std::string dir = environment(name); !dir.empty())
            return dir;
    if (std::string home = environment("HF_HOME"); !home.empty())
        return home + "/hub";
    if (std::string cache = environment("XDG_CACHE_HOME"); !cache.empty())
        return cache + "/huggingface/hub";
    return environment("HOME") + "/.cache/huggingface/hub";
}

bool looksLikeHubId(std::string_view text)
{
    const size_t slash = text.find('/');
    return slash != std::string_view::npos && text.find('/', slash + 1) == std::string_view::npos
        && isHubPart(text.substr(0, slash)) && isHubPart(text.substr(slash + 1));
}

Result<std::string> findCachedModel(const std::string& repoId)
{
    if (!looksLikeHubId(repoId))
        return Error{"'" + repoId + "' is not a Hugging Face Hub id (ORG/NAME)", {}};
    std::string folder = "models--" + repoId;
    folder.replace(folder.find('/'), 1, "--");
    const fs::path repo = fs::path(hubCacheDir()) / folder;
    std::error_code error;
    if (!fs::is_directory(repo, error))
        return Error::at(repo.string(), {},
            repoId + " is not in the Hugging Face cache (" + hubCacheDir() + ")",
            downloadHint(repoId));
    const fs::path ref = repo / "refs" / "main";
    const Result<std::string> revision = readFile(ref.string());
    if (!revision)
        return Error::at(
            ref.string(), {}, "no revision recorded for the main branch", downloadHint(repoId));
    const std::string hash = trim(*revision);
    if (hash.empty() || hash.find_first_not_of("0123456789abcdef") != std::string::npos)
        return Error::at(ref.string(), {}, "got '" + hash + "', expected a commit hash");
    const fs::path snapshot = repo / "snapshots" / hash;
    if (!fs::is_regular_file(snapshot / "config.json", error))
        return Error::at(snapshot.string(), {},
            "the cached snapshot of " + repoId + " has no config.json", downloadHint(repoId));
    return snapshot.string();
}

} // namespace tb::common
