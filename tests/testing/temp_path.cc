// Copyright delayq authors.

#include "tests/testing/temp_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace delayq {
namespace testing {

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}

std::string FreshTempPath(absl::string_view stem, absl::string_view suffix) {
  // The pid keeps processes apart (helpers share the test's TEST_TMPDIR),
  // the counter keeps calls of one process apart.
  static std::atomic<int> counter{0};
  return absl::StrCat(TempDir(), "/", stem, "-", getpid(), "-",
                      counter.fetch_add(1), suffix);
}

std::string FreshDbPath(absl::string_view stem) {
  return FreshTempPath(stem, ".db");
}

std::string MakeTempDir(absl::string_view stem) {
  const std::string dir = FreshTempPath(stem);
  return mkdir(dir.c_str(), 0700) == 0 ? dir : std::string();
}

}  // namespace testing
}  // namespace delayq
