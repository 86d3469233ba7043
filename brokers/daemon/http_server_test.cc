// Copyright 2026 The zbrokers Authors.

#include "brokers/daemon/http_server.h"

#include <atomic>
#include <stdexcept>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/loopback_http.h"

namespace zb {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

using test::HttpExchange;

std::string Get(int port, const std::string& path,
                const std::string& method = "GET") {
  return HttpExchange(port,
                      method + " " + path +
                          " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
}

HttpServer::Routes TestRoutes(std::atomic<int>* calls) {
  return {
      {"/hello",
       [calls] {
         ++*calls;
         return HttpServer::Response{200, "hello\n"};
       }},
      {"/down",
       [] {
         return HttpServer::Response{503, "draining\n"};
       }},
      {"/throws",
       []() -> HttpServer::Response { throw std::runtime_error("boom"); }},
  };
}

TEST(HttpServerTest, ServesRoutesExactly) {
  std::atomic<int> calls{0};
  absl::StatusOr<std::unique_ptr<HttpServer>> s =
      HttpServer::Create("127.0.0.1:0", TestRoutes(&calls));
  ASSERT_TRUE(s.ok()) << s.status();
  const int port = (*s)->port();
  ASSERT_GT(port, 0);
  EXPECT_EQ((*s)->host(), "127.0.0.1");

  const std::string ok = Get(port, "/hello");
  EXPECT_THAT(ok, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(ok, HasSubstr("Content-Length: 6\r\n"));
  EXPECT_THAT(ok, HasSubstr("\r\n\r\nhello\n"));
  EXPECT_THAT(Get(port, "/down"),
              AllOf(StartsWith("HTTP/1.1 503 Service Unavailable\r\n"),
                    HasSubstr("\r\n\r\ndraining\n")));
  EXPECT_THAT(Get(port, "/throws"),
              AllOf(StartsWith("HTTP/1.1 500 "), HasSubstr("boom")));
  // Exact paths only; GET and HEAD only.
  EXPECT_THAT(Get(port, "/hello/more"), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(Get(port, "/"), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(Get(port, "/hello", "POST"),
              AllOf(StartsWith("HTTP/1.1 405"), HasSubstr("Allow: GET, HEAD")));
  const std::string head = Get(port, "/hello", "HEAD");
  EXPECT_THAT(head, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(head, Not(HasSubstr("hello\n")));
  EXPECT_EQ(calls.load(), 2);
}

TEST(HttpServerTest, BusyPortIsReportedInPlainWords) {
  std::atomic<int> calls{0};
  absl::StatusOr<std::unique_ptr<HttpServer>> first =
      HttpServer::Create("127.0.0.1:0", TestRoutes(&calls));
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string address = absl::StrCat("127.0.0.1:", (*first)->port());
  absl::StatusOr<std::unique_ptr<HttpServer>> second =
      HttpServer::Create(address, TestRoutes(&calls));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(
      std::string(second.status().message()),
      "metrics: cannot listen on " + address + ": Address already in use");
  // The first one still serves.
  EXPECT_THAT(Get((*first)->port(), "/hello"), StartsWith("HTTP/1.1 200"));
}

TEST(HttpServerTest, BadAddressesAreReportedInPlainWords) {
  std::atomic<int> calls{0};
  struct Case {
    const char* address;
    const char* why;
  };
  for (const Case& c : {
           Case{"127.0.0.1", "expected HOST:PORT"},
           Case{"127.0.0.1:99999", "expected HOST:PORT"},
           Case{"no-such-host.invalid:5580", "unknown host"},
           Case{"192.0.2.1:0", "Cannot assign requested address"},
           Case{"[::1]:0", "IPv6"},
       }) {
    absl::StatusOr<std::unique_ptr<HttpServer>> s =
        HttpServer::Create(c.address, TestRoutes(&calls));
    ASSERT_FALSE(s.ok()) << c.address;
    EXPECT_THAT(std::string(s.status().message()),
                AllOf(StartsWith(absl::StrCat("metrics: cannot listen on ",
                                              c.address, ": ")),
                      HasSubstr(c.why)));
  }
}

TEST(HttpServerTest, WildcardHostListensEverywhere) {
  std::atomic<int> calls{0};
  absl::StatusOr<std::unique_ptr<HttpServer>> s =
      HttpServer::Create("*:0", TestRoutes(&calls));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->host(), "0.0.0.0");
  EXPECT_THAT(Get((*s)->port(), "/hello"), StartsWith("HTTP/1.1 200"));
}

}  // namespace
}  // namespace zb
