// Copyright 2026 The zbrokers Authors.
//
// The three parts of a consensus fan-out under test -- broker, workers,
// client -- behind one small interface each, implemented twice:
//
//   Impl::kZbrokers  zb::ConsensusBroker on its own zb::ReactorThread; every
//                    zb::ConsensusWorker on ONE shared worker ReactorThread
//                    (echo handler); zb::ConsensusClient on a zb::Reactor run
//                    by the measuring thread.
//   Impl::kRaw       the hand-written libzmq program of raw_consensus.h, with
//                    the same placement (broker thread, one worker thread
//                    polling every worker socket, client on the measuring
//                    thread).
//
// zb-latency drives both the same way, so the only difference it measures is
// the implementation.
//
//   zmq::context_t ctx;
//   auto broker = StartBroker(Impl::kZbrokers, ctx, "tcp://127.0.0.1:*");
//   auto workers = StartWorkers(Impl::kZbrokers, ctx, (*broker)->endpoint(),
//                               "svc");
//   (*workers)->Add(2).IgnoreError();
//   auto client = MakeClient(Impl::kZbrokers, ctx, (*broker)->endpoint(),
//                            "svc", 16, /*client_uses_reactor=*/false,
//                            std::chrono::seconds(5));
//   bool ok = client->RoundTrip(2);
//
// Threads.  BrokerHost and WorkerHost own their threads and may be used
// from any one thread.  A ClientEndpoint belongs to the thread that called
// MakeClient() (the zbrokers client's reactor is owned by that thread).
// The context must outlive everything made from it.

#ifndef TOOLS_LATENCY_FANOUT_H_
#define TOOLS_LATENCY_FANOUT_H_

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <zmq.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "zbrokers/reactor/reactor.h"

namespace zb::latency {

enum class Impl { kZbrokers, kRaw };

std::string_view ImplName(Impl impl);  // "zbrokers" / "raw"

// A running consensus broker.
class BrokerHost {
 public:
  virtual ~BrokerHost() = default;
  // The endpoint it listens on (a tcp wildcard port resolved).
  virtual const std::string& endpoint() const = 0;
};

// Workers of one service, all served by one thread; each echoes the
// request's payload.
class WorkerHost {
 public:
  virtual ~WorkerHost() = default;
  // Starts `n` more workers.  Returns once they are connecting and have sent
  // READY; the broker registers them shortly after (clients wait for that
  // with ClientEndpoint::Probe()).
  virtual absl::Status Add(int n) = 0;
  virtual int size() const = 0;
};

// One client.  Round trips are sequential.
class ClientEndpoint {
 public:
  virtual ~ClientEndpoint() = default;
  // One request answered with success by exactly `expected_workers`
  // workers, each echoing the payload.  False on anything else (failure,
  // timeout, wrong number or content of payloads).
  virtual bool RoundTrip(int expected_workers) = 0;
  // One request; the number of payloads of a successful reply, or -1.
  virtual int Probe() = 0;
};

// `request_timeout` is the zbrokers broker's deadline for a request (the
// raw broker keeps none); zb-latency passes its --timeout-ms, so that one
// setting bounds a round trip everywhere.
// `reactor` configures every zbrokers reactor (broker, workers, client:
// --yield-before-sleep); the raw program has none and ignores it.
absl::StatusOr<std::unique_ptr<BrokerHost>> StartBroker(
    Impl impl, zmq::context_t& context, const std::string& bind_endpoint,
    std::chrono::milliseconds request_timeout = std::chrono::seconds(5),
    const Reactor::Options& reactor = {});

absl::StatusOr<std::unique_ptr<WorkerHost>> StartWorkers(
    Impl impl, zmq::context_t& context, const std::string& endpoint,
    const std::string& service, const Reactor::Options& reactor = {});

// Must be called on the thread that will use the client.  The zbrokers
// client waits with ConsensusClient::Call(), or with Request() and
// Reactor::RunOnce() when `client_uses_reactor`; the raw client ignores it.
absl::StatusOr<std::unique_ptr<ClientEndpoint>> MakeClient(
    Impl impl, zmq::context_t& context, const std::string& endpoint,
    const std::string& service, int payload_bytes, bool client_uses_reactor,
    std::chrono::milliseconds timeout, const Reactor::Options& reactor = {});

}  // namespace zb::latency

#endif  // TOOLS_LATENCY_FANOUT_H_
