// Copyright 2026 The zbrokers Authors.

#include "tools/latency/deployment.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <zmq.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "tools/latency/cpu_pin.h"
#include "tools/latency/subprocess.h"
#include "zbrokers/reactor/batch_scheduling.h"

namespace zb::latency {
namespace {

using std::chrono::milliseconds;

// How long a child may take to start or to add workers.
constexpr milliseconds kControlTimeout{30000};

// libzmq leaves the socket file of a bound ipc endpoint behind; the broker's
// owner removes it once the broker is gone.
void RemoveIpcFile(const std::string& endpoint) {
  constexpr std::string_view kIpc = "ipc://";
  if (endpoint.starts_with(kIpc)) ::unlink(endpoint.c_str() + kIpc.size());
}

Reactor::Options ReactorOptions(bool yield_before_sleep,
                                bool batch_scheduling = false) {
  Reactor::Options options;
  options.yield_before_sleep = yield_before_sleep;
  options.batch_scheduling = batch_scheduling;
  return options;
}

// The role argument that carries DeployConfig::yield_before_sleep.
std::string YieldArg(bool yield_before_sleep) {
  return yield_before_sleep ? "--yield-before-sleep=on"
                            : "--yield-before-sleep=off";
}

// --- threads -----------------------------------------------------------------

class ThreadDeployment : public Deployment {
 public:
  static absl::StatusOr<std::unique_ptr<Deployment>> Start(
      const DeployConfig& cfg) {
    std::unique_ptr<ThreadDeployment> d(new ThreadDeployment(cfg));
    // Each role's threads are started pinned to its CPU (cpu_pin.h).
    // libzmq's I/O and reaper threads carry every tcp and ipc message to
    // and from the broker, so they go with the broker: left to the
    // scheduler, each system's I/O thread would land on either CPU, and
    // the two systems would again be placed differently.  As zb-broker
    // does, they are started before the broker's batch thread exists, so
    // they are not its children (batch_scheduling.h).
    if (absl::Status st = RunOnCpu(cfg.role_cpus.broker,
                                   [&] {
                                     StartContextThreads(d->context_);
                                     return absl::OkStatus();
                                   });
        !st.ok()) {
      return st;
    }
    if (cfg.external_broker.empty()) {
      absl::Status st = RunOnCpu(cfg.role_cpus.broker, [&] {
        auto b = StartBroker(
            cfg.impl, d->context_, BindEndpoint(cfg.transport, cfg.impl),
            cfg.timeout,
            ReactorOptions(cfg.yield_before_sleep, cfg.batch_scheduling));
        if (!b.ok()) return b.status();
        d->broker_ = std::move(*b);
        return absl::OkStatus();
      });
      if (!st.ok()) return st;
      d->endpoint_ = d->broker_->endpoint();
    } else {
      d->endpoint_ = cfg.external_broker;
    }
    absl::Status st = RunOnCpu(cfg.role_cpus.workers, [&] {
      auto w = StartWorkers(cfg.impl, d->context_, d->endpoint_, cfg.service,
                            ReactorOptions(cfg.yield_before_sleep));
      if (!w.ok()) return w.status();
      d->workers_ = std::move(*w);
      return absl::OkStatus();
    });
    if (!st.ok()) return st;
    return d;
  }

  ~ThreadDeployment() override {
    // Workers first, so that their DISCONNECTs reach a live broker.
    workers_.reset();
    if (broker_ != nullptr) {
      broker_.reset();
      RemoveIpcFile(endpoint_);
    }
  }

  const std::string& endpoint() const override { return endpoint_; }
  absl::Status AddWorkers(int n) override { return workers_->Add(n); }
  int workers() const override { return workers_->size(); }

  absl::StatusOr<StepSamples> RunStep(const StepPlan& plan,
                                      const ProgressFn& progress) override {
    // The client threads start (and run) on the clients' CPU; so does this
    // thread meanwhile, which only waits for them.
    absl::StatusOr<StepSamples> samples;
    absl::Status st = RunOnCpu(cfg_.role_cpus.clients, [&] {
      samples = RunClients(
          [this] {
            return MakeClient(cfg_.impl, context_, endpoint_, cfg_.service,
                              cfg_.payload_bytes, cfg_.client_uses_reactor,
                              cfg_.timeout,
                              ReactorOptions(cfg_.yield_before_sleep));
          },
          plan, progress);
      return absl::OkStatus();
    });
    if (!st.ok()) return st;
    return samples;
  }

