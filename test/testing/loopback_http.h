// Copyright 2026 The zbrokers Authors.
//
// A plain HTTP/1.1 exchange with a server on 127.0.0.1, for the tests of the
// daemon's HTTP endpoints: no client library, so a test sees the bytes the
// server really wrote.  Blocking; reads time out after 10 s (a generous
// bound: a scrape takes milliseconds).

#ifndef TEST_TESTING_LOOPBACK_HTTP_H_
#define TEST_TESTING_LOOPBACK_HTTP_H_

#include <string>
#include <string_view>

namespace zb::test {

// Connects to 127.0.0.1:port, writes `request` as it is and returns every
// byte read until the server closes (headers and body); "" when the
// connection or the write failed.
std::string HttpExchange(int port, std::string_view request);

// HttpExchange() of "GET path HTTP/1.1" with "Connection: close".
std::string HttpGet(int port, std::string_view path);

}  // namespace zb::test

#endif  // TEST_TESTING_LOOPBACK_HTTP_H_
