// Copyright delayq authors.
//
// ParseRedisUrl(): every part, and a precise InvalidArgument otherwise.

#include <unistd.h>

#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "delayq/redis_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace {

using ::delayq::testing::StatusIs;
using ::testing::HasSubstr;

TEST(ParseRedisUrlTest, HostAndPortKeepEveryOtherDefault) {
  ASSERT_OK_AND_ASSIGN(RedisOptions o,
                       ParseRedisUrl("redis://example.org:7000"));
  const RedisOptions defaults;
  EXPECT_EQ(o.host, "example.org");
  EXPECT_EQ(o.port, 7000);
  EXPECT_EQ(o.password, "");
  EXPECT_EQ(o.db, 0);
  EXPECT_EQ(o.ns, defaults.ns);
  EXPECT_EQ(o.delay_buckets, defaults.delay_buckets);
  EXPECT_EQ(o.dead_cap, defaults.dead_cap);
  EXPECT_EQ(o.pool_size, defaults.pool_size);
  EXPECT_EQ(o.command_timeout, defaults.command_timeout);
  EXPECT_EQ(o.time_source, RedisOptions::TimeSource::kCaller);
}

TEST(ParseRedisUrlTest, EveryPart) {
  ASSERT_OK_AND_ASSIGN(
      RedisOptions o,
      ParseRedisUrl(
          "redis://:s%40cret@10.0.0.5:6380/3?namespace=orders&"
          "time=server&max_skew_ms=40&buckets=8&timeout_ms=250&pool=3&"
          "shards=16"));
  EXPECT_EQ(o.password, "s@cret");
  EXPECT_EQ(o.host, "10.0.0.5");
  EXPECT_EQ(o.port, 6380);
  EXPECT_EQ(o.db, 3);
  EXPECT_EQ(o.ns, "orders");
  EXPECT_EQ(o.time_source, RedisOptions::TimeSource::kServer);
  EXPECT_EQ(o.delay_buckets, 8);
  EXPECT_EQ(o.command_timeout, absl::Milliseconds(250));
  EXPECT_EQ(o.pool_size, 3);
  EXPECT_EQ(o.shards, 16);
  EXPECT_EQ(o.max_clock_skew, absl::Milliseconds(40));
}

TEST(ParseRedisUrlTest, TlsSchemesAndSettings) {
  ASSERT_OK_AND_ASSIGN(RedisOptions plain, ParseRedisUrl("redis://h:6379"));
  EXPECT_FALSE(plain.tls.enabled);
  ASSERT_OK_AND_ASSIGN(
      RedisOptions o,
      ParseRedisUrl("rediss://u:pw@redis.example.com:6380/2?tls_ca_file=/etc/"
                    "ca.pem&tls_cert_file=/c.pem&tls_key_file=/k%20ey.pem&"
                    "tls_server_name=r.internal"));
  EXPECT_TRUE(o.tls.enabled);
  EXPECT_EQ(o.host, "redis.example.com");
  EXPECT_EQ(o.port, 6380);
  EXPECT_EQ(o.db, 2);
  EXPECT_EQ(o.username, "u");
  EXPECT_EQ(o.tls.ca_file, "/etc/ca.pem");
  EXPECT_EQ(o.tls.cert_file, "/c.pem");
  EXPECT_EQ(o.tls.key_file, "/k ey.pem");
  EXPECT_EQ(o.tls.server_name, "r.internal");
  EXPECT_FALSE(o.tls.insecure);  // never the default
  ASSERT_OK_AND_ASSIGN(o, ParseRedisUrl("rediss://h:1?tls_insecure=1"));
  EXPECT_TRUE(o.tls.insecure);
  ASSERT_OK_AND_ASSIGN(
      o, ParseRedisUrl("rediss+sentinel://s1:26379,s2:26380/main?db=1"));
  EXPECT_TRUE(o.tls.enabled);
  EXPECT_EQ(o.sentinel_master, "main");
  ASSERT_EQ(o.sentinels.size(), 2u);
}

