// Copyright delayq authors.

#include "tests/testing/worker_output.h"

#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace delayq {
namespace worker {

void Say(const std::string& line) {
  const std::string text = line + "\n";
  if (write(STDOUT_FILENO, text.data(), text.size()) !=
      static_cast<ssize_t>(text.size())) {
    std::_Exit(4);  // the test went away
  }
}

void Die(const std::string& what, const absl::Status& status) {
  Say(absl::StrCat("error ", what, ": ", status.ToString()));
  // _Exit: other threads may still be inside the store.
  std::_Exit(2);
}

}  // namespace worker
}  // namespace delayq