 private:
  explicit ThreadDeployment(const DeployConfig& cfg) : cfg_(cfg) {
    if (cfg.max_sockets > 0) {
      context_.set(zmq::ctxopt::max_sockets, cfg.max_sockets);
    }
  }

  const DeployConfig cfg_;
  zmq::context_t context_;  // outlives everything below
  std::unique_ptr<BrokerHost> broker_;
  std::unique_ptr<WorkerHost> workers_;
  std::string endpoint_;
};

// --- processes
// -----------------------------------------------------------------

absl::StatusOr<std::string> Expect(Subprocess& child, std::string_view word,
                                   milliseconds timeout) {
  absl::StatusOr<std::string> line = child.ReadLine(timeout);
  if (!line.ok()) return line.status();
  std::string_view l = *line;
  if (l.starts_with("error ")) {
    return absl::InternalError(
        absl::StrFormat("%s: %s", child.Describe(), l.substr(6)));
  }
  if (!l.starts_with(word)) {
    return absl::InternalError(absl::StrFormat("%s: expected '%s', got '%s'",
                                               child.Describe(), word, l));
  }
  l.remove_prefix(word.size());
  if (l.starts_with(" ")) l.remove_prefix(1);
  return std::string(l);
}

class ProcessDeployment : public Deployment {
 public:
  static absl::StatusOr<std::unique_ptr<Deployment>> Start(
      const DeployConfig& cfg) {
    std::unique_ptr<ProcessDeployment> d(new ProcessDeployment(cfg));
    const std::string exe = "/proc/self/exe";
    const std::string impl = absl::StrFormat("--impl=%s", ImplName(cfg.impl));
    const std::string sockets =
        absl::StrFormat("--max-sockets=%d", cfg.max_sockets);
    // Each role process pins itself first thing (RunRole).
    const auto cpu = [](int c) { return absl::StrFormat("--cpu=%d", c); };
    if (cfg.external_broker.empty()) {
      auto b = Subprocess::Start(
          {exe, "--role=broker", impl, sockets, cpu(cfg.role_cpus.broker),
           YieldArg(cfg.yield_before_sleep),
           cfg.batch_scheduling ? "--batch-scheduling=on"
                                : "--batch-scheduling=off",
           "--bind=" + BindEndpoint(cfg.transport, cfg.impl),
           absl::StrFormat("--timeout-ms=%d", cfg.timeout.count())});
      if (!b.ok()) return b.status();
      d->broker_ = std::move(*b);
      auto ep = Expect(*d->broker_, "ready", kControlTimeout);
      if (!ep.ok()) return ep.status();
      d->endpoint_ = *ep;
    } else {
      d->endpoint_ = cfg.external_broker;
    }
    const std::string connect = "--connect=" + d->endpoint_;
    const std::string service = "--service=" + cfg.service;
    auto w = Subprocess::Start(
        {exe, "--role=workers", impl, sockets, cpu(cfg.role_cpus.workers),
         YieldArg(cfg.yield_before_sleep), connect, service});
    if (!w.ok()) return w.status();
    d->workers_ = std::move(*w);
    auto c = Subprocess::Start(
        {exe, "--role=client", impl, sockets, cpu(cfg.role_cpus.clients),
         YieldArg(cfg.yield_before_sleep), connect, service,
         absl::StrFormat("--payload-bytes=%d", cfg.payload_bytes),
         cfg.client_uses_reactor ? "--client-wait=reactor"
                                 : "--client-wait=call",
         absl::StrFormat("--timeout-ms=%d", cfg.timeout.count())});
    if (!c.ok()) return c.status();
    d->client_ = std::move(*c);
    for (Subprocess* p : {d->workers_.get(), d->client_.get()}) {
      if (auto r = Expect(*p, "ready", kControlTimeout); !r.ok()) {
        return r.status();
      }
    }
    return d;
  }

  ~ProcessDeployment() override {
    // Client, workers, broker: each exits when its stdin closes.
    client_.reset();
    workers_.reset();
    if (broker_ != nullptr) {
      broker_.reset();  // reaped: its socket file is ours to remove
      RemoveIpcFile(endpoint_);
    }
  }

  const std::string& endpoint() const override { return endpoint_; }
  int workers() const override { return size_; }

  absl::Status AddWorkers(int n) override {
    if (auto st = workers_->WriteLine(absl::StrFormat("add %d", n)); !st.ok()) {
      return st;
    }
    auto r = Expect(*workers_, "ok", kControlTimeout);
    if (!r.ok()) return r.status();
    if (!absl::SimpleAtoi(*r, &size_)) {
      return absl::InternalError("workers process: bad answer to add");
    }
    return absl::OkStatus();
  }

