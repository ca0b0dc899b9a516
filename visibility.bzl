"""Who may depend on delayq's internal targets."""

# Internal targets (a store's machinery, the scheduler's parts, the shared
# store helpers) are for delayq's own libraries, its tests and its
# benchmarks. Programs depend on //:delayq or a public target.
INTERNAL = [
    "//:__pkg__",
    "//backends:__subpackages__",
    "//bench:__subpackages__",
    "//src:__subpackages__",
    "//tests:__subpackages__",
]