TEST(ParseRedisUrlTest, ClusterNodes) {
  ASSERT_OK_AND_ASSIGN(
      RedisOptions o,
      ParseRedisUrl("redis+cluster://u:p%2Fw@h1:7000,[::1]:7001?namespace=q"));
  ASSERT_EQ(o.cluster_nodes.size(), 2u);
  EXPECT_EQ(o.cluster_nodes[0].host, "h1");
  EXPECT_EQ(o.cluster_nodes[0].port, 7000);
  EXPECT_EQ(o.cluster_nodes[1].host, "::1");
  EXPECT_EQ(o.cluster_nodes[1].port, 7001);
  EXPECT_EQ(o.username, "u");
  EXPECT_EQ(o.password, "p/w");
  EXPECT_EQ(o.ns, "q");
  EXPECT_FALSE(o.tls.enabled);
  ASSERT_OK_AND_ASSIGN(o, ParseRedisUrl("rediss+cluster://h1:7000"));
  EXPECT_TRUE(o.tls.enabled);
}

TEST(ParseRedisUrlTest, AclUserAndPassword) {
  ASSERT_OK_AND_ASSIGN(RedisOptions o,
                       ParseRedisUrl("redis://jobs%2Dw:p%40ss@h:6379"));
  EXPECT_EQ(o.username, "jobs-w");
  EXPECT_EQ(o.password, "p@ss");
  ASSERT_OK_AND_ASSIGN(o, ParseRedisUrl("redis+unix://app:pw@/r.sock"));
  EXPECT_EQ(o.username, "app");
  EXPECT_EQ(o.password, "pw");
  EXPECT_EQ(o.unix_socket, "/r.sock");
}

TEST(ParseRedisUrlTest, SentinelsAndThePrimarysName) {
  ASSERT_OK_AND_ASSIGN(
      RedisOptions o,
      ParseRedisUrl("redis+sentinel://app:pw@s1:26379,[::1]:26380,s3:26381/"
                    "my%20primary?db=2&namespace=orders&sentinel_password=sp"));
  ASSERT_EQ(o.sentinels.size(), 3u);
  EXPECT_EQ(o.sentinels[0].host, "s1");
  EXPECT_EQ(o.sentinels[0].port, 26379);
  EXPECT_EQ(o.sentinels[1].host, "::1");
  EXPECT_EQ(o.sentinels[1].port, 26380);
  EXPECT_EQ(o.sentinels[2].host, "s3");
  EXPECT_EQ(o.sentinel_master, "my primary");
  EXPECT_EQ(o.sentinel_password, "sp");
  EXPECT_EQ(o.username, "app");
  EXPECT_EQ(o.password, "pw");
  EXPECT_EQ(o.db, 2);
  EXPECT_EQ(o.ns, "orders");
}

TEST(ParseRedisUrlTest, ClockSkewCheckCanBeTurnedOff) {
  ASSERT_OK_AND_ASSIGN(RedisOptions o,
                       ParseRedisUrl("redis://h:1?max_skew_ms=off"));
  EXPECT_EQ(o.max_clock_skew, absl::InfiniteDuration());
}

TEST(ParseRedisUrlTest, Ipv6HostAndCallerTime) {
  ASSERT_OK_AND_ASSIGN(RedisOptions o,
                       ParseRedisUrl("redis://[::1]:6379?time=caller"));
  EXPECT_EQ(o.host, "::1");
  EXPECT_EQ(o.port, 6379);
  EXPECT_EQ(o.time_source, RedisOptions::TimeSource::kCaller);
}

TEST(ParseRedisUrlTest, UnixSocketWithDbAndPassword) {
  ASSERT_OK_AND_ASSIGN(RedisOptions o,
                       ParseRedisUrl("redis+unix:///run/redis/redis.sock"));
  EXPECT_EQ(o.unix_socket, "/run/redis/redis.sock");
  EXPECT_EQ(o.db, 0);
  ASSERT_OK_AND_ASSIGN(
      o, ParseRedisUrl("redis+unix://:p%40ss@/var/run/r%20s.sock?db=3&"
                       "namespace=jobs&pool=2"));
  EXPECT_EQ(o.unix_socket, "/var/run/r s.sock");
  EXPECT_EQ(o.password, "p@ss");
  EXPECT_EQ(o.db, 3);
  EXPECT_EQ(o.ns, "jobs");
  EXPECT_EQ(o.pool_size, 2);
  ASSERT_OK_AND_ASSIGN(o, ParseRedisUrl("redis+unix:///run/a%3Ab.sock"));
  EXPECT_EQ(o.unix_socket, "/run/a:b.sock");
}