  absl::StatusOr<StepSamples> RunStep(const StepPlan& plan,
                                      const ProgressFn& progress) override {
    absl::Status st = client_->WriteLine(
        absl::StrFormat("run %d %d %d %d %d %d", plan.clients, plan.round_trips,
                        plan.warmup, plan.expected_workers,
                        plan.register_timeout.count(), plan.evict_cache_bytes));
    if (!st.ok()) return st;
    // The child reports progress every ~100 ms while it measures, so a long
    // silence means it is stuck; the bound is generous anyway.
    const milliseconds silence = plan.register_timeout +
                                 cfg_.timeout * (plan.warmup + 10) +
                                 milliseconds(60000);
    for (;;) {
      absl::StatusOr<std::string> line = client_->ReadLine(silence);
      if (!line.ok()) return line.status();
      std::vector<absl::string_view> f = absl::StrSplit(*line, ' ');
      if (f[0] == "progress" && f.size() == 3) {
        std::int64_t done = 0, total = 0;
        if (progress && absl::SimpleAtoi(f[1], &done) &&
            absl::SimpleAtoi(f[2], &total)) {
          progress(done, total);
        }
        continue;
      }
      if (f[0] == "error") {
        return absl::InternalError(
            absl::StrFormat("%s: %s", client_->Describe(), line->substr(6)));
      }
      StepSamples s;
      std::int64_t count = 0;
      if (f[0] != "result" || f.size() != 5 ||
          !absl::SimpleAtoi(f[1], &s.round_trips) ||
          !absl::SimpleAtoi(f[2], &s.failures) ||
          !absl::SimpleAtoi(f[3], &s.elapsed_ns) ||
          !absl::SimpleAtoi(f[4], &count)) {
        return absl::InternalError(absl::StrFormat("%s: unexpected line '%s'",
                                                   client_->Describe(), *line));
      }
      absl::StatusOr<std::string> lat = client_->ReadLine(kControlTimeout);
      if (!lat.ok()) return lat.status();
      s.latencies_ns.reserve(static_cast<std::size_t>(count));
      for (absl::string_view v : absl::StrSplit(*lat, ' ', absl::SkipEmpty())) {
        std::int64_t ns = 0;
        if (!absl::SimpleAtoi(v, &ns)) {
          return absl::InternalError("client process: bad latency value");
        }
        s.latencies_ns.push_back(ns);
      }
      if (static_cast<std::int64_t>(s.latencies_ns.size()) != count) {
        return absl::InternalError("client process: latency count mismatch");
      }
      s.cpu_ns = -1;  // three processes: the client alone would mislead
      return s;
    }
  }

 private:
  explicit ProcessDeployment(const DeployConfig& cfg) : cfg_(cfg) {}

  const DeployConfig cfg_;
  std::unique_ptr<Subprocess> broker_, workers_, client_;
  std::string endpoint_;
  int size_ = 0;
};

// --- roles (child side)
// --------------------------------------------------------

void Say(const std::string& line) {
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

int RoleError(const std::string& what) {
  Say("error " + what);
  return 1;
}

}  // namespace

std::string BindEndpoint(Transport transport, Impl impl) {
  static std::atomic<int> counter{0};
  const int n = counter++;
  switch (transport) {
    case Transport::kTcp:
      return "tcp://127.0.0.1:*";
    case Transport::kIpc:
      return absl::StrFormat("ipc:///tmp/zb-latency-%d-%s-%d.ipc", ::getpid(),
                             ImplName(impl), n);
    case Transport::kInproc:
      return absl::StrFormat("inproc://zb-latency-%s-%d", ImplName(impl), n);
  }
  return "";
}

absl::StatusOr<std::unique_ptr<Deployment>> Deploy(Placement placement,
                                                   const DeployConfig& config) {
  if (placement == Placement::kThreads) return ThreadDeployment::Start(config);
  if (config.transport == Transport::kInproc) {
    return absl::InvalidArgumentError("inproc cannot cross processes");
  }
  return ProcessDeployment::Start(config);
}

bool IsRole(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a.starts_with("--role=")) return true;
  }
  return false;
}

