// Copyright delayq authors.
//
// wheel_policy.h — what TimingWheel (timing_wheel.h) reads from a policy
// beyond what every policy has: the optional parts. Internal: not part of
// the API.

#ifndef DELAYQ_INTERNAL_WHEEL_POLICY_H_
#define DELAYQ_INTERNAL_WHEEL_POLICY_H_

#include <type_traits>
#include <utility>

namespace delayq {
namespace internal {

// Whether policy P has a Prefetch() for the memory its keys are read from.
template <typename P, typename = void>
inline constexpr bool kWheelPrefetchesKeys = false;
template <typename P>
inline constexpr bool
    kWheelPrefetchesKeys<P, std::void_t<decltype(P::Prefetch(
                                std::declval<const typename P::Stored&>()))>> =
        true;

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_INTERNAL_WHEEL_POLICY_H_
