// Copyright 2026 The zbrokers Authors.

#include "brokers/daemon/daemon.h"

#include <malloc.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "brokers/daemon/auth.h"
#include "brokers/daemon/http_server.h"
#include "brokers/daemon/logging.h"
#include "brokers/daemon/metrics.h"
#include "zbrokers/consensus/broker.h"
#include "zbrokers/majordomo/broker.h"
#include "zbrokers/reactor/reactor_thread.h"

#ifndef ZB_VERSION
#define ZB_VERSION "dev"
#endif

namespace zb {
namespace {

using std::chrono::milliseconds;

// How often each broker's counters are published to the metrics registry.
constexpr milliseconds kMetricsRefresh{1000};
// Extra time, after the grace period, before the control thread gives up on
// a broker that never reports being drained.
constexpr milliseconds kDrainSlack{2000};
// How often the control thread looks at how much free memory the allocator
// keeps, and how much it may keep before it is given back to the system
// (docs/reliability.md, "Memory after a flood").
constexpr milliseconds kMemoryTrimInterval{5000};
constexpr std::size_t kMemoryTrimThreshold = std::size_t{32} << 20;

// The daemon's locks are std::mutex, not absl::Mutex: Debian's abseil is not
// built with ThreadSanitizer, so TSan cannot see absl::Mutex's
// synchronisation and reported every access it guards as a race
// (docs/reliability.md, "ThreadSanitizer").  pthread's are intercepted.
//
// A one-shot event: Notify() once, Wait() returns after it.
class Notification {
 public:
  void Notify() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      notified_ = true;
    }
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return notified_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool notified_ = false;  // guarded by mu_
};

// glibc keeps memory freed after a burst in its arenas (a flood of 100,000
// queued 4 KiB requests left 298 MiB resident after every request had
// expired; malloc_trim(0) brought it back to 9 MiB).  Returns the bytes the
// allocator held free before trimming, or 0 when it did not trim.
std::size_t TrimFreeMemory() {
  const struct mallinfo2 info = mallinfo2();
  if (info.fordblks < kMemoryTrimThreshold) return 0;
  malloc_trim(0);
  return info.fordblks;
}

BrokerSnapshot SnapshotOf(const MajordomoBroker& broker) {
  const MajordomoBroker::Stats s = broker.stats();
  BrokerSnapshot out;
  out.requests = s.requests;
  out.replies = s.replies;
  out.failures = s.failures;
  out.timeouts = s.expired;
  out.malformed = s.malformed;
  out.events = {
      {"mmi_requests", s.mmi_requests},
      {"tagged_requests", s.tagged_requests},
      {"redispatched", s.redispatched},
      {"expired", s.expired},
      {"dropped_queue_full", s.dropped_queue_full},
      {"dropped_max_services", s.dropped_max_services},
      {"dropped_max_requests_per_client", s.dropped_max_requests_per_client},
      {"rejected_draining", s.rejected_draining},
      {"unroutable", s.unroutable},
      {"dropped_full_pipe", s.dropped_full_pipe},
      {"reply_timeouts", s.reply_timeouts},
      {"workers_joined", s.workers_joined},
      {"workers_refused", s.workers_refused},
      {"workers_left", s.workers_left},
      {"workers_expired", s.workers_expired},
      {"workers_disconnected", s.workers_disconnected},
      {"disconnects_sent", s.disconnects_sent},
  };
  for (const auto& [name, svc] : s.services) {
    out.services.push_back({name, svc.workers, svc.queued});
  }
  std::sort(out.services.begin(), out.services.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  out.open_requests = broker.open_requests();
  out.draining = broker.draining();
  return out;
}

BrokerSnapshot SnapshotOf(const ConsensusBroker& broker) {
  const ConsensusBroker::Stats& s = broker.stats();
  BrokerSnapshot out;
  out.requests = s.requests;
  out.replies = s.replies_success + s.replies_failure;
  // zb_failures_total and zb_timeouts_total are disjoint: a failure reply
  // caused by the deadline counts as a timeout only.
  out.failures =
      s.replies_failure > s.timeouts ? s.replies_failure - s.timeouts : 0;
  out.timeouts = s.timeouts;
  out.malformed = s.malformed;
  out.events = {
      {"replies_success", s.replies_success},
      {"replies_failure", s.replies_failure},
      {"worker_failures", s.worker_failures},
      {"no_workers", s.no_workers},
      {"refused_draining", s.refused_draining},
      {"rejected_sequence", s.rejected_sequence},
      {"unroutable", s.unroutable},
      {"dropped_replies", s.dropped_replies},
      {"late_replies", s.late_replies},
      {"pings", s.pings},
      {"workers_joined", s.workers_joined},
      {"workers_left", s.workers_left},
      {"workers_expired", s.workers_expired},
      {"clients_expired", s.clients_expired},
      {"clients_adopted", s.clients_adopted},
      {"clients_evicted", s.clients_evicted},
      {"client_busy", s.client_busy},
      {"refused_clients", s.refused_clients},
      {"worker_busy", s.worker_busy},
      {"refused_heartbeat", s.refused_heartbeat},
      {"refused_workers", s.refused_workers},
      {"refused_services", s.refused_services},
      {"malformed_requests", s.malformed_requests},
  };
  for (auto& [name, workers] : broker.workers_per_service()) {
    out.services.push_back({std::move(name), workers, 0});
  }
  out.open_requests = broker.open_requests();
  out.draining = broker.draining();
  return out;
}

std::string StatsLine(const std::string& kind, const BrokerSnapshot& now,
                      const BrokerSnapshot& before) {
  std::uint64_t workers = 0;
  std::uint64_t queued = 0;
  for (const BrokerSnapshot::Service& s : now.services) {
    workers += s.workers;
    queued += s.queued;
  }
  auto delta = [](std::uint64_t a, std::uint64_t b) {
    return a >= b ? a - b : 0;
  };
  return absl::StrFormat(
      "%s: stats requests=%d (+%d) replies=%d (+%d) failures=%d (+%d) "
      "timeouts=%d (+%d) malformed=%d (+%d) open=%d services=%d workers=%d "
      "queued=%d",
      kind, now.requests, delta(now.requests, before.requests), now.replies,
      delta(now.replies, before.replies), now.failures,
      delta(now.failures, before.failures), now.timeouts,
      delta(now.timeouts, before.timeouts), now.malformed,
      delta(now.malformed, before.malformed), now.open_requests,
      now.services.size(), workers, queued);
}

// "KIND: cannot bind EP: why", without repeating what the broker's own
// message already says.
std::string BindError(std::string_view kind, const std::string& ep,
                      const absl::Status& st) {
  const std::string_view msg(st.message().data(), st.message().size());
  if (msg.find(ep) != std::string_view::npos) {
    return absl::StrFormat("%s: %s", kind, msg);
  }
  return absl::StrFormat("%s: cannot bind %s: %s", kind, ep, msg);
}

// The last line a broker logs: what it did over its whole life.
std::string TotalsLine(const std::string& kind, const BrokerSnapshot& s) {
  // A Majordomo reply is always a success (RFC 7 has no failure reply);
  // the consensus broker counts its successes separately.
  std::uint64_t success = s.replies;
  for (const auto& [name, value] : s.events) {
    if (name == "replies_success") success = value;
  }
  return absl::StrFormat(
      "%s: totals: %d request(s), %d success, %d failure(s), %d timeout(s), "
      "%d malformed",
      kind, s.requests, success, s.failures, s.timeouts, s.malformed);
}

}  // namespace

void BlockShutdownSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  // A scraper or log reader that hangs up must not kill the daemon.
  signal(SIGPIPE, SIG_IGN);
}

