// Copyright delayq authors.
//
// The main() of a fuzz target's regression test: every file of the target's
// seed corpus (tests/fuzz/corpus/<target>/) and of its past findings
// (tests/fuzz/regressions/<target>/) goes through LLVMFuzzerTestOneInput(),
// one test case each. The target's name is the program's, less
// "_regression", and the folders are read from the working folder, which
// is the workspace's root in the runfiles under both Bazel and CMake.
//
// With file or folder arguments, those are run instead:
//   bazel run //tests/fuzz:url -- /path/to/crash-1234
//
// A property a target checks aborts the process (fuzz_check.h): the test
// fails, and the last "[ RUN ]" line names the input.

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv)
    __attribute__((weak));

namespace {

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The files under `path` (itself, when it is a file), sorted so that runs
// are in the same order everywhere.
void ListFiles(const std::string& path, std::vector<std::string>* out) {
  if (!IsDirectory(path)) {
    struct stat st;
    if (stat(path.c_str(), &st) == 0) out->push_back(path);
    return;
  }
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return;
  std::vector<std::string> names;
  while (dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) ListFiles(path + "/" + name, out);
}

class RunInput : public testing::Test {
 public:
  explicit RunInput(std::string path) : path_(std::move(path)) {}

  void TestBody() override {
    std::ifstream in(path_, std::ios::binary);
    ASSERT_TRUE(in) << "cannot read " << path_;
    const std::string bytes((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
    // A buffer of exactly the input's size, as libFuzzer passes it, so that
    // a sanitizer build sees a read past its end.
    std::unique_ptr<uint8_t[]> data(new uint8_t[bytes.size()]);
    std::memcpy(data.get(), bytes.data(), bytes.size());
    LLVMFuzzerTestOneInput(data.get(), bytes.size());
  }

 private:
  const std::string path_;
};

// Registers one test case per file; `suite` names where they came from.
int Register(const char* suite, const std::vector<std::string>& files) {
  for (const std::string& file : files) {
    const size_t slash = file.rfind('/');
    const std::string name =
        slash == std::string::npos ? file : file.substr(slash + 1);
    testing::RegisterTest(
        suite, name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
        [file]() -> testing::Test* { return new RunInput(file); });
  }
  return static_cast<int>(files.size());
}

std::string TargetName(const char* argv0) {
  std::string name = argv0;
  if (const size_t slash = name.rfind('/'); slash != std::string::npos) {
    name = name.substr(slash + 1);
  }
  const std::string suffix = "_regression";
  if (name.size() > suffix.size() &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
    name.resize(name.size() - suffix.size());
  }
  return name;
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  if (argc > 1) {
    std::vector<std::string> files;
    for (int i = 1; i < argc; ++i) ListFiles(argv[i], &files);
    Register("Given", files);
    return RUN_ALL_TESTS();
  }
  const std::string target = TargetName(argv[0]);
  std::vector<std::string> seeds, regressions;
  ListFiles("tests/fuzz/corpus/" + target, &seeds);
  ListFiles("tests/fuzz/regressions/" + target, &regressions);
  Register("Corpus", seeds);
  Register("Regression", regressions);
  if (seeds.empty()) {
    // Replaying nothing would pass without testing anything.
    testing::RegisterTest("Corpus", "NotEmpty", nullptr, nullptr, __FILE__,
                          __LINE__, [target]() -> testing::Test* {
                            struct Missing : testing::Test {
                              std::string target;
                              void TestBody() override {
                                FAIL() << "no seed inputs in "
                                          "tests/fuzz/corpus/"
                                       << target;
                              }
                            };
                            auto* t = new Missing;
                            t->target = target;
                            return t;
                          });
  }
  return RUN_ALL_TESTS();
}
