// Copyright 2026 The zbrokers Authors.
//
// zb::BlockingConsensusClient is a zb::ConsensusClient for simple programs
// that have no reactor of their own: it runs the client on a private
// zb::ReactorThread and turns each request into a blocking call.
//
//   zmq::context_t ctx;
//   absl::StatusOr<std::unique_ptr<zb::BlockingConsensusClient>> client =
//       zb::BlockingConsensusClient::Create(ctx, "tcp://127.0.0.1:5556");
//   if (!client.ok()) { /* a malformed endpoint, bad CURVE keys, ... */ }
//   if (!(*client)->Ping(std::chrono::seconds(1))) { /* no broker */ }
//   zb::ConsensusClient::Result r =
//       (*client)->Request("echo", zb::MakeFrames({"hello"}),
//                          {.timeout = std::chrono::seconds(2), .retries = 2});
//   if (r.ok()) { /* r.payload: every worker's frames */ }
//
// Semantics are ConsensusClient's (see client.h): each Request()
// returns exactly one outcome, after at most timeout x (retries + 1).
// `endpoint` may be a comma-separated list of brokers, used as
// Options::endpoint_policy says (client.h "Many brokers"):
//
//   zb::BlockingConsensusClient::Create(
//       ctx, "tcp://a:5556,tcp://b:5556",
//       {.endpoint_policy = zb::EndpointPolicy::kSpread});
//
// Threads.  Request() and Ping() may be called from any number of threads
// at once (each call waits for its own outcome; the requests are in flight
// together), but not from the client's own reactor thread.  The destructor
// ends requests still open with kFailure/kClient/kReasonClientClosed, so no
// caller stays blocked; do not call Request() concurrently with or after
// destruction.  The context must outlive the client.

#ifndef ZBROKERS_CONSENSUS_BLOCKING_CLIENT_H_
#define ZBROKERS_CONSENSUS_BLOCKING_CLIENT_H_

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <zmq.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "zbrokers/consensus/client.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/reactor/reactor_thread.h"

namespace zb {

class BlockingConsensusClient {
 public:
  // Starts the client's reactor thread and creates the ConsensusClient on
  // it (`endpoint` and `options` passed as they are, endpoint lists and
  // endpoint_policy included); fails with ConsensusClient::Create()'s error.
  static absl::StatusOr<std::unique_ptr<BlockingConsensusClient>> Create(
      zmq::context_t& context, std::string endpoint,
      ConsensusClient::Options options = {});
  ~BlockingConsensusClient();

  BlockingConsensusClient(const BlockingConsensusClient&) = delete;
  BlockingConsensusClient& operator=(const BlockingConsensusClient&) = delete;

  // Sends `payload` to every worker of `service` and waits for the outcome.
  ConsensusClient::Result Request(
      std::string_view service, Frames payload,
      const ConsensusClient::RequestOptions& options = {});

  // True when the broker echoes a PING within `timeout` (with kSpread, the
  // next broker of the list in turn).
  bool Ping(std::chrono::milliseconds timeout = std::chrono::seconds(5));

  // A snapshot of the client's counters.
  ConsensusClient::Stats stats();

 private:
  BlockingConsensusClient() = default;

  ReactorThread thread_;
  std::unique_ptr<ConsensusClient> client_;  // lives on thread_
};

}  // namespace zb

#endif  // ZBROKERS_CONSENSUS_BLOCKING_CLIENT_H_