TEST(ParseRedisUrlTest, ErrorsDoNotQuoteThePassword) {
  for (const char* url :
       {"redis://:s3cret@localhost", "redis://user:s3cret@localhost",
        "redis+unix://:s3cret@relative.sock",
        "redis+sentinel://u:s3cret@s1:1/m?sentinel_password=s3cret&x=1"}) {
    absl::StatusOr<RedisOptions> o = ParseRedisUrl(url);
    EXPECT_THAT(o, StatusIs(absl::StatusCode::kInvalidArgument)) << url;
    EXPECT_THAT(std::string(o.status().message()),
                ::testing::Not(HasSubstr("s3cret")))
        << url;
    EXPECT_THAT(std::string(o.status().message()), HasSubstr("***")) << url;
  }
}

// As RedactedUrl() hides them, the credentials run to the last '@'; the
// query and the path come after it.
TEST(ParseRedisUrlTest, CredentialsRunToTheLastAt) {
  ASSERT_OK_AND_ASSIGN(RedisOptions o,
                       ParseRedisUrl("redis://:S3c@ret/x@127.0.0.1:6480/2"));
  EXPECT_EQ(o.password, "S3c@ret/x");
  EXPECT_EQ(o.host, "127.0.0.1");
  EXPECT_EQ(o.port, 6480);
  EXPECT_EQ(o.db, 2);
  ASSERT_OK_AND_ASSIGN(
      o, ParseRedisUrl("redis+sentinel://u:p/w@s1:1/main?namespace=q"));
  EXPECT_EQ(o.password, "p/w");
  EXPECT_EQ(o.sentinel_master, "main");
  EXPECT_EQ(o.ns, "q");
  ASSERT_OK_AND_ASSIGN(o, ParseRedisUrl("redis+unix://:a@b%3Fc@/r.sock?db=1"));
  EXPECT_EQ(o.password, "a@b?c");
  EXPECT_EQ(o.unix_socket, "/r.sock");
}

// A '?' or '#' before the last '@' may start a query whose value holds that
// '@' ("h:1?password=p@ss"), or be a password's (":S3cret?Pw@h"): such a
// URL is refused whole, and its error quotes nothing of it.
TEST(ParseRedisUrlTest, AQueryMarkBeforeTheLastAtIsRefused) {
  for (const char* url :
       {"redis://h:1?password=p@ss:7000", "rediss:///h:1?password=@o:700?Zq9",
        "redis://?sentinel_password=@x:1?Zq9", "rediss://@h:1?password=@x:1",
        "redis+unix:///r.sock?password=a@b/Zq9",
        "redis+sentinel://tmp/r.sock?x&sentinel_password=@Zq9:1000?y",
        "redis+unix://host:6379?password=Zq9@/r.sock",
        "redis://:Zq9?Pw#x/y@127.0.0.1:6480/2", "redis://u:Zq9#@h:1"}) {
    absl::StatusOr<RedisOptions> o = ParseRedisUrl(url);
    EXPECT_THAT(o, StatusIs(absl::StatusCode::kInvalidArgument)) << url;
    EXPECT_THAT(std::string(o.status().message()), HasSubstr("%40")) << url;
    EXPECT_THAT(std::string(o.status().message()),
                ::testing::Not(HasSubstr("Zq9")))
        << url;
  }
  ASSERT_OK_AND_ASSIGN(
      RedisOptions o,
      ParseRedisUrl("redis+sentinel://s1:1/m?sentinel_password=p%40ss"));
  EXPECT_EQ(o.sentinel_password, "p@ss");
  ASSERT_OK_AND_ASSIGN(o, ParseRedisUrl("redis://:S3cret%3FPw@h:1"));
  EXPECT_EQ(o.password, "S3cret?Pw");
}

