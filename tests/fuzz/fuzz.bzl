"""delayq_fuzz_target: one libFuzzer target, in two builds.

    delayq_fuzz_target(
        name = "url",
        srcs = ["url_fuzz.cc"],  # defines LLVMFuzzerTestOneInput
        deps = [...],
    )

makes

  :url_regression  a cc_test of the normal (g++) build that runs every file
                   of corpus/url/ and regressions/url/ through the target, so
                   `bazel test //...` replays every seed and every past
                   finding;
  :url             with --config=fuzz (clang, .bazelrc), a libFuzzer binary;
                   without it, the same replay program as the test, for
                   running one input by hand. Tagged manual: `//...` does not
                   build it, and the CMake build leaves it out.

Inputs that still fail because their fix is not in yet wait in
known_failures/<name>/, which neither build replays.

An input must mean the same to both builds: a target takes each value from
its FuzzedDataProvider in a statement of its own, never two in one
expression, whose order of evaluation g++ and clang choose differently.
"""

def delayq_fuzz_target(name, srcs, deps = [], size = "small"):
    data = native.glob([
        "corpus/%s/**" % name,
        "regressions/%s/**" % name,
    ])
    native.cc_test(
        name = name + "_regression",
        size = size,
        srcs = srcs,
        data = data,
        deps = deps + [":corpus_runner"],
    )
    native.cc_binary(
        name = name,
        testonly = True,
        srcs = srcs,
        deps = deps + select({
            ":libfuzzer": [],
            "//conditions:default": [":corpus_runner"],
        }),
        linkopts = select({
            ":libfuzzer": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        tags = [
            "libfuzzer",
            "manual",
        ],
    )
