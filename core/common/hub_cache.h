#pragma once

#include "common/error.h"

#include <string>
#include <string_view>

// Models named by their Hugging Face Hub id ("Qwen/Qwen3-8B"), found in the
// local Hub cache as huggingface_hub lays it out and reads it offline:
//   <cache>/models--Qwen--Qwen3-8B/refs/main          the revision (a commit hash)
//   <cache>/models--Qwen--Qwen3-8B/snapshots/<hash>/  the files (links into blobs/)
// Nothing is downloaded.
namespace tb::common {

// The Hub cache folder, as huggingface_hub chooses it: $HF_HUB_CACHE, else
// $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
std::string hubCacheDir();

// "ORG/NAME" with the Hub's characters (letters, digits, '-', '_', '.'),
// neither part "." or "..": what could name a model on the Hub.
bool looksLikeHubId(std::string_view text);

// The snapshot folder of `repoId` at refs/main in hubCacheDir(). Errors name
// the folder or file that is missing and the command that downloads the
// model.
Result<std::string> findCachedModel(const std::string& repoId);

} // namespace tb::common
