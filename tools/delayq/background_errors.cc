// Copyright delayq authors.

#include "tools/delayq/background_errors.h"

#include "absl/strings/str_cat.h"

namespace delayq {
namespace cli {

void BackgroundErrors::Report(absl::string_view what, const absl::Status& error,
                              absl::Time now) {
  std::string line;
  {
    absl::MutexLock lock(&mu_);
    Kind& kind = kinds_[what];
    if (now - kind.printed < interval_) {
      ++kind.unprinted;
      return;
    }
    line =
        absl::StrCat("delayq: ", what, " failed, retrying: ", error.ToString());
    if (kind.unprinted > 0) {
      absl::StrAppend(&line, " (", kind.unprinted, " more since the last)");
    }
    kind.printed = now;
    kind.unprinted = 0;
  }
  // One write per line, so lines of several threads do not mix.
  absl::StrAppend(&line, "\n");
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

}  // namespace cli
}  // namespace delayq
