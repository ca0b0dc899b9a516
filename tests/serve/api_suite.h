// Copyright delayq authors.
//
// The HTTP API's suite: every route and every error path of `delayq serve`,
// on a real server process over loopback. Each store's test instantiates
// ApiTest with a factory of fresh store URLs.

#ifndef DELAYQ_TESTS_SERVE_API_SUITE_H_
#define DELAYQ_TESTS_SERVE_API_SUITE_H_

#include <functional>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "tests/serve/serve_process.h"

namespace delayq {
namespace testing {

struct StoreUrlFactory {
  std::string name;
  std::function<std::string()> fresh_url;
};

inline std::string StoreUrlFactoryName(
    const ::testing::TestParamInfo<StoreUrlFactory>& info) {
  return info.param.name;
}

class ApiTest : public ::testing::TestWithParam<StoreUrlFactory> {
 protected:
  // The largest request body the suite's server accepts.
  static constexpr int kMaxBody = 64 << 10;

  void SetUp() override;
  void TearDown() override;

  // Adds a job and returns its id (expects 201).
  std::string Add(const std::string& topic, Json body);
  // Reserves one job of `topic` now; expects one lease.
  Json ReserveOne(const std::string& topic);

  std::string store_url_;  // the store the server serves
  std::unique_ptr<ServeProcess> server_;
  std::unique_ptr<ApiClient> api_;
};

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_SERVE_API_SUITE_H_
