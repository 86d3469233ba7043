// Copyright 2026 The zbrokers Authors.

#include "brokers/common/dealer.h"

#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "zbrokers/common/endpoint.h"

namespace zb {

absl::StatusOr<zmq::socket_t> OpenDealer(zmq::context_t& context,
                                         std::string_view endpoint,
                                         const DealerOptions& options,
                                         std::string_view who) {
  try {
    zmq::socket_t socket(context, zmq::socket_type::dealer);
    socket.set(zmq::sockopt::linger, 0);
    socket.set(zmq::sockopt::maxmsgsize, options.max_message_size > 0
                                             ? options.max_message_size
                                             : std::int64_t{-1});
    if (options.unlimited_hwm) {
      socket.set(zmq::sockopt::sndhwm, 0);
      socket.set(zmq::sockopt::rcvhwm, 0);
    }
    if (options.curve) {
      if (absl::Status s = ApplyCurveClient(socket, *options.curve); !s.ok()) {
        return s;
      }
    }
    SetIpv6For(socket, endpoint);
    socket.connect(std::string(endpoint));
    return socket;
  } catch (const zmq::error_t& e) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: cannot connect to \"%s\": %s", who, endpoint, e.what()));
  }
}

absl::StatusOr<WatchedDealer> OpenWatchedDealer(
    Reactor& reactor, zmq::context_t& context, std::string_view endpoint,
    const DealerOptions& options, std::string_view who,
    Reactor::MessageHandler on_message) {
  absl::StatusOr<zmq::socket_t> socket =
      OpenDealer(context, endpoint, options, who);
  if (!socket.ok()) return socket.status();
  absl::StatusOr<Reactor::SocketWatch> watch =
      reactor.Add(*socket, std::move(on_message));
  if (!watch.ok()) return watch.status();  // closes the socket
  return WatchedDealer{*std::move(socket), *std::move(watch)};
}

}  // namespace zb
