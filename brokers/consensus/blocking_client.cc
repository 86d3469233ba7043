// Copyright 2026 The zbrokers Authors.

#include "zbrokers/consensus/blocking_client.h"

#include <future>
#include <utility>

namespace zb {

BlockingConsensusClient::BlockingConsensusClient(
    zmq::context_t& context, std::string endpoint,
    ConsensusClient::Options options) {
  // Created on the reactor thread, which owns it from then on.
  client_ = thread_.Invoke([&](Reactor& reactor) {
    return std::make_unique<ConsensusClient>(reactor, context,
                                             std::move(endpoint), options);
  });
}

BlockingConsensusClient::~BlockingConsensusClient() {
  // Destroyed on its own thread: open requests end there ("client closed"),
  // which releases every caller still waiting in Request().
  thread_.Invoke([this](Reactor&) { client_.reset(); });
}

ConsensusClient::Result BlockingConsensusClient::Request(
    std::string_view service, Frames payload,
    const ConsensusClient::RequestOptions& options) {
  std::promise<ConsensusClient::Result> done;
  std::future<ConsensusClient::Result> result = done.get_future();
  // invoke() waits until the request is sent, so references to this frame
  // stay valid; the callback never runs inside request() itself.
  thread_.Invoke([&](Reactor&) {
    client_->request(
        service, std::move(payload), options,
        [&done](ConsensusClient::Result&& r) { done.set_value(std::move(r)); });
  });
  return result.get();
}

bool BlockingConsensusClient::Ping(std::chrono::milliseconds timeout) {
  std::promise<bool> done;
  std::future<bool> result = done.get_future();
  thread_.Invoke([&](Reactor&) {
    client_->ping(timeout, [&done](absl::Status s) { done.set_value(s.ok()); });
  });
  return result.get();
}

absl::Status BlockingConsensusClient::status() {
  return thread_.Invoke([this](Reactor&) { return client_->status(); });
}

ConsensusClient::Stats BlockingConsensusClient::stats() {
  return thread_.Invoke([this](Reactor&) { return client_->stats(); });
}

}  // namespace zb