// One broker and everything that runs next to it on its reactor thread.
struct BrokerRuntime {
  std::string kind;  // "majordomo" or "consensus"
  std::unique_ptr<ReactorThread> thread;
  BrokerMetrics* metrics = nullptr;
  // Reactor-thread state.
  BrokerSnapshot last_logged;
  // Every timer that calls into the broker; cancelled before the broker is
  // destroyed (the reactor keeps running until its thread is stopped).
  std::vector<TimerId> timers;
  // Set once on the reactor thread, used there only.
  std::function<BrokerSnapshot()> snapshot;
  std::function<void()> destroy;
  // Set on the reactor thread just before the broker is destroyed.  Drain
  // steps may still be queued on the reactor then (the consensus broker's
  // destructor fails what is open, which completes the drain and posts its
  // callback): they must find the broker gone and do nothing.
  bool broker_destroyed = false;
  // Refused handshakes of the broker's ROUTER (CURVE configured only).
  std::unique_ptr<HandshakeMonitor> monitor;
};

struct Daemon::Impl {
  Impl(const DaemonConfig& c, std::shared_ptr<spdlog::logger> l,
       ConfigSource source)
      : config(c),
        log(std::move(l)),
        reload_source(std::move(source)),
        applied(c) {}
  ~Impl() { Teardown(); }

