// Copyright delayq authors.

#include "tests/serve/chromium_page.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace testing {

using Json = nlohmann::json;

absl::StatusOr<std::unique_ptr<ChromiumPage>> ChromiumPage::Open(
    const std::string& url, int width, int height) {
  const char* env = std::getenv("CHROMIUM");
  const std::string binary = env != nullptr ? env : "/usr/bin/chromium";
  const std::string profile = MakeTempDir("chromium");
  int to[2], from[2];
  if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0) {
    return absl::InternalError("pipe failed");
  }
  std::vector<std::string> args = {
      binary,
      "--headless=new",
      "--no-sandbox",  // tests may run as root
      "--disable-gpu",
      "--no-first-run",
      "--disable-crash-reporter",
      "--disable-extensions",
      "--hide-scrollbars",
      "--remote-debugging-pipe",
      absl::StrCat("--user-data-dir=", profile),
      absl::StrCat("--window-size=", width, ",", height),
      url};
  std::unique_ptr<ChromiumPage> page(new ChromiumPage());
  page->pid_ = fork();
  if (page->pid_ == 0) {
    // The protocol's pipe is fds 3 (commands in) and 4 (replies out). The
    // pipe's ends may already be 3 or 4 (when the test has few files open):
    // copied above them first, so that each dup2() makes a new descriptor,
    // one that exec keeps open.
    const int in = fcntl(to[0], F_DUPFD_CLOEXEC, 10);
    const int out = fcntl(from[1], F_DUPFD_CLOEXEC, 10);
    dup2(in, 3);
    dup2(out, 4);
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, STDERR_FILENO);
    setenv("HOME", profile.c_str(), 1);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(to[0]);
  close(from[1]);
  page->to_browser_ = to[1];
  page->from_browser_ = from[0];
  if (page->pid_ < 0) return absl::InternalError("fork failed");

  // Attach to the page the browser opened.
  absl::StatusOr<Json> targets = page->Call("Target.getTargets", Json::object(),
                                            /*in_page=*/false);
  if (!targets.ok()) return targets.status();
  for (const Json& t : (*targets)["targetInfos"]) {
    if (t["type"] != "page") continue;
    absl::StatusOr<Json> attached =
        page->Call("Target.attachToTarget",
                   {{"targetId", t["targetId"]}, {"flatten", true}},
                   /*in_page=*/false);
    if (!attached.ok()) return attached.status();
    page->session_ = (*attached)["sessionId"].get<std::string>();
    return page;
  }
  return absl::InternalError("chromium opened no page");
}

ChromiumPage::~ChromiumPage() {
  if (pid_ > 0) {
    Call("Browser.close", Json::object(), /*in_page=*/false).IgnoreError();
    close(to_browser_);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (from_browser_ >= 0) close(from_browser_);
}

absl::StatusOr<Json> ChromiumPage::ReadMessage(absl::Duration patience) {
  const absl::Time give_up = absl::Now() + patience;
  for (;;) {
    const size_t end = buffered_.find('\0');
    if (end != std::string::npos) {
      Json message = Json::parse(buffered_.substr(0, end), nullptr, false);
      buffered_.erase(0, end + 1);
      return message;
    }
    const absl::Duration left = give_up - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError("chromium did not answer");
    }
    pollfd p = {from_browser_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1) <=
        0) {
      continue;
    }
    char buf[65536];
    const ssize_t n = read(from_browser_, buf, sizeof(buf));
    if (n <= 0) return absl::UnavailableError("chromium went away");
    buffered_.append(buf, n);
  }
}

absl::StatusOr<Json> ChromiumPage::Call(const std::string& method, Json params,
                                        bool in_page) {
  const int id = next_id_++;
  Json request = {
      {"id", id}, {"method", method}, {"params", std::move(params)}};
  if (in_page) request["sessionId"] = session_;
  const std::string text = request.dump() + std::string(1, '\0');
  if (write(to_browser_, text.data(), text.size()) !=
      static_cast<ssize_t>(text.size())) {
    return absl::UnavailableError("cannot write to chromium");
  }
  for (;;) {
    absl::StatusOr<Json> message = ReadMessage(absl::Seconds(60));
    if (!message.ok()) return message.status();
    if (!message->contains("id") || (*message)["id"] != id) continue;  // event
    if (message->contains("error")) {
      return absl::InternalError((*message)["error"].dump());
    }
    return (*message)["result"];
  }
}

absl::StatusOr<Json> ChromiumPage::Evaluate(const std::string& expression) {
  absl::StatusOr<Json> result =
      Call("Runtime.evaluate", {{"expression", expression},
                                {"awaitPromise", true},
                                {"returnByValue", true}});
  if (!result.ok()) return result.status();
  if (result->contains("exceptionDetails")) {
    return absl::InternalError((*result)["exceptionDetails"].dump());
  }
  return (*result)["result"].value("value", Json());
}

bool ChromiumPage::WaitFor(const std::string& expression,
                           absl::Duration patience) {
  const absl::Time give_up = absl::Now() + patience;
  while (absl::Now() < give_up) {
    absl::StatusOr<Json> v = Evaluate(expression);
    if (v.ok() && v->is_boolean() && v->get<bool>()) return true;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return false;
}

absl::StatusOr<std::string> ChromiumPage::Screenshot() {
  absl::StatusOr<Json> shot =
      Call("Page.captureScreenshot", {{"format", "png"}});
  if (!shot.ok()) return shot.status();
  std::string png;
  if (!absl::Base64Unescape((*shot)["data"].get<std::string>(), &png)) {
    return absl::InternalError("bad screenshot data");
  }
  return png;
}

}  // namespace testing
}  // namespace delayq
