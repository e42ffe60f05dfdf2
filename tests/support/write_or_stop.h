#pragma once

// Set-up that writes an input file and returns something else (a path), so
// it cannot QVERIFY: a failed write stops the suite there, saying which file
// and why, instead of the test failing later on an input that is missing.
#include "common/atomic_file.h"

#include <QtGlobal>

#include <string>

namespace tb::test {

inline void writeOrStop(const std::string& path, const std::string& text)
{
    const common::Status written = common::writeFileAtomic(path, text);
    if (!written.ok())
        qFatal("%s", written.error().toString().c_str());
}

} // namespace tb::test
