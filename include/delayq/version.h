// Copyright delayq authors.
//
// version.h — this build's delayq version (CMakeLists.txt reads it from
// here, so it is written once).

#ifndef DELAYQ_VERSION_H_
#define DELAYQ_VERSION_H_

namespace delayq {

inline constexpr char kVersion[] = "0.1.0";

}  // namespace delayq

#endif  // DELAYQ_VERSION_H_