// The sentinels' password may come from a file too, as the server's does;
// given both ways, the URL is refused.
TEST(ParseRedisUrlTest, SentinelPasswordFile) {
  const std::string path = testing::FreshTempPath("sentinel-password");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << "Sent1nel\n";
  const std::string url =
      absl::StrCat("redis+sentinel://s1:1/m?sentinel_password_file=", path);
  ASSERT_OK_AND_ASSIGN(RedisOptions o, ParseRedisUrl(url));
  EXPECT_EQ(o.sentinel_password, "Sent1nel");
  EXPECT_EQ(o.password, "");
  for (const std::string& both :
       {url + "&sentinel_password=x",
        absl::StrCat("redis+sentinel://s1:1/m?sentinel_password=x&"
                     "sentinel_password_file=",
                     path)}) {
    absl::StatusOr<RedisOptions> refused = ParseRedisUrl(both);
    EXPECT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument)) << both;
    EXPECT_THAT(std::string(refused.status().message()), HasSubstr("once"));
  }
  absl::StatusOr<RedisOptions> missing = ParseRedisUrl(url + "-missing");
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("cannot open sentinel_password_file"));
  // Not a parameter of a URL without sentinels.
  EXPECT_THAT(
      ParseRedisUrl(absl::StrCat("redis://h:1?sentinel_password_file=", path)),
      StatusIs(absl::StatusCode::kInvalidArgument));
  unlink(path.c_str());
}

// The password's file is read at parse time: its first line, without the
// line end. Its errors never quote what it holds.
TEST(ParseRedisUrlTest, PasswordFile) {
  const std::string path = testing::FreshTempPath("password");
  auto write = [&](const std::string& text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  };
  const std::string url = absl::StrCat("redis://h:1?password_file=", path);
  write("S3cret?Pw\r\nsecond line\n");
  ASSERT_OK_AND_ASSIGN(RedisOptions o, ParseRedisUrl(url));
  EXPECT_EQ(o.password, "S3cret?Pw");
  EXPECT_EQ(o.username, "");
  write("S3cretPw");
  ASSERT_OK_AND_ASSIGN(
      o, ParseRedisUrl(absl::StrCat("redis://app:@h:1?password_file=", path)));
  EXPECT_EQ(o.username, "app");
  EXPECT_EQ(o.password, "S3cretPw");

  auto expect_error = [](const std::string& url, absl::string_view what) {
    absl::StatusOr<RedisOptions> o = ParseRedisUrl(url);
    EXPECT_THAT(o, StatusIs(absl::StatusCode::kInvalidArgument)) << url;
    EXPECT_THAT(std::string(o.status().message()), HasSubstr(what)) << url;
    EXPECT_THAT(std::string(o.status().message()),
                ::testing::Not(HasSubstr("S3cret")))
        << url;
  };
  expect_error(absl::StrCat("redis://:pw@h:1?password_file=", path),
               "not both");
  expect_error(url + "-missing", "cannot open password_file");
  expect_error("redis://h:1?password_file=%zz", "malformed or empty");
  write("\nS3cretPw\n");
  expect_error(url, "first line is empty");
  write("S3cret" + std::string(5000, 'x'));
  expect_error(url, "longer than 4096 bytes");
  unlink(path.c_str());
}

struct BadUrl {
  const char* url;
  const char* message;  // a part of the expected error text
};

class ParseRedisUrlErrorTest : public ::testing::TestWithParam<BadUrl> {};

