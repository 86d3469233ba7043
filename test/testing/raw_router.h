// Copyright 2026 The zbrokers Authors.
//
// A raw ROUTER socket that plays the broker in a client or worker test: the
// test reads and writes every frame itself, so each frame the code under
// test sends is checked exactly and any frame can be sent back.  It knows no
// protocol; each test parses what it receives in its own way.
//
// Two ways to drive it:
//   * polled from the test thread: Recv() with a bounded wait, Send();
//   * watched by a Reactor: Watch() delivers every message to a callback on
//     the reactor's thread (the reactor must outlive this object, which
//     removes the watch when destroyed).
//
// Threading: one thread at a time, like the zmq socket it owns; when
// watched, that is the reactor's owner thread.

#ifndef TEST_TESTING_RAW_ROUTER_H_
#define TEST_TESTING_RAW_ROUTER_H_

#include <chrono>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "zbrokers/frames/frames.h"
#include "zbrokers/reactor/reactor.h"

namespace zb::test {

class RawRouter {
 public:
  // Binds `endpoint` (by default a free loopback TCP port); linger 0.
  explicit RawRouter(zmq::context_t& ctx,
                     const std::string& endpoint = "tcp://127.0.0.1:*");
  RawRouter(const RawRouter&) = delete;
  RawRouter& operator=(const RawRouter&) = delete;

  // The endpoint actually bound (the port filled in).
  const std::string& endpoint() const { return endpoint_; }
  zmq::socket_t& socket() { return router_; }

  // The next message, identity first, each frame a string; empty when none
  // came within `limit`.
  std::vector<std::string> Recv(
      std::chrono::milliseconds limit = std::chrono::seconds(5));

  // Sends the frames as they are (the first one is the peer's identity).
  void Send(std::initializer_list<std::string_view> parts);
  void Send(const std::vector<std::string>& parts);
  // Sends [identity][""][body...], a reply routed to one DEALER peer.
  void SendTo(const std::string& identity, Frames body);

  // Delivers every message (identity first) to `on_message` from
  // `reactor`, until this object is destroyed.
  void Watch(Reactor& reactor, Reactor::MessageHandler on_message);

 private:
  zmq::socket_t router_;
  std::string endpoint_;
  Reactor::SocketWatch watch_;  // set by Watch(); destroyed before router_
};

}  // namespace zb::test

#endif  // TEST_TESTING_RAW_ROUTER_H_
