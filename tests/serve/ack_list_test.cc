// Copyright delayq authors.
//
// The ack list's two readers: the quick one takes the plain shape a client
// sends, and on every body, plain or not, reading it the quick way first
// gives what the general way (a parsed tree) gives: the same leases or the
// same error.

#include "tools/serve/api/ack_list.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace delayq {
namespace serve {
namespace {

// The general way on its own: what the route did before the quick one.
absl::StatusOr<std::vector<LeaseName>> GeneralAckList(const std::string& body) {
  absl::StatusOr<Json> json = ParseBody(body);
  if (!json.ok()) return json.status();
  return AckListFromJson(*json);
}

void ExpectSameAckList(const std::string& body) {
  SCOPED_TRACE(body);
  const absl::StatusOr<std::vector<LeaseName>> read = ReadAckList(body);
  const absl::StatusOr<std::vector<LeaseName>> general = GeneralAckList(body);
  ASSERT_EQ(read.status(), general.status());
  if (!read.ok()) return;
  ASSERT_EQ(read->size(), general->size());
  for (size_t i = 0; i < read->size(); ++i) {
    EXPECT_EQ((*read)[i].id, (*general)[i].id);
    EXPECT_EQ((*read)[i].token, (*general)[i].token);
  }
}

std::string Acks(int n) {
  std::string list;
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&list, i ? "," : "", "{\"id\":\"j", i, "\",\"token\":\"",
                    i + 1, "\"}");
  }
  return absl::StrCat("{\"leases\":[", list, "]}");
}

TEST(AckListTest, TheQuickWayTakesThePlainAckList) {
  std::optional<std::vector<LeaseName>> items = AckListFromText(
      R"({"leases":[{"id":"a","token":"7"},{"token":18446744073709551615,"id":"b"}]})");
  ASSERT_TRUE(items.has_value());
  ASSERT_EQ(items->size(), 2u);
  EXPECT_EQ((*items)[0].id, "a");
  EXPECT_EQ((*items)[0].token, 7u);
  EXPECT_EQ((*items)[1].id, "b");
  EXPECT_EQ((*items)[1].token, 18446744073709551615u);
  EXPECT_TRUE(AckListFromText(Acks(kMaxAcks)).has_value());
  items = AckListFromText(
      " {\"leases\" :\r\n[ {\"token\" : \" 12 \" ,\t\"id\":\"a b\"} ] } ");
  ASSERT_TRUE(items.has_value());
  ASSERT_EQ(items->size(), 1u);
  EXPECT_EQ((*items)[0].id, "a b");
  EXPECT_EQ((*items)[0].token, 12u);
  // Left to the parser, which reads escapes and checks UTF-8.
  EXPECT_FALSE(AckListFromText(R"({"leases":[{"id":"a\u0062","token":1}]})"));
  EXPECT_FALSE(
      AckListFromText("{\"leases\":[{\"id\":\"caf\xc3\xa9\",\"token\":1}]}"));
}

TEST(AckListTest, EveryBodyReadsAsTheGeneralWayReadsIt) {
  const std::vector<std::string> bodies = {
      // Plain.
      R"({"leases":[{"id":"a","token":"1"}]})",
      R"({"leases":[{"id":"a","token":1},{"id":"a","token":"1"}]})",
      R"({"leases":[{"id":"a","token":" 12 "}]})",
      Acks(kMaxAcks),
      " \t\n{ \"leases\" :\r[ { \"token\" : 5 , \"id\" : \"a b\" } ] }\n ",
      R"({"leases":[{"id":"a","token":0}]})",
      R"({"leases":[{"id":"a","token":18446744073709551615}]})",
      // Plain, left to the parser: escapes, bytes beyond ASCII.
      R"({"leases":[{"id":"a\"b\u00e9","token":"1"}]})",
      R"({"leases":[{"id":"caf\u00e9","token":"1"}]})",
      "{\"leases\":[{\"id\":\"caf\xc3\xa9\",\"token\":\"1\"}]}",
      // Not plain.
      "{\"leases\":[{\"id\":\"caf\xc3\",\"token\":\"1\"}]}",        // bad UTF-8
      "{\"leases\":[{\"id\":\"a\tb\",\"token\":\"1\"}]}",           // a raw tab
      "\xef\xbb\xbf{\"leases\":[{\"id\":\"a\",\"token\":\"1\"}]}",  // a BOM
      R"({"leases":[{"id":"a","token":01}]})",
      R"({"leases":[{"id":"a","token":1e3}]})",
      R"({"leases":[{"id":"a","token":18446744073709551616}]})",
      R"({"leases":[{"id":"a","token":1}},])",
      R"({"leases":[{"id":"a","token":1},]})",
      R"({"leases":[{"id":"a","token":1}])",
      R"({"leases":[{"id":"a","token":1},{}]})",
      R"({"leases":[{"id":"a" "token":1}]})",
      R"({"leases":[{"id":"a","token":"1}]})",
      R"({"leases" [{"id":"a","token":1}]})",
      R"({"Leases":[{"id":"a","token":1}]})",
      "",
      "[]",
      "{}",
      "{",
      "7",
      R"({"leases":[]})",
      Acks(kMaxAcks + 1),
      R"({"leases":{}})",
      R"({"leases":null})",
      R"({"leases":[1]})",
      R"({"leases":[[]]})",
      R"({"leases":[{"id":"a"}]})",
      R"({"leases":[{"token":"1"}]})",
      R"({"leases":[{"id":"","token":"1"}]})",
      R"({"leases":[{"id":null,"token":"1"}]})",
      R"({"leases":[{"id":"a","token":null}]})",
      R"({"leases":[{"id":"a","token":-1}]})",
      R"({"leases":[{"id":"a","token":1.0}]})",
      R"({"leases":[{"id":"a","token":"x"}]})",
      R"({"leases":[{"id":"a","token":"18446744073709551616"}]})",
      R"({"leases":[{"id":7,"token":"1"}]})",
      R"({"leases":[{"id":"a","token":"1","extra":0}]})",
      R"({"leases":[{"id":"a","id":"b","token":"1"}]})",
      R"({"leases":[{"id":"a","token":"1","token":"2"}]})",
      R"({"leases":[{"id":"a","token":"1"}],"more":1})",
      R"({"leases":[{"id":"a","token":"1"}],"leases":[{"id":"b","token":"2"}]})",
      R"({"leases":[{"id":"a","token":"1"}]} x)",
  };
  for (const std::string& body : bodies) ExpectSameAckList(body);
}

}  // namespace
}  // namespace serve
}  // namespace delayq