TEST_P(ParseRedisUrlErrorTest, IsInvalidArgumentNamingThePart) {
  absl::StatusOr<RedisOptions> o = ParseRedisUrl(GetParam().url);
  EXPECT_THAT(o, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(o.status().message()), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    All, ParseRedisUrlErrorTest,
    ::testing::Values(
        BadUrl{"http://localhost:6379", "scheme must be redis://"},
        BadUrl{"redis://h:1?tls_ca_file=/ca.pem", "scheme must be rediss://"},
        BadUrl{"rediss://h:1?tls_insecure=yes", "tls_insecure='yes'"},
        BadUrl{"rediss://h:1?tls_colour=blue",
               "unknown parameter 'tls_colour'"},
        BadUrl{"rediss://h:1?tls_ca_file=%zz",
               "malformed or empty tls_ca_file"},
        BadUrl{"rediss+unix:///r.sock", "scheme must be"},
        BadUrl{"redis+cluster://h1:7000/2", "a cluster URL has no path"},
        BadUrl{"redis+cluster://h1:7000,h2", "missing port"},
        BadUrl{"redis+cluster://h1:7000?db=1", "unknown parameter 'db'"},
        BadUrl{"redis+unix://run/redis.sock", "must be absolute"},
        BadUrl{"redis+unix://", "must be absolute"},
        BadUrl{"redis+unix://:pw/run/redis.sock", "must end with '@'"},
        BadUrl{"redis+unix:///r.sock?db=x", "db='x'"},
        BadUrl{"redis+unix:///r%zz.sock", "percent escape in the socket"},
        BadUrl{"redis+cluster://us+er:pw:7?x", "not a name or an IP address"},
        BadUrl{"redis://h\xff:1", "not a name or an IP address"},
        // Perhaps "user:password" without its '@': never shown.
        BadUrl{"redis+unix:///app:S3cret", "':' in the socket path as %3A"},
        BadUrl{"redis://h:1?db=2", "unknown parameter 'db'"},
        BadUrl{"redis:/localhost:6379", "scheme"},
        BadUrl{"redis://localhost", "missing port"},
        BadUrl{"redis://:6379", "missing host"},
        BadUrl{"redis://localhost:0", "port is not a number in 1..65535"},
        BadUrl{"redis://localhost:65536", "port is not a number"},
        BadUrl{"redis://localhost:63x9", "port is not a number"},
        BadUrl{"redis://localhost:6379/x", "db after '/' is not"},
        BadUrl{"redis://localhost:6379/-1", "db after '/' is not"},
        BadUrl{"redis://user@localhost:6379", "'user:password@' or"},
        BadUrl{"redis://user:@localhost:6379", "a user needs a password"},
        BadUrl{"redis://%zz:pw@localhost:6379", "percent escape in user"},
        BadUrl{"redis+sentinel://s1:26379", "missing the primary's name"},
        BadUrl{"redis+sentinel://s1:26379/", "missing the primary's name"},
        BadUrl{"redis+sentinel://s1:26379,s2/m", "missing port"},
        BadUrl{"redis+sentinel://s1:26379,:2/m", "missing host"},
        BadUrl{"redis+sentinel://s1:0/m", "port is not a number"},
        BadUrl{"redis+sentinel://s1:1/m?sentinel_password=", "has no value"},
        BadUrl{"redis://h:1?sentinel_password=x",
               "unknown parameter 'sentinel_password'"},
        BadUrl{"redis://:%zz@localhost:6379", "percent escape in password"},
        BadUrl{"redis://[::1:6379", "unclosed"},
        BadUrl{"redis://h:1?namespace=", "'namespace' has no value"},
        BadUrl{"redis://h:1?namespace=a{b}", "braces"},
        BadUrl{"redis://h:1?time=local", "time='local'"},
        BadUrl{"redis://h:1?buckets=0", "buckets='0'"},
        BadUrl{"redis://h:1?buckets=65", "buckets='65'"},
        BadUrl{"redis://h:1?dead_cap=50", "dead_cap is no longer supported"},
        BadUrl{"redis://h:1?max_skew_ms=soon", "max_skew_ms='soon'"},
        BadUrl{"redis://h:1?timeout_ms=1e3", "timeout_ms='1e3'"},
        BadUrl{"redis://h:1?pool=0", "pool='0'"},
        BadUrl{"redis://h:1?shards=0", "shards='0'"},
        BadUrl{"redis://h:1?shards=257", "shards='257'"},
        BadUrl{"redis://h:1?colour=red", "unknown parameter 'colour'"},
        BadUrl{"redis://h:1?pool=2&pool=3", "'pool' given twice"},
        BadUrl{"redis://h:1?pool", "'pool' has no value"}));

}  // namespace
}  // namespace delayq