  absl::Status StartMajordomo();
  absl::Status StartConsensus();
  // CURVE: the ZAP handler (before any broker binds), then per broker the
  // CURVE endpoints and the handshake monitor (on its reactor thread).
  absl::Status StartAuth();
  template <typename Broker>
  absl::Status BindCurve(BrokerRuntime& rt, Reactor& reactor, Broker& broker,
                         const std::vector<std::string>& endpoints);
  absl::Status StartControl();
  absl::Status StartHttp();
  void InstallTimers(BrokerRuntime& rt, Reactor& reactor);

  // Control-thread side of the drain.
  void OnSignal();
  // SIGHUP: reads the configuration again and applies what it can.
  void Reload();
  void BeginDrain(std::string_view why);
  void OnBrokerDrained(const std::string& kind);
  void Finish(std::string_view why);

  // Stops and joins `thread`; keeps the first error its reactor reported.
  void StopThread(ReactorThread& thread) {
    thread.stop();
    if (absl::Status s = thread.join(); !s.ok() && result.ok()) result = s;
  }

  // Posts `task` to the control thread unless it is gone.  Any thread.
  void PostToControl(Reactor::Task task);

  // Caller-thread side: stops everything, in order.  Idempotent.
  void Teardown();

  const DaemonConfig config;
  std::shared_ptr<spdlog::logger> log;
  // SIGHUP.  `applied` is the configuration the last reload applied (the
  // start-up one at first); both are used on the control thread only.
  ConfigSource reload_source;
  DaemonConfig applied;
  std::mutex reload_mu;
  std::vector<ReloadHandler> reload_handlers;  // guarded by reload_mu

  // Destroyed last: the brokers' sockets must be closed before it.
  zmq::context_t context{1};
  Metrics metrics;
  // What /readyz reports; read by the HTTP threads.
  enum class Phase { kStarting, kReady, kDraining, kStopped };
  std::atomic<Phase> phase{Phase::kStarting};
  // /metrics, /healthz, /readyz; destroyed before `metrics` and `phase`,
  // which its handlers read.
  std::unique_ptr<HttpServer> http;
  // CURVE (when configured): the brokers' secret key, held only until the
  // brokers have bound; the ZAP handler, destroyed after the brokers.
  std::optional<CurveKey> curve_secret_key;
  std::unique_ptr<DaemonAuth> auth;

  // Brokers; each object lives on its runtime's thread.
  std::unique_ptr<MajordomoBroker> majordomo;
  std::unique_ptr<ConsensusBroker> consensus;
  std::vector<std::unique_ptr<BrokerRuntime>> runtimes;

  // Control thread: signals and drain coordination.  The pointer itself is
  // guarded by control_mu so that posts from other threads (Shutdown(), a
  // broker reporting it is drained) never race with Teardown().
  std::mutex control_mu;
  std::unique_ptr<ReactorThread> control;
  // control->reactor(), fixed at start; used on the control thread only.
  Reactor* control_reactor = nullptr;
  int signal_fd = -1;
  enum class State { kRunning, kDraining, kStopped };
  State state = State::kRunning;  // control thread only
  int drains_pending = 0;         // control thread only

  Notification done;    // Finish() -> Wait()
  bool ready = false;   // Start() succeeded
  absl::Status result;  // the first reactor error, set by Teardown()
  bool torn_down = false;
};

