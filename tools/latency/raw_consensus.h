// Copyright 2026 The zbrokers Authors.
//
// The raw baseline of the per-worker latency test: the same CCp100 consensus
// fan-out as zbrokers' ConsensusBroker/ConsensusWorker/ConsensusClient, but
// written by hand against libzmq (plain zmq_poll loops, cppzmq only for RAII)
// with no zbrokers code at all.  zb-latency --baseline runs it step by step
// next to zbrokers, so the ratio zbrokers/raw shows what the framework costs.
//
// It is deliberately lean, but honest: it sends and checks exactly the
// frames of docs/protocols/ccp.md and does what a consensus broker must do
// at minimum on the request path:
//
//   - RawBroker: one thread, one ROUTER (ZMQ_ROUTER_MANDATORY).  READY
//     registers a worker for its service.  REQUEST: looks up the service,
//     applies the per-client sequence rule (first 1, then exactly +1, same
//     socket identity), fans the request out to every worker of the service
//     (zmq_msg_copy of the frames), and records an open request keyed by its
//     12-byte sequence id.  REPLY_SUCCESS: finds the open request by sequence
//     id, checks that the worker belongs to its quorum and has not answered
//     yet, keeps its payload; when every worker has answered, answers the
//     client with all payloads in registration order.  REPLY_FAILURE answers
//     the client with failure at once.  No workers, or a broken sequence
//     rule, answers REPLY_FAILURE with "zb:no-workers" / "zb:bad-sequence".
//     PING is echoed.
//     Not done, because the latency test never needs it: heartbeats, request
//     deadlines, DISCONNECT and expiry of workers and clients.  Those cost
//     zbrokers a few messages per second and a deadline sweep, not work per
//     round trip.
//   - RawWorkers: one thread serving N DEALER sockets with one zmq_poll
//     (the same placement as zbrokers' shared worker reactor); each socket
//     sends READY and answers every REQUEST with REPLY_SUCCESS echoing the
//     payload frames.
//   - RawClient: a DEALER on the calling thread; RoundTrip() sends one
//     REQUEST and blocks for its reply.
//
//   zmq::context_t ctx;
//   auto broker = zb::latency::RawBroker::Start(ctx, "tcp://127.0.0.1:*");
//   auto workers = zb::latency::RawWorkers::Start(ctx, (*broker)->endpoint(),
//                                                 "echo");
//   (*workers)->Add(3).IgnoreError();
//   zb::latency::RawClient client(ctx, (*broker)->endpoint(), "echo", 16,
//                                 std::chrono::seconds(5));
//   bool ok = client.RoundTrip(/*expected_workers=*/3);
//
// Threads and ownership.  RawBroker and RawWorkers own their threads and
// sockets; their destructors stop and join the threads.  The context must
// outlive them and every RawClient.  RawClient belongs to the thread that
// uses it.  Start/Add/destructors may be called from any one thread.

#ifndef TOOLS_LATENCY_RAW_CONSENSUS_H_
#define TOOLS_LATENCY_RAW_CONSENSUS_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace zb::latency {

class RawBroker {
 public:
  // Binds a ROUTER to `endpoint` (a tcp port of "*" picks a free port) and
  // serves it on a new thread.
  static absl::StatusOr<std::unique_ptr<RawBroker>> Start(
      zmq::context_t& context, const std::string& endpoint);
  ~RawBroker();

  RawBroker(const RawBroker&) = delete;
  RawBroker& operator=(const RawBroker&) = delete;

  // The endpoint actually bound (ZMQ_LAST_ENDPOINT).
  const std::string& endpoint() const { return endpoint_; }

 private:
  class Loop;
  RawBroker() = default;

  std::string endpoint_;
  int stop_fd_ = -1;  // eventfd: written to stop the thread
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
};

class RawWorkers {
 public:
  // Starts the (idle) worker thread; workers connect to `endpoint` and serve
  // `service`.
  static absl::StatusOr<std::unique_ptr<RawWorkers>> Start(
      zmq::context_t& context, std::string endpoint, std::string service);
  ~RawWorkers();

  RawWorkers(const RawWorkers&) = delete;
  RawWorkers& operator=(const RawWorkers&) = delete;

  // Opens `n` more worker sockets on the worker thread, connects them and
  // sends their READY; returns when that is done.  (The broker registers
  // them asynchronously: a client sees them in replies shortly after.)
  absl::Status Add(int n);
  int size() const { return size_; }

 private:
  class Loop;
  RawWorkers() = default;

  int wake_fd_ = -1;  // eventfd: commands are waiting
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
  int size_ = 0;
};

class RawClient {
 public:
  RawClient(zmq::context_t& context, const std::string& endpoint,
            std::string service, int payload_bytes,
            std::chrono::milliseconds timeout);

  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  // Sends one REQUEST and waits for its reply.  True when it is a
  // REPLY_SUCCESS for this request carrying exactly `expected_workers`
  // payload frames, each the echoed payload.  Replies to earlier requests
  // (which timed out) are skipped.
  bool RoundTrip(int expected_workers);
  // Like RoundTrip, but returns the number of payloads in the reply (-1 on
  // failure or timeout); used to wait until the workers have registered.
  int Probe();

 private:
  int Exchange(int expected_workers);

  zmq::socket_t socket_;
  std::string service_;
  std::string payload_;
  std::uint32_t client_id_;
  std::uint64_t sequence_ = 0;
  std::vector<zmq::message_t> frames_;  // receive buffer, reused
};

}  // namespace zb::latency

#endif  // TOOLS_LATENCY_RAW_CONSENSUS_H_
