// Copyright delayq authors.
//
// A page in Debian's headless Chromium, driven over the DevTools protocol
// on a pipe (--remote-debugging-pipe): evaluate JavaScript in it, wait for
// a condition, take a screenshot. What the dashboard's test clicks with.

#ifndef DELAYQ_TESTS_SERVE_CHROMIUM_PAGE_H_
#define DELAYQ_TESTS_SERVE_CHROMIUM_PAGE_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace delayq {
namespace testing {

class ChromiumPage {
 public:
  // Starts Chromium (CHROMIUM, else /usr/bin/chromium) showing `url` in a
  // window of the given size.
  static absl::StatusOr<std::unique_ptr<ChromiumPage>> Open(
      const std::string& url, int width = 1200, int height = 900);
  ~ChromiumPage();

  ChromiumPage(const ChromiumPage&) = delete;
  ChromiumPage& operator=(const ChromiumPage&) = delete;

  // The value of `expression` (awaited when it is a promise).
  absl::StatusOr<nlohmann::json> Evaluate(const std::string& expression);

  // Evaluates `expression` until it is true; false when it is not within
  // `patience` (a bound for a broken page, not a timing assertion).
  bool WaitFor(const std::string& expression,
               absl::Duration patience = absl::Seconds(60));

  // The page as a PNG.
  absl::StatusOr<std::string> Screenshot();

 private:
  ChromiumPage() = default;
  absl::StatusOr<nlohmann::json> Call(const std::string& method,
                                      nlohmann::json params,
                                      bool in_page = true);
  absl::StatusOr<nlohmann::json> ReadMessage(absl::Duration patience);

  pid_t pid_ = -1;
  int to_browser_ = -1;
  int from_browser_ = -1;
  std::string buffered_;
  std::string session_;
  int next_id_ = 1;
};

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_SERVE_CHROMIUM_PAGE_H_