absl::Status Daemon::Impl::StartMajordomo() {
  auto rt = std::make_unique<BrokerRuntime>();
  rt->kind = "majordomo";
  rt->metrics = &metrics.AddBroker(rt->kind, config.metrics_max_services);
  rt->thread = std::make_unique<ReactorThread>();
  BrokerRuntime* r = rt.get();
  runtimes.push_back(std::move(rt));

  MajordomoBroker::Options options;
  const MajordomoSettings& s = config.majordomo;
  if (s.heartbeat_interval) options.heartbeat_interval = *s.heartbeat_interval;
  if (s.heartbeat_liveness) {
    options.heartbeat_liveness = static_cast<int>(*s.heartbeat_liveness);
  }
  if (s.max_queue_per_service) {
    options.max_queue_per_service =
        static_cast<std::size_t>(*s.max_queue_per_service);
  }
  if (s.queue_expiry) options.queue_expiry = *s.queue_expiry;
  if (s.max_redispatch) {
    options.max_redispatch = static_cast<int>(*s.max_redispatch);
  }
  if (s.max_services) {
    options.max_services = static_cast<std::size_t>(*s.max_services);
  }
  if (s.max_workers) {
    options.max_workers = static_cast<std::size_t>(*s.max_workers);
  }
  if (s.reply_timeout) options.reply_timeout = *s.reply_timeout;
  if (s.max_requests_per_client) {
    options.max_requests_per_client =
        static_cast<std::size_t>(*s.max_requests_per_client);
  }
  if (s.max_message_size) options.max_message_size = *s.max_message_size;
  if (s.worker_prefetch) {
    options.worker_prefetch = static_cast<int>(*s.worker_prefetch);
  }

  return r->thread->invoke([&](Reactor& reactor) -> absl::Status {
    majordomo = std::make_unique<MajordomoBroker>(reactor, context, options);
    // Set at once: a broker must be destroyed on its thread even when a
    // Bind() below fails.
    r->destroy = [this, r] {
      r->monitor.reset();
      majordomo.reset();
    };
    MajordomoBroker& b = *majordomo;
    spdlog::logger* lg = log.get();
    // Worker joins and leaves come through the log hook, rate-limited by the
    // broker (a join flood must not flood the log).
    BrokerMetrics* m = r->metrics;
    b.set_latency_hook([m](std::string_view, std::chrono::nanoseconds d) {
      m->ObserveLatency(d);
    });
    b.set_log_hook([lg](MajordomoBroker::LogLevel level, std::string_view s) {
      switch (level) {
        case MajordomoBroker::LogLevel::kDebug:
          lg->debug("majordomo: {}", s);
          break;
        case MajordomoBroker::LogLevel::kInfo:
          lg->info("majordomo: {}", s);
          break;
        case MajordomoBroker::LogLevel::kWarning:
          lg->warn("majordomo: {}", s);
          break;
      }
    });
    for (const std::string& ep : config.majordomo.endpoints) {
      if (absl::Status st = b.Bind(ep); !st.ok()) {
        return absl::Status(st.code(), BindError("majordomo", ep, st));
      }
    }
    if (absl::Status st =
            BindCurve(*r, reactor, b, config.majordomo.curve_endpoints);
        !st.ok()) {
      return st;
    }
    r->snapshot = [this] { return SnapshotOf(*majordomo); };
    InstallTimers(*r, reactor);
    return absl::OkStatus();
  });
}

absl::Status Daemon::Impl::StartConsensus() {
  auto rt = std::make_unique<BrokerRuntime>();
  rt->kind = "consensus";
  rt->metrics = &metrics.AddBroker(rt->kind, config.metrics_max_services);
  rt->thread = std::make_unique<ReactorThread>();
  BrokerRuntime* r = rt.get();
  runtimes.push_back(std::move(rt));

  ConsensusBroker::Options options;
  const ConsensusSettings& s = config.consensus;
  if (s.request_timeout) options.request_timeout = *s.request_timeout;
  if (s.client_idle_timeout) {
    options.client_idle_timeout = *s.client_idle_timeout;
  }
  if (s.max_heartbeat_interval) {
    options.max_heartbeat_interval = *s.max_heartbeat_interval;
  }
  if (s.max_heartbeat_liveness) {
    options.max_heartbeat_retries = static_cast<int>(*s.max_heartbeat_liveness);
  }
  auto size = [](std::int64_t n) { return static_cast<std::size_t>(n); };
  if (s.max_workers) options.max_workers = size(*s.max_workers);
  if (s.max_services) options.max_services = size(*s.max_services);
  if (s.max_clients) options.max_clients = size(*s.max_clients);
  if (s.max_requests_per_client) {
    options.max_requests_per_client = size(*s.max_requests_per_client);
  }
  if (s.max_message_size) options.max_message_size = *s.max_message_size;
  spdlog::logger* lg = log.get();
  options.log = [lg](ConsensusBroker::Severity severity, std::string_view s) {
    switch (severity) {
      case ConsensusBroker::Severity::kDebug:
        lg->debug("consensus: {}", s);
        break;
      case ConsensusBroker::Severity::kInfo:
        lg->info("consensus: {}", s);
        break;
      case ConsensusBroker::Severity::kWarning:
        lg->warn("consensus: {}", s);
        break;
      case ConsensusBroker::Severity::kError:
        lg->error("consensus: {}", s);
        break;
    }
  };

  return r->thread->invoke([&](Reactor& reactor) -> absl::Status {
    consensus = std::make_unique<ConsensusBroker>(reactor, context, options);
    r->destroy = [this, r] {
      r->monitor.reset();
      consensus.reset();
    };
    BrokerMetrics* m = r->metrics;
    consensus->set_latency_hook(
        [m](std::string_view, std::chrono::nanoseconds d) {
          m->ObserveLatency(d);
        });
    for (const std::string& ep : config.consensus.endpoints) {
      if (absl::Status st = consensus->Bind(ep); !st.ok()) {
        return absl::Status(st.code(), BindError("consensus", ep, st));
      }
    }
    if (absl::Status st = BindCurve(*r, reactor, *consensus,
                                    config.consensus.curve_endpoints);
        !st.ok()) {
      return st;
    }
    r->snapshot = [this] { return SnapshotOf(*consensus); };
    InstallTimers(*r, reactor);
    return absl::OkStatus();
  });
}

