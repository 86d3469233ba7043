// Copyright 2026 The zbrokers Authors.
//
// zb::HttpServer is the daemon's small HTTP server (civetweb) for the
// operational endpoints: /metrics, /healthz and /readyz (daemon.h decides
// what each says).
//
//   absl::StatusOr<std::unique_ptr<zb::HttpServer>> server =
//       zb::HttpServer::Create("127.0.0.1:5580", {
//           {"/healthz", [] { return zb::HttpServer::Response{200, "ok\n"}; }},
//       });
//   if (!server.ok()) { /* "metrics: cannot listen on ...: why" */ }
//   int port = (*server)->port();   // the real port for "host:0"
//
// Addresses are "host:port".  The host is an IPv4 address, a name (resolved
// to its first IPv4 address: civetweb takes numeric addresses only), or
// "*" / "0.0.0.0" / "" for every interface; port 0 picks a free port.
// IPv6 hosts are refused with a clear message when civetweb was built
// without IPv6 (Debian 12's is).  Before civetweb starts, the address is
// resolved and bound once by hand, so that a busy port, an unknown host or
// an address this machine does not have is reported in plain words (errno's
// text) rather than as civetweb's "Failed to setup server ports".
//
// Requests: GET and HEAD on the exact paths given; anything else is 404
// (unknown path) or 405 (other methods).  Responses close the connection.
// Two HTTP threads serve requests, so a slow scrape does not hold up a
// health probe; a request that does not arrive within 10 s is dropped.
//
// Threading: handlers run on civetweb's threads, concurrently with
// everything else in the process and with each other: they must be
// thread-safe.  Create() and the destructor are called from one thread; the
// destructor returns once no handler runs any more.

#ifndef ZB_BROKERS_DAEMON_HTTP_SERVER_H_
#define ZB_BROKERS_DAEMON_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

struct mg_connection;
struct mg_context;

namespace zb {

class HttpServer {
 public:
  struct Response {
    int status = 200;
    std::string body;
    std::string content_type = "text/plain; charset=utf-8";
  };
  using Handler = std::function<Response()>;
  using Routes = std::vector<std::pair<std::string, Handler>>;

  // Listens on `address` and serves `routes`.  Errors are Unavailable with
  // a message "metrics: cannot listen on ADDRESS: WHY".
  static absl::StatusOr<std::unique_ptr<HttpServer>> Create(
      std::string_view address, Routes routes);

  // Stops listening and waits for running handlers.
  ~HttpServer();

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound port.
  int port() const { return port_; }
  // The numeric host it listens on ("127.0.0.1", "0.0.0.0").
  const std::string& host() const { return host_; }

 private:
  struct Route;
  HttpServer() = default;
  static int Dispatch(::mg_connection* conn, void* route);

  mg_context* context_ = nullptr;
  std::vector<std::unique_ptr<Route>> routes_;
  std::string host_;
  int port_ = 0;
};

}  // namespace zb

#endif  // ZB_BROKERS_DAEMON_HTTP_SERVER_H_
