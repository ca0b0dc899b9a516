// Copyright delayq authors.
//
// version.h — this build's delayq version (CMakeLists.txt reads it from
// here, so it is written once).

#ifndef DELAYQ_VERSION_H_
#define DELAYQ_VERSION_H_

namespace delayq {

inline constexpr char kVersion[] = "0.1.0";

// Version()
//
// kVersion, for callers that would rather call a function: "0.1.0".
constexpr const char* Version() { return kVersion; }

}  // namespace delayq

#endif  // DELAYQ_VERSION_H_