absl::Status Daemon::Impl::StartAuth() {
  absl::StatusOr<CurveFiles> files = LoadCurveFiles(config);
  if (!files.ok()) return files.status();
  std::vector<std::string> brokers;
  if (!config.majordomo.curve_endpoints.empty()) brokers.push_back("majordomo");
  if (!config.consensus.curve_endpoints.empty()) brokers.push_back("consensus");
  absl::StatusOr<std::unique_ptr<DaemonAuth>> a =
      DaemonAuth::Start(context, config, brokers, *files, log, metrics);
  if (!a.ok()) return a.status();
  auth = *std::move(a);
  curve_secret_key = files->secret_key;
  return absl::OkStatus();
}

template <typename Broker>
absl::Status Daemon::Impl::BindCurve(
    BrokerRuntime& rt, Reactor& reactor, Broker& broker,
    const std::vector<std::string>& endpoints) {
  if (endpoints.empty() || auth == nullptr) return absl::OkStatus();
  // Plaintext endpoints are bound first: a listener bound after a CURVE one
  // keeps its ZAP domain (zbrokers/security/curve.h) and would ask the ZAP
  // handler about every plaintext peer.
  const ListenerSecurity security{.curve_secret_key = curve_secret_key,
                                  .zap_domain = rt.kind};
  for (const std::string& ep : endpoints) {
    if (absl::Status st = broker.Bind(ep, security); !st.ok()) {
      return absl::Status(st.code(), BindError(rt.kind, ep, st));
    }
  }
  const std::string monitor_ep = DaemonAuth::MonitorEndpoint(rt.kind);
  if (absl::Status st = broker.Monitor(monitor_ep, HandshakeMonitor::kEvents);
      !st.ok()) {
    return st;
  }
  DaemonAuth* a = auth.get();
  rt.monitor = std::make_unique<HandshakeMonitor>(
      reactor, context, monitor_ep,
      [a, kind = rt.kind](const HandshakeMonitor::Failure& f) {
        a->OnHandshakeFailure(kind, f);
      });
  return rt.monitor->Start();
}

void Daemon::Impl::InstallTimers(BrokerRuntime& rt, Reactor& reactor) {
  BrokerRuntime* r = &rt;
  r->timers.push_back(*reactor.every(
      kMetricsRefresh, [r] { r->metrics->Update(r->snapshot()); }));
  if (config.stats_interval.count() > 0) {
    spdlog::logger* lg = log.get();
    r->timers.push_back(*reactor.every(config.stats_interval, [r, lg] {
      BrokerSnapshot now = r->snapshot();
      lg->info("{}", StatsLine(r->kind, now, r->last_logged));
      r->last_logged = std::move(now);
    }));
  }
}

