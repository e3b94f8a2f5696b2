#pragma once
// Where the tests find the source tree (fixtures, data, README) and the build tree (the agent
// binary). Defined in test_paths.cc, the only test file compiled with these paths: every other
// test file compiles with the same command in any clone, so the compiler cache (CCACHE_BASEDIR)
// serves a clone in another directory.

namespace okna::testing {

extern const char kSourceDir[];    // the project's source tree
extern const char kBinaryDir[];    // the build tree (agent/openkeel-node-agent)
extern const char kTestDataDir[];  // tests/data

}  // namespace okna::testing

// The spellings the tests used when these were -D definitions on every test file (test_paths.cc
// itself still gets them that way).
#ifndef OKNA_SOURCE_DIR
#define OKNA_SOURCE_DIR ::okna::testing::kSourceDir
#endif
#ifndef OKNA_BINARY_DIR
#define OKNA_BINARY_DIR ::okna::testing::kBinaryDir
#endif
#ifndef OKNA_TEST_DATA_DIR
#define OKNA_TEST_DATA_DIR ::okna::testing::kTestDataDir
#endif
