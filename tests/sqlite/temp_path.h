// Copyright delayq authors.
//
// Fresh file names for SQLite tests, under the test's temporary directory.

#ifndef DELAYQ_TESTS_SQLITE_TEMP_PATH_H_
#define DELAYQ_TESTS_SQLITE_TEMP_PATH_H_

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace delayq {
namespace testing {

// The test's scratch directory (TEST_TMPDIR under Bazel, else /tmp).
inline std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}

// A path in TempDir() that no other call in this process returns.
inline std::string FreshDbPath(absl::string_view stem = "delayq") {
  static std::atomic<int> counter{0};
  return absl::StrCat(TempDir(), "/", stem, "-", getpid(), "-",
                      counter.fetch_add(1), ".db");
}

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_SQLITE_TEMP_PATH_H_