absl::Status Daemon::Impl::StartHttp() {
  int major = 0, minor = 0, patch = 0;
  zmq_version(&major, &minor, &patch);
  metrics.SetBuildInfo(
      {{"version", ZB_VERSION},
       {"libzmq", absl::StrFormat("%d.%d.%d", major, minor, patch)}});
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start(
      config.metrics,  // "host:port" (daemon.metrics)
      {{"/metrics",
        [this] {
          return HttpServer::Response{200, metrics.Serialize(),
                                      "text/plain; version=0.0.4"};
        }},
       // Liveness: the process runs and answers.
       {"/healthz",
        [] {
          return HttpServer::Response{200, "ok\n"};
        }},
       // Readiness: every broker is bound and taking requests.
       {"/readyz", [this] {
          switch (phase.load()) {
            case Phase::kReady:
              return HttpServer::Response{200, "ready\n"};
            case Phase::kStarting:
              return HttpServer::Response{503, "starting\n"};
            case Phase::kDraining:
              return HttpServer::Response{503, "draining\n"};
            case Phase::kStopped:
              break;
          }
          return HttpServer::Response{503, "stopped\n"};
        }}});
  if (!server.ok()) return server.status();
  http = *std::move(server);
  return absl::OkStatus();
}

absl::Status Daemon::Impl::StartControl() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  signal_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signal_fd < 0) {
    return absl::InternalError(
        absl::StrFormat("signalfd: %s", std::strerror(errno)));
  }
  std::lock_guard<std::mutex> lock(control_mu);
  control = std::make_unique<ReactorThread>();
  control_reactor = &control->reactor();
  return control->invoke([this](Reactor& reactor) {
    *reactor.every(kMemoryTrimInterval, [this] {
      if (const std::size_t held = TrimFreeMemory(); held > 0) {
        log->debug("memory: gave {} MiB of free heap back to the system",
                   held >> 20);
      }
    });
    return reactor.add_fd(signal_fd, [this] { OnSignal(); });
  });
}

void Daemon::Impl::OnSignal() {
  signalfd_siginfo info;
  while (read(signal_fd, &info, sizeof(info)) ==
         static_cast<ssize_t>(sizeof(info))) {
    if (info.ssi_signo == SIGHUP) {
      Reload();
      continue;
    }
    const char* name = info.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM";
    if (state == State::kRunning) {
      BeginDrain(name);
    } else if (state == State::kDraining) {
      log->warn("{} during the drain: stopping now", name);
      Finish("second signal");
    }
  }
}

void Daemon::Impl::BeginDrain(std::string_view why) {
  if (state != State::kRunning) return;
  state = State::kDraining;
  phase.store(Phase::kDraining);
  log->info(
      "{}: shutting down, draining for up to {}: no new requests, open ones "
      "may finish",
      why, FormatDuration(config.grace));
  drains_pending = static_cast<int>(runtimes.size());
  for (const std::unique_ptr<BrokerRuntime>& rt : runtimes) {
    BrokerRuntime* r = rt.get();
    // Runs on the broker's thread, possibly after a forced stop has already
    // taken the control thread down.
    auto drained = [this, r] {
      PostToControl([this, r] { OnBrokerDrained(r->kind); });
    };
    const milliseconds grace = config.grace;
    if (r->kind == "majordomo") {
      r->thread->reactor().post([this, r, grace, drained] {
        if (r->broker_destroyed) return;
        majordomo->Drain(grace, drained);
      });
    } else {
      // The consensus broker refuses new requests at once (REPLY_FAILURE
      // "zb:shutdown"), fails what is still open at the end of the grace
      // period the same way, and then posts its callback.
      r->thread->reactor().post([this, r, grace, drained] {
        if (r->broker_destroyed) return;
        consensus->Drain(grace, [r, drained] {
          // Posted by the destructor too, after a second signal: the
          // broker is gone then (issue 10, item 10: reading it, SIGSEGV).
          if (r->broker_destroyed) return;
          r->metrics->Update(r->snapshot());
          drained();
        });
      });
    }
  }
  *control_reactor->after(config.grace + kDrainSlack,
                          [this] { Finish("drain did not finish in time"); });
}

void Daemon::Impl::OnBrokerDrained(const std::string& kind) {
  if (state != State::kDraining) return;
  log->info("{}: drained", kind);
  if (--drains_pending == 0) Finish("drained");
}

void Daemon::Impl::Finish(std::string_view why) {
  if (state == State::kStopped) return;
  state = State::kStopped;
  phase.store(Phase::kStopped);
  log->info("stopping ({})", why);
  done.Notify();
}

