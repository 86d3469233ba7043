// Copyright 2026 The zbrokers Authors.

#include "test/testing/raw_router.h"

#include <gtest/gtest.h>

#include <iterator>
#include <utility>
#include <zmq_addon.hpp>

namespace zb::test {

RawRouter::RawRouter(zmq::context_t& ctx, const std::string& endpoint)
    : router_(ctx, zmq::socket_type::router) {
  router_.set(zmq::sockopt::linger, 0);
  router_.bind(endpoint);
  endpoint_ = router_.get(zmq::sockopt::last_endpoint);
}

std::vector<std::string> RawRouter::Recv(std::chrono::milliseconds limit) {
  zmq_pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, limit) <= 0) return {};
  Frames f;
  (void)zmq::recv_multipart(router_, std::back_inserter(f));
  return FramesToStrings(f);
}

void RawRouter::Send(std::initializer_list<std::string_view> parts) {
  Frames f = MakeFrames(parts);
  ASSERT_TRUE(SendFrames(router_, f).ok());
}

void RawRouter::Send(const std::vector<std::string>& parts) {
  Frames f;
  for (const std::string& p : parts) f.push_back(Frame(p));
  ASSERT_TRUE(SendFrames(router_, f).ok());
}

void RawRouter::SendTo(const std::string& identity, Frames body) {
  Frames head;
  head.push_back(Frame(identity));
  head.emplace_back();
  ASSERT_TRUE(SendFrames(router_, head, body).ok());
}

void RawRouter::Watch(Reactor& reactor, Reactor::MessageHandler on_message) {
  absl::StatusOr<Reactor::SocketWatch> watch =
      reactor.Add(router_, std::move(on_message));
  EXPECT_TRUE(watch.ok()) << watch.status();
  if (watch.ok()) watch_ = std::move(*watch);
}

}  // namespace zb::test
