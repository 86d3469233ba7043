// Copyright 2026 The zbrokers Authors.

#include "zbrokers/consensus/blocking_client.h"

#include <future>
#include <utility>

namespace zb {

absl::StatusOr<std::unique_ptr<BlockingConsensusClient>>
BlockingConsensusClient::Create(zmq::context_t& context, std::string endpoint,
                                ConsensusClient::Options options) {
  std::unique_ptr<BlockingConsensusClient> b(new BlockingConsensusClient());
  // Created on the reactor thread, which owns it from then on.
  absl::Status created = b->thread_.Invoke([&](Reactor& reactor) {
    absl::StatusOr<std::unique_ptr<ConsensusClient>> client =
        ConsensusClient::Create(reactor, context, std::move(endpoint), options);
    if (!client.ok()) return client.status();
    b->client_ = *std::move(client);
    return absl::OkStatus();
  });
  if (!created.ok()) return created;
  return b;
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
  // Invoke() waits until the request is sent, so references to this frame
  // stay valid; the callback never runs inside Request() itself.
  thread_.Invoke([&](Reactor&) {
    client_->Request(
        service, std::move(payload), options,
        [&done](ConsensusClient::Result&& r) { done.set_value(std::move(r)); });
  });
  return result.get();
}

bool BlockingConsensusClient::Ping(std::chrono::milliseconds timeout) {
  std::promise<bool> done;
  std::future<bool> result = done.get_future();
  thread_.Invoke([&](Reactor&) {
    client_->Ping(timeout, [&done](absl::Status s) { done.set_value(s.ok()); });
  });
  return result.get();
}

ConsensusClient::Stats BlockingConsensusClient::stats() {
  return thread_.Invoke([this](Reactor&) { return client_->stats(); });
}

}  // namespace zb
