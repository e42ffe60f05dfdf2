#pragma once

// The data the tests read, all of it in the repository (TB_SOURCE_DIR is the
// source tree, set for every suite by tests/CMakeLists.txt):
//   the demo model the recipes name, shipped with them (MIT);
//   tests/data/datasets: TinyStories excerpts (CDLA-Sharing-1.0) and
//   synthetic records written for the project;
//   the npm packages of packaging/node-reference.txt, which
//   `packaging/setup.sh test` installs before the tests run.
// TB_SHARED_DATA_DIR (../shared/data) is only for the data we may not
// redistribute (Alpaca, SAMSum), read in place.
#define TB_DEMO_MODEL_DIR TB_SOURCE_DIR "/resources/demo/stories260K"
#define TB_TEST_DATASETS_DIR TB_SOURCE_DIR "/tests/data/datasets"
#define TB_NODE_REFERENCE_DIR TB_SOURCE_DIR "/.venv/node"
