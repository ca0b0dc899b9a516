// Copyright delayq authors.
//
// FUZZ_CHECK(): a property of a fuzz target. When it does not hold, the
// input is a finding: the message goes to stderr and the process aborts,
// which libFuzzer records as a crash (and saves the input), and which fails
// the target's regression test.
//
//   FUZZ_CHECK(next > after, "Next(", after, ") = ", next);

#ifndef DELAYQ_TESTS_FUZZ_FUZZ_CHECK_H_
#define DELAYQ_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace delayq {
namespace fuzz {

[[noreturn]] inline void PropertyFailed(const char* file, int line,
                                        const char* condition,
                                        const std::string& detail) {
  std::fprintf(stderr, "%s:%d: property failed: %s\n%s\n", file, line,
               condition, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

// Bytes as a C string literal's contents, so that a message shows an
// input's control and non-ASCII bytes as escapes; long ones are cut, with
// their size.
inline std::string Escaped(absl::string_view bytes, size_t max = 400) {
  if (bytes.size() <= max) return absl::CHexEscape(bytes);
  return absl::StrCat(absl::CHexEscape(bytes.substr(0, max)), "...(",
                      bytes.size(), " bytes)");
}

}  // namespace fuzz
}  // namespace delayq

#define FUZZ_CHECK(condition, ...)                                   \
  do {                                                               \
    if (!(condition)) {                                              \
      ::delayq::fuzz::PropertyFailed(__FILE__, __LINE__, #condition, \
                                     ::absl::StrCat(__VA_ARGS__));   \
    }                                                                \
  } while (0)

#endif  // DELAYQ_TESTS_FUZZ_FUZZ_CHECK_H_