int RunRole(const std::vector<std::string>& args) {
  // Die with the parent, whatever happens to it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) return 1;

  std::map<std::string, std::string, std::less<>> kv;
  for (const std::string& a : args) {
    auto eq = a.find('=');
    if (a.starts_with("--") && eq != std::string::npos) {
      kv[a.substr(2, eq - 2)] = a.substr(eq + 1);
    }
  }
  const std::string role = kv["role"];
  // Before the context starts libzmq's threads, so that they inherit it.
  if (int cpu = -1; absl::SimpleAtoi(kv["cpu"], &cpu) && cpu >= 0) {
    if (absl::Status st = PinCallingThread(cpu); !st.ok()) {
      return RoleError(role + ": " + std::string(st.message()));
    }
  }
  const Impl impl = kv["impl"] == "raw" ? Impl::kRaw : Impl::kZbrokers;
  // Only a broker process takes --batch-scheduling (DeployConfig).
  const Reactor::Options reactor =
      ReactorOptions(kv["yield-before-sleep"] == "on",
                     role == "broker" && kv["batch-scheduling"] == "on");
  zmq::context_t context;
  if (int max_sockets = 0;
      absl::SimpleAtoi(kv["max-sockets"], &max_sockets) && max_sockets > 0) {
    context.set(zmq::ctxopt::max_sockets, max_sockets);
  }
  StartContextThreads(context);
  std::string line;

  if (role == "broker") {
    int timeout_ms = 5000;
    if (!absl::SimpleAtoi(kv["timeout-ms"], &timeout_ms) || timeout_ms <= 0) {
      return RoleError("broker: bad --timeout-ms");
    }
    auto b = StartBroker(impl, context, kv["bind"], milliseconds(timeout_ms),
                         reactor);
    if (!b.ok()) return RoleError(std::string(b.status().message()));
    const std::string endpoint = (*b)->endpoint();
    Say("ready " + endpoint);
    while (std::getline(std::cin, line)) {
    }
    b->reset();
    RemoveIpcFile(endpoint);
    return 0;
  }
  if (role == "workers") {
    auto w = StartWorkers(impl, context, kv["connect"], kv["service"], reactor);
    if (!w.ok()) return RoleError(std::string(w.status().message()));
    Say("ready");
    while (std::getline(std::cin, line)) {
      int n = 0;
      if (!line.starts_with("add ") ||
          !absl::SimpleAtoi(absl::string_view(line).substr(4), &n)) {
        Say("error unknown command: " + line);
        continue;
      }
      absl::Status st = (*w)->Add(n);
      Say(st.ok() ? absl::StrFormat("ok %d", (*w)->size())
                  : "error " + std::string(st.message()));
    }
    return 0;
  }
  if (role == "client") {
    int payload_bytes = 0, timeout_ms = 0;
    if (!absl::SimpleAtoi(kv["payload-bytes"], &payload_bytes) ||
        !absl::SimpleAtoi(kv["timeout-ms"], &timeout_ms)) {
      return RoleError("client: bad arguments");
    }
    Say("ready");
    while (std::getline(std::cin, line)) {
      std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
      StepPlan plan;
      std::int64_t register_ms = 0;
      if (f.size() != 7 || f[0] != "run" ||
          !absl::SimpleAtoi(f[1], &plan.clients) ||
          !absl::SimpleAtoi(f[2], &plan.round_trips) ||
          !absl::SimpleAtoi(f[3], &plan.warmup) ||
          !absl::SimpleAtoi(f[4], &plan.expected_workers) ||
          !absl::SimpleAtoi(f[5], &register_ms) ||
          !absl::SimpleAtoi(f[6], &plan.evict_cache_bytes)) {
        Say("error unknown command: " + line);
        continue;
      }
      plan.register_timeout = milliseconds(register_ms);
      absl::StatusOr<StepSamples> s = RunClients(
          [&] {
            return MakeClient(impl, context, kv["connect"], kv["service"],
                              payload_bytes, kv["client-wait"] == "reactor",
                              milliseconds(timeout_ms), reactor);
          },
          plan,
          [](std::int64_t done, std::int64_t total) {
            Say(absl::StrFormat("progress %d %d", done, total));
          });
      if (!s.ok()) {
        Say("error " + std::string(s.status().message()));
        continue;
      }
      Say(absl::StrFormat("result %d %d %d %d", s->round_trips, s->failures,
                          s->elapsed_ns, s->latencies_ns.size()));
      std::string lat;
      lat.reserve(s->latencies_ns.size() * 8);
      for (std::int64_t v : s->latencies_ns)
        absl::StrAppendFormat(&lat, "%d ", v);
      Say(lat);
    }
    return 0;
  }
  std::fprintf(stderr, "zb-latency: unknown --role '%s'\n", role.c_str());
  return 2;
}

}  // namespace zb::latency