void Daemon::Impl::Reload() {
  if (!reload_source) {
    log->warn("SIGHUP: no configuration to read again; nothing changed");
    return;
  }
  log->info("SIGHUP: reading the configuration again");
  absl::StatusOr<DaemonConfig> next = reload_source();
  if (!next.ok()) {
    log->error("SIGHUP: {}; keeping the running configuration",
               std::string(next.status().message()));
    return;
  }
  if (next->log_level != applied.log_level) {
    log->info("SIGHUP: log level {} -> {}", LogLevelName(applied.log_level),
              LogLevelName(next->log_level));
    log->set_level(ToSpdlogLevel(next->log_level));
  }
  if (next->log_format != applied.log_format) {
    log->info("SIGHUP: log format {} -> {}", LogFormatName(applied.log_format),
              LogFormatName(next->log_format));
    SetLogFormat(*log, next->log_format);
  }
  std::vector<ReloadHandler> handlers;
  {
    std::lock_guard<std::mutex> lock(reload_mu);
    handlers = reload_handlers;
  }
  // Every key that differs and nothing applies: named, so that nobody
  // believes a change took effect.
  absl::flat_hash_set<std::string> live = {"daemon.log_level",
                                           "daemon.log_format"};
  for (const ReloadHandler& h : handlers)
    live.insert(h.keys.begin(), h.keys.end());
  const auto before = ConfigValues(applied);
  const auto after = ConfigValues(*next);
  for (std::size_t i = 0; i < before.size() && i < after.size(); ++i) {
    if (before[i].second != after[i].second &&
        !live.contains(before[i].first)) {
      log->warn("SIGHUP: {} changed; it takes effect after a restart",
                before[i].first);
    }
  }
  for (const ReloadHandler& h : handlers) {
    if (absl::Status s = h.apply(*next); !s.ok()) {
      log->error("SIGHUP: {}: {}", h.name, std::string(s.message()));
    }
  }
  // What needs a restart keeps the values the daemon runs with, so that a
  // later SIGHUP reports it again rather than forget it.
  const DaemonConfig previous = applied;
  applied = *next;
  applied.majordomo = previous.majordomo;
  applied.consensus = previous.consensus;
  applied.metrics = previous.metrics;
  applied.stats_interval = previous.stats_interval;
  applied.grace = previous.grace;
}

void Daemon::Impl::PostToControl(Reactor::Task task) {
  std::lock_guard<std::mutex> lock(control_mu);
  if (control != nullptr) control->reactor().post(std::move(task));
}

void Daemon::Impl::Teardown() {
  if (torn_down) return;
  torn_down = true;
  // No more signals or drain steps.
  std::unique_ptr<ReactorThread> ctl;
  {
    std::lock_guard<std::mutex> lock(control_mu);
    ctl = std::move(control);
  }
  if (ctl != nullptr) {
    ctl->invoke([this](Reactor& reactor) {
      if (signal_fd >= 0) reactor.remove_fd(signal_fd).IgnoreError();
    });
    StopThread(*ctl);
    ctl.reset();
  }
  if (signal_fd >= 0) {
    close(signal_fd);
    signal_fd = -1;
  }
  // Final counters, then the brokers themselves, each on its own thread.
  for (const std::unique_ptr<BrokerRuntime>& rt : runtimes) {
    BrokerRuntime* r = rt.get();
    r->thread->invoke([this, r](Reactor& reactor) {
      for (TimerId id : r->timers) reactor.cancel(id);
      r->timers.clear();
      if (r->snapshot && ready) {
        const BrokerSnapshot last = r->snapshot();
        r->metrics->Update(last);
        log->info("{}", TotalsLine(r->kind, last));
      }
      r->broker_destroyed = true;
      if (r->destroy) r->destroy();
    });
    StopThread(*r->thread);
    r->thread.reset();
  }
  // The ZAP handler goes after the last CURVE listener.
  auth.reset();
}

