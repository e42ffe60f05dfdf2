#pragma once

// The two folders Catalog::loadDefault() tries after TUNEBENCH_PRESETS_DIR
// and the one beside the executable (catalog.cpp): the source tree's, for a
// development build, and the configured install prefix's. Generated from
// presets_dirs.cpp.in into one translation unit, not passed as -D to every
// source of tb_plan: ccache hashes a define's value as written, so the
// source tree's absolute path would make all of them miss in a clone at
// another path.
namespace tb::plan {

const char* sourcePresetsDir();
const char* installedPresetsDir();

} // namespace tb::plan
