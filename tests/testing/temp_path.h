// Copyright delayq authors.
//
// temp_path.h — where tests, helper processes and benchmarks put their files.
//
// Everything goes under the test's scratch directory ($TEST_TMPDIR, which
// Bazel sets and cleans; /tmp otherwise), with names no other call of any
// process returns, so tests running side by side never meet.
//
//   const std::string db = testing::FreshTempPath("restart", ".db");
//   const std::string dir = testing::MakeTempDir("cli");

#ifndef DELAYQ_TESTS_TESTING_TEMP_PATH_H_
#define DELAYQ_TESTS_TESTING_TEMP_PATH_H_

#include <string>

#include "absl/strings/string_view.h"

namespace delayq {
namespace testing {

// TempDir()
//
// The scratch directory: $TEST_TMPDIR when set and not empty, else /tmp.
std::string TempDir();

// FreshTempPath()
//
// A path in TempDir() named `stem`-PID-N`suffix`, with N counting the calls
// of this process. Nothing is created.
std::string FreshTempPath(absl::string_view stem,
                          absl::string_view suffix = "");

// FreshDbPath()
//
// FreshTempPath(`stem`, ".db"): a database file no other test uses.
std::string FreshDbPath(absl::string_view stem = "delayq");

// MakeTempDir()
//
// Creates a fresh directory in TempDir() (mode 0700, named as by
// FreshTempPath()) and returns its path; empty when it cannot be made.
std::string MakeTempDir(absl::string_view stem);

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_TESTING_TEMP_PATH_H_
