// Copyright delayq authors.
//
// Whole files read and written as bytes, for tests and their helpers.

#ifndef DELAYQ_TESTS_TESTING_FILES_H_
#define DELAYQ_TESTS_TESTING_FILES_H_

#include <string>

#include "absl/strings/string_view.h"

namespace delayq {
namespace testing {

// The bytes of the file at `path`; "" when it cannot be read.
std::string ReadFile(const std::string& path);

// Makes the file at `path` hold exactly `data`.
void WriteFile(const std::string& path, absl::string_view data);

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_TESTING_FILES_H_