Daemon::Daemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Daemon::~Daemon() { impl_.reset(); }

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(
    const DaemonConfig& config, std::shared_ptr<spdlog::logger> log,
    ConfigSource reload) {
  if (absl::Status s = ValidateConfig(config); !s.ok()) return s;
  auto impl = std::make_unique<Impl>(config, log, std::move(reload));
  log->info("zb-broker {} starting", ZB_VERSION);
  if (!config.metrics.empty()) {
    if (absl::Status s = impl->StartHttp(); !s.ok()) return s;
  }
  if (HasCurveEndpoints(config)) {
    if (absl::Status s = impl->StartAuth(); !s.ok()) return s;
  }
  if (!config.majordomo.endpoints.empty() ||
      !config.majordomo.curve_endpoints.empty()) {
    if (absl::Status s = impl->StartMajordomo(); !s.ok()) return s;
  }
  if (!config.consensus.endpoints.empty() ||
      !config.consensus.curve_endpoints.empty()) {
    if (absl::Status s = impl->StartConsensus(); !s.ok()) return s;
  }
  impl->curve_secret_key.reset();  // the listeners have their copies
  if (absl::Status s = impl->StartControl(); !s.ok()) return s;

  impl->ready = true;
  impl->phase.store(Impl::Phase::kReady);
  std::unique_ptr<Daemon> daemon(new Daemon(std::move(impl)));
  Impl& d = *daemon->impl_;
  // Each broker bound its plaintext endpoints first, then its CURVE ones.
  auto split = [](std::vector<std::string> all, std::size_t plain,
                  std::vector<std::string>& plain_out,
                  std::vector<std::string>& curve_out) {
    plain = std::min(plain, all.size());
    curve_out.assign(all.begin() + static_cast<std::ptrdiff_t>(plain),
                     all.end());
    all.resize(plain);
    plain_out = std::move(all);
  };
  for (const std::unique_ptr<BrokerRuntime>& rt : d.runtimes) {
    if (rt->kind == "majordomo") {
      split(rt->thread->invoke(
                [&](Reactor&) { return d.majordomo->endpoints(); }),
            config.majordomo.endpoints.size(), daemon->majordomo_endpoints_,
            daemon->majordomo_curve_endpoints_);
    } else {
      split(rt->thread->invoke(
                [&](Reactor&) { return d.consensus->endpoints(); }),
            config.consensus.endpoints.size(), daemon->consensus_endpoints_,
            daemon->consensus_curve_endpoints_);
    }
  }
  for (const std::string& ep : daemon->majordomo_endpoints_) {
    log->info("majordomo: listening on {}", ep);
  }
  for (const std::string& ep : daemon->majordomo_curve_endpoints_) {
    log->info("majordomo: listening on {} (CURVE)", ep);
  }
  for (const std::string& ep : daemon->consensus_endpoints_) {
    log->info("consensus: listening on {}", ep);
  }
  for (const std::string& ep : daemon->consensus_curve_endpoints_) {
    log->info("consensus: listening on {} (CURVE)", ep);
  }
  if (d.auth == nullptr && (!config.curve_secret_key_file.empty() ||
                            !config.curve_allowlist.empty())) {
    log->warn(
        "curve: keys are configured but no broker has curve_endpoints: "
        "every endpoint is plaintext");
  }
  if (d.auth != nullptr) {
    DaemonAuth* auth = d.auth.get();
    daemon->AddReloadHandler(
        {"curve", {"daemon.curve_allowlist"}, [auth](const DaemonConfig& next) {
           return auth->Reload(next);
         }});
  }
  if (d.http != nullptr) {
    log->info(
        "metrics: listening on http://{}:{}/metrics (and /healthz, /readyz)",
        d.http->host(), d.http->port());
  }
  log->info("ready: {} broker(s), log level {}, stats every {}, grace {}",
            d.runtimes.size(), LogLevelName(config.log_level),
            config.stats_interval.count() > 0
                ? FormatDuration(config.stats_interval)
                : std::string("(off)"),
            FormatDuration(config.grace));
  return daemon;
}

absl::Status Daemon::Wait() {
  impl_->done.Wait();
  impl_->Teardown();
  if (!impl_->result.ok()) {
    impl_->log->error("stopped after an error: {}", impl_->result.ToString());
    return impl_->result;
  }
  impl_->log->info("stopped");
  return absl::OkStatus();
}

void Daemon::Shutdown() {
  Impl* d = impl_.get();
  d->PostToControl([d] { d->BeginDrain("Shutdown()"); });
}

void Daemon::AddReloadHandler(ReloadHandler handler) {
  std::lock_guard<std::mutex> lock(impl_->reload_mu);
  impl_->reload_handlers.push_back(std::move(handler));
}

int Daemon::metrics_port() const {
  return impl_->http != nullptr ? impl_->http->port() : 0;
}

}  // namespace zb
