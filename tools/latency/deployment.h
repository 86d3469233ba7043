// Copyright 2026 The zbrokers Authors.
//
// Where the parts of one system under test run (--placement):
//
//   threads    broker, worker thread and clients are threads of this
//              process, sharing one zmq::context_t (so inproc works).
//   processes  broker, workers and client are three child processes, each
//              this same program re-executed (/proc/self/exe) with a hidden
//              --role flag; zb-latency drives them over their stdin/stdout
//              (see RunRole()).  Not possible with inproc.
//
// With an external broker (--broker ENDPOINT) no broker is started.
//
//   DeployConfig cfg{.impl = Impl::kZbrokers, .transport = Transport::kTcp,
//                    .service = "svc", .payload_bytes = 16};
//   auto d = Deploy(Placement::kThreads, cfg);
//   (*d)->AddWorkers(1).IgnoreError();
//   absl::StatusOr<StepSamples> s = (*d)->RunStep(plan, nullptr);
//
// A Deployment is used by one thread at a time.  Its destructor stops
// everything it started (threads joined, child processes ended and reaped,
// ipc socket files removed).

#ifndef TOOLS_LATENCY_DEPLOYMENT_H_
#define TOOLS_LATENCY_DEPLOYMENT_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tools/latency/client_runner.h"
#include "tools/latency/fanout.h"
#include "tools/latency/options.h"

namespace zb::latency {

struct DeployConfig {
  Impl impl = Impl::kZbrokers;
  Transport transport = Transport::kTcp;
  // A running broker to use; empty: start our own.
  std::string external_broker;
  std::string service;
  int payload_bytes = 16;
  // zbrokers' client: Request() + Reactor::RunOnce() instead of Call().
  bool client_uses_reactor = false;
  std::chrono::milliseconds timeout{5000};
  // Reactor::Options::yield_before_sleep of every zbrokers reactor
  // (--yield-before-sleep).
  bool yield_before_sleep = false;
  // Reactor::Options::batch_scheduling of the embedded broker's reactor
  // (--batch-scheduling); the workers' and clients' reactors keep the
  // library's default.
  bool batch_scheduling = true;
  // ZMQ_MAX_SOCKETS of every context the deployment makes (libzmq's default
  // of 1023 is too few for a thousand workers); 0 keeps the default.
  int max_sockets = 0;
  // The CPU each role's threads (or, with processes, each role process)
  // are pinned to (--pin-roles); -1: not pinned apart from the process.
  // With threads, libzmq's I/O and reaper threads go with the broker.
  Options::RoleCpus role_cpus;
};

class Deployment {
 public:
  virtual ~Deployment() = default;
  // The broker's endpoint.
  virtual const std::string& endpoint() const = 0;
  // Starts `n` more workers.
  virtual absl::Status AddWorkers(int n) = 0;
  virtual int workers() const = 0;
  // Runs one measured step (see client_runner.h).  StepSamples::cpu_ns is
  // -1 when the CPU time of the whole system is not known (processes).
  virtual absl::StatusOr<StepSamples> RunStep(const StepPlan& plan,
                                              const ProgressFn& progress) = 0;
};

absl::StatusOr<std::unique_ptr<Deployment>> Deploy(Placement placement,
                                                   const DeployConfig& config);

// The endpoint a broker of `impl` binds for `transport`: tcp on 127.0.0.1
// with an ephemeral port, ipc in /tmp, or inproc; unique per call.
std::string BindEndpoint(Transport transport, Impl impl);

// True when `args` ask for a child role (--role=...).
bool IsRole(const std::vector<std::string>& args);
// Runs a child process role until its stdin ends; returns the exit code.
int RunRole(const std::vector<std::string>& args);

}  // namespace zb::latency

#endif  // TOOLS_LATENCY_DEPLOYMENT_H_
