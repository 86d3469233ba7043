// Copyright 2026 The zbrokers Authors.

#include "brokers/daemon/http_server.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace zb {

struct HttpServer::Route {
  std::string path;
  Handler handler;
};

namespace {

// civetweb's feature bit for IPv6 (mg_check_feature).
constexpr unsigned kCivetIpv6 = 8;

absl::Status ListenError(std::string_view address, std::string_view why) {
  return absl::UnavailableError(
      absl::StrFormat("metrics: cannot listen on %s: %s", address, why));
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "";
  }
}

// The first message civetweb logs while mg_start2() runs on this thread
// (its error data only says "Failed to setup server ports").
thread_local std::string* t_start_message = nullptr;

int OnCivetLog(const ::mg_connection*, const char* message) {
  if (t_start_message != nullptr && t_start_message->empty() &&
      message != nullptr) {
    *t_start_message = message;
  }
  return 1;  // handled: civetweb prints nothing itself
}

// Connects to host:port and closes at once; errors are ignored.
void Poke(const std::string& host, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) return;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  close(fd);
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Create(
    std::string_view address, Routes routes) {
  static std::once_flag civet_init;
  std::call_once(civet_init, [] { mg_init_library(0); });

  const std::size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string_view::npos ||
      !absl::SimpleAtoi(absl::string_view(address.data() + colon + 1,
                                          address.size() - colon - 1),
                        &port) ||
      port < 0 || port > 65535) {
    return ListenError(address, "expected HOST:PORT, e.g. 127.0.0.1:5580");
  }
  std::string host(address.substr(0, colon));
  if (host.find(':') != std::string::npos) {
    if (mg_check_feature(kCivetIpv6) == 0) {
      return ListenError(
          address,
          "IPv6 addresses are not supported by this build of civetweb (the "
          "HTTP library); use an IPv4 address such as 127.0.0.1 or 0.0.0.0");
    }
    return ListenError(address, "IPv6 addresses are not supported");
  }
  if (host.empty() || host == "*") host = "0.0.0.0";

  // Resolve to a numeric IPv4 address, which is all civetweb accepts.
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
      rc != 0 || res == nullptr) {
    return ListenError(address, absl::StrFormat("unknown host \"%s\" (%s)",
                                                host, gai_strerror(rc)));
  }
  sockaddr_in addr = *reinterpret_cast<const sockaddr_in*>(res->ai_addr);
  freeaddrinfo(res);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  char numeric[INET_ADDRSTRLEN] = "";
  inet_ntop(AF_INET, &addr.sin_addr, numeric, sizeof(numeric));

  // Bind once by hand for errno's words (address in use, not ours, ...).
  {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return ListenError(address, std::strerror(errno));
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    const bool bound =
        bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
    const int err = errno;
    close(fd);
    if (!bound) return ListenError(address, std::strerror(err));
  }

  std::unique_ptr<HttpServer> server(new HttpServer());
  server->host_ = numeric;
  const std::string ports = absl::StrFormat("%s:%d", numeric, port);
  const char* options[] = {"listening_ports",
                           ports.c_str(),
                           "num_threads",
                           "2",
                           "request_timeout_ms",
                           "10000",
                           "enable_keep_alive",
                           "no",
                           nullptr};
  mg_callbacks callbacks{};
  callbacks.log_message = OnCivetLog;
  mg_init_data init{&callbacks, nullptr, options};
  char error_text[256] = "";
  unsigned error_code = 0;
  mg_error_data error{&error_code, error_text, sizeof(error_text)};
  std::string first_message;
  t_start_message = &first_message;
  server->context_ = mg_start2(&init, &error);
  t_start_message = nullptr;
  if (server->context_ == nullptr) {
    return ListenError(address, !first_message.empty() ? first_message
                                : error_text[0] != '\0'
                                    ? std::string(error_text)
                                    : std::string("civetweb did not start"));
  }
  mg_server_port bound[4];
  if (mg_get_server_ports(server->context_, 4, bound) > 0) {
    server->port_ = bound[0].port;
  }
  for (auto& [path, handler] : routes) {
    server->routes_.push_back(
        std::make_unique<Route>(Route{path, std::move(handler)}));
    Route* route = server->routes_.back().get();
    // "$": this path exactly, not everything below it.
    mg_set_request_handler(server->context_, (route->path + "$").c_str(),
                           &HttpServer::Dispatch, route);
  }
  return server;
}

HttpServer::~HttpServer() {
  if (context_ == nullptr) return;
  // civetweb's listener thread notices the stop request only when its
  // poll() wakes, after up to 2 s; connecting to it wakes it at once.  Keep
  // poking until mg_stop() has returned.
  std::atomic<bool> stopped{false};
  const std::string host = host_ == "0.0.0.0" ? "127.0.0.1" : host_;
  std::thread poker([&] {
    while (!stopped.load()) {
      Poke(host, port_);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  mg_stop(context_);
  stopped.store(true);
  poker.join();
}

int HttpServer::Dispatch(::mg_connection* conn, void* data) {
  const Route& route = *static_cast<const Route*>(data);
  const mg_request_info* info = mg_get_request_info(conn);
  const std::string_view method =
      info != nullptr && info->request_method != nullptr ? info->request_method
                                                         : "";
  Response response;
  std::string extra_headers;
  if (method != "GET" && method != "HEAD") {
    response = {405, "only GET and HEAD\n"};
    extra_headers = "Allow: GET, HEAD\r\n";
  } else {
    try {
      response = route.handler();
    } catch (const std::exception& e) {
      response = {500, absl::StrFormat("error: %s\n", e.what())};
    } catch (...) {
      response = {500, "error\n"};
    }
  }
  const std::string head = absl::StrFormat(
      "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n"
      "Cache-Control: no-store\r\n%sConnection: close\r\n\r\n",
      response.status, ReasonPhrase(response.status), response.content_type,
      response.body.size(), extra_headers);
  mg_write(conn, head.data(), head.size());
  if (method != "HEAD") {
    mg_write(conn, response.body.data(), response.body.size());
  }
  return response.status;  // non-zero: handled
}

}  // namespace zb
