#include "tests/support/test_paths.h"

namespace okna::testing {

const char kSourceDir[] = OKNA_SOURCE_DIR;
const char kBinaryDir[] = OKNA_BINARY_DIR;
const char kTestDataDir[] = OKNA_SOURCE_DIR "/tests/data";

}  // namespace okna::testing
