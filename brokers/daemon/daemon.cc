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
#include "brokers/daemon/broker_runtime.h"
#include "brokers/daemon/ha.h"
#include "brokers/daemon/http_server.h"
#include "brokers/daemon/logging.h"
#include "brokers/daemon/metrics.h"
#include "zbrokers/majordomo/broker.h"
#include "zbrokers/reactor/batch_scheduling.h"
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
// Where the Majordomo broker listens for the daemon's own Titanic
// ([titanic]); in-process only, never reported as a listening endpoint.
constexpr const char* kTitanicBrokerEndpoint = "inproc://zb-broker-titanic";

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

std::string StatsLine(std::string_view name, const BrokerSnapshot& now,
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
      name, now.requests, delta(now.requests, before.requests), now.replies,
      delta(now.replies, before.replies), now.failures,
      delta(now.failures, before.failures), now.timeouts,
      delta(now.timeouts, before.timeouts), now.malformed,
      delta(now.malformed, before.malformed), now.open_requests,
      now.services.size(), workers, queued);
}

// "NAME: cannot bind EP: why", without repeating what the broker's own
// message already says.
std::string BindError(std::string_view name, const std::string& ep,
                      const absl::Status& st) {
  const std::string_view msg(st.message().data(), st.message().size());
  if (msg.find(ep) != std::string_view::npos) {
    return absl::StrFormat("%s: %s", name, msg);
  }
  return absl::StrFormat("%s: cannot bind %s: %s", name, ep, msg);
}

// The last line a broker logs: what it did over its whole life.
std::string TotalsLine(std::string_view name, const BrokerSnapshot& s) {
  return absl::StrFormat(
      "%s: totals: %d request(s), %d success, %d failure(s), %d timeout(s), "
      "%d malformed",
      name, s.requests, s.successes, s.failures, s.timeouts, s.malformed);
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

// The endpoints one broker bound, as Daemon's accessors report them.
struct Listening {
  std::vector<std::string> plain;
  std::vector<std::string> curve;
};

// One broker the configuration asks for.
struct BrokerPlan {
  std::string_view name;
  const std::vector<std::string>* endpoints;  // plaintext, bound first
  const std::vector<std::string>* curve_endpoints;
  // Builds the broker on its reactor thread.
  std::function<absl::StatusOr<std::unique_ptr<BrokerRuntime>>(
      const BrokerEnvironment&)>
      create;
  Listening* listening;  // filled once every broker is bound
  // In-process endpoints bound before the others, for the daemon's own
  // peers (Titanic): BindInternal(), so never gated by the fail-over pair;
  // not in the broker's listening lists.
  std::vector<std::string> internal_endpoints = {};
};

// One broker and everything that runs next to it on its reactor thread.
struct RunningBroker {
  std::string name;  // BrokerRuntime::name(), known before it exists
  std::size_t plain_endpoints = 0;  // how many of its endpoints are plaintext
  Listening* listening = nullptr;
  std::unique_ptr<ReactorThread> thread;
  BrokerMetrics* metrics = nullptr;
  // Reactor-thread state.
  std::unique_ptr<BrokerRuntime> runtime;
  BrokerSnapshot last_logged;
  // Every timer that calls into the broker; cleared (so cancelled) before
  // the broker is destroyed (the reactor keeps running until its thread is
  // stopped).
  std::vector<Reactor::Timer> timers;
  // Set on the reactor thread just before the broker is destroyed.  Drain
  // steps may still be queued on the reactor then (a broker's destructor
  // posts the `done` of an unfinished drain): they must find the broker
  // gone and do nothing.
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

  // The brokers the configuration asks for (those with an endpoint), in
  // the order they start.
  std::vector<BrokerPlan> Plans();
  // Builds and binds one broker on a new reactor thread.
  absl::Status StartBroker(const BrokerPlan& plan);
  // CURVE: the ZAP handler (before any broker binds), then per broker the
  // CURVE endpoints and the handshake monitor (on its reactor thread).
  absl::Status StartAuth();
  absl::Status BindCurve(RunningBroker& rb, Reactor& reactor,
                         const std::vector<std::string>& endpoints);
  absl::Status StartControl();
  absl::Status StartHttp();
  void InstallTimers(RunningBroker& rb, Reactor& reactor);

  // Control-thread side of the drain.
  void OnSignal();
  // SIGHUP: reads the configuration again and applies what it can.
  void Reload();
  void BeginDrain(std::string_view why);
  void OnBrokerDrained(const std::string& name);
  void Finish(std::string_view why);

  // Stops and joins `thread`; keeps the first error its reactor reported.
  void StopThread(ReactorThread& thread) {
    thread.Stop();
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
  // The fail-over pair ([ha]), when configured: built before the brokers,
  // whose request gates call it, and destroyed after them and after the
  // HTTP server, which reports its state.
  std::unique_ptr<DaemonHa> ha;
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

  // Brokers; each runtime lives on its own thread.
  std::vector<std::unique_ptr<RunningBroker>> runtimes;
  Listening majordomo_listening;
  Listening consensus_listening;
  Listening titanic_listening;  // always empty: Titanic binds nothing

  // Control thread: signals and drain coordination.  The pointer itself is
  // guarded by control_mu so that posts from other threads (Shutdown(), a
  // broker reporting it is drained) never race with Teardown().
  std::mutex control_mu;
  std::unique_ptr<ReactorThread> control;
  // control->reactor(), fixed at start; used on the control thread only.
  Reactor* control_reactor = nullptr;
  int signal_fd = -1;
  // The control reactor's registrations (control thread only), reset on it
  // by Teardown() before the thread ends.
  Reactor::SocketWatch signal_watch;  // signal_fd
  Reactor::Timer trim_timer;          // kMemoryTrimInterval
  Reactor::Timer drain_deadline;      // set by BeginDrain()
  enum class State { kRunning, kDraining, kStopped };
  State state = State::kRunning;  // control thread only
  int drains_pending = 0;         // control thread only

  Notification done;    // Finish() -> Wait()
  bool ready = false;   // Create() succeeded
  absl::Status result;  // the first reactor error, set by Teardown()
  bool torn_down = false;
};

std::vector<BrokerPlan> Daemon::Impl::Plans() {
  std::vector<BrokerPlan> all = {
      {MajordomoRuntime::kName, &config.majordomo.endpoints,
       &config.majordomo.curve_endpoints,
       [this](const BrokerEnvironment& env) {
         return MajordomoRuntime::Create(env, config.majordomo);
       },
       &majordomo_listening},
      {ConsensusRuntime::kName, &config.consensus.endpoints,
       &config.consensus.curve_endpoints,
       [this](const BrokerEnvironment& env) {
         return ConsensusRuntime::Create(env, config.consensus);
       },
       &consensus_listening},
  };
  std::erase_if(all, [](const BrokerPlan& p) {
    return p.endpoints->empty() && p.curve_endpoints->empty();
  });
  // Titanic goes after the Majordomo broker it sits in front of
  // (ValidateConfig() made sure there is one).
  if (!config.titanic.store_path.empty() && !all.empty() &&
      all.front().name == MajordomoRuntime::kName) {
    all.front().internal_endpoints.push_back(kTitanicBrokerEndpoint);
    static const std::vector<std::string> kNone;
    all.push_back({TitanicRuntime::kName, &kNone, &kNone,
                   [this](const BrokerEnvironment& env) {
                     return TitanicRuntime::Create(
                         env, config.titanic, kTitanicBrokerEndpoint,
                         config.majordomo.heartbeat_interval.value_or(
                             MajordomoBroker::Options().heartbeat_interval));
                   },
                   &titanic_listening});
  }
  return all;
}

absl::Status Daemon::Impl::StartBroker(const BrokerPlan& plan) {
  auto rb = std::make_unique<RunningBroker>();
  rb->name = std::string(plan.name);
  rb->plain_endpoints = plan.endpoints->size();
  rb->listening = plan.listening;
  rb->metrics = &metrics.AddBroker(rb->name, config.metrics_max_services);
  Reactor::Options reactor_options;
  reactor_options.yield_before_sleep = config.yield_before_sleep;
  reactor_options.batch_scheduling = config.batch_scheduling;
  rb->thread = std::make_unique<ReactorThread>(reactor_options);
  RunningBroker* r = rb.get();
  runtimes.push_back(std::move(rb));

  return r->thread->Invoke([&](Reactor& reactor) -> absl::Status {
    // Kept at once: a broker must be destroyed on its thread (Teardown)
    // even when a Bind() below fails.
    absl::StatusOr<std::unique_ptr<BrokerRuntime>> runtime =
        plan.create({reactor, context, *log, *r->metrics});
    if (!runtime.ok()) {
      return absl::Status(
          runtime.status().code(),
          absl::StrFormat("%s: %s", r->name, runtime.status().message()));
    }
    r->runtime = *std::move(runtime);
    if (ha != nullptr) r->runtime->SetRequestGate(ha->Gate());
    for (const std::string& ep : plan.internal_endpoints) {
      if (absl::Status st = r->runtime->BindInternal(ep); !st.ok()) {
        return absl::Status(st.code(), BindError(r->name, ep, st));
      }
    }
    for (const std::string& ep : *plan.endpoints) {
      if (absl::Status st = r->runtime->Bind(ep, {}); !st.ok()) {
        return absl::Status(st.code(), BindError(r->name, ep, st));
      }
    }
    if (absl::Status st = BindCurve(*r, reactor, *plan.curve_endpoints);
        !st.ok()) {
      return st;
    }
    InstallTimers(*r, reactor);
    // Not a reason to stop: the broker works as well, it only wakes more.
    if (const absl::Status& batch = reactor.batch_scheduling_status();
        !batch.ok()) {
      log->warn("{}: batch scheduling is off: {}", r->name,
                std::string(batch.message()));
    }
    return absl::OkStatus();
  });
}

absl::Status Daemon::Impl::StartAuth() {
  absl::StatusOr<CurveFiles> files = LoadCurveFiles(config);
  if (!files.ok()) return files.status();
  // The ZAP domains: every broker with CURVE endpoints.
  std::vector<std::string> domains;
  for (const BrokerPlan& plan : Plans()) {
    if (!plan.curve_endpoints->empty()) domains.emplace_back(plan.name);
  }
  absl::StatusOr<std::unique_ptr<DaemonAuth>> a =
      DaemonAuth::Create(context, config, domains, *files, log, metrics);
  if (!a.ok()) return a.status();
  auth = *std::move(a);
  curve_secret_key = files->secret_key;
  return absl::OkStatus();
}

absl::Status Daemon::Impl::BindCurve(
    RunningBroker& rb, Reactor& reactor,
    const std::vector<std::string>& endpoints) {
  if (endpoints.empty() || auth == nullptr) return absl::OkStatus();
  // Plaintext endpoints are bound first: a listener bound after a CURVE one
  // keeps its ZAP domain (zbrokers/security/curve.h) and would ask the ZAP
  // handler about every plaintext peer.
  const ListenerSecurity security{.curve_secret_key = curve_secret_key,
                                  .zap_domain = rb.name};
  for (const std::string& ep : endpoints) {
    if (absl::Status st = rb.runtime->Bind(ep, security); !st.ok()) {
      return absl::Status(st.code(), BindError(rb.name, ep, st));
    }
  }
  const std::string monitor_ep = DaemonAuth::MonitorEndpoint(rb.name);
  if (absl::Status st =
          rb.runtime->Monitor(monitor_ep, HandshakeMonitor::kEvents);
      !st.ok()) {
    return st;
  }
  DaemonAuth* a = auth.get();
  absl::StatusOr<std::unique_ptr<HandshakeMonitor>> monitor =
      HandshakeMonitor::Create(
          reactor, context, monitor_ep,
          [a, name = rb.name](const HandshakeMonitor::Failure& f) {
            a->OnHandshakeFailure(name, f);
          });
  if (!monitor.ok()) return monitor.status();
  rb.monitor = *std::move(monitor);
  return absl::OkStatus();
}

void Daemon::Impl::InstallTimers(RunningBroker& rb, Reactor& reactor) {
  RunningBroker* r = &rb;
  // The pair's stats line comes with the first broker's.
  const bool log_ha = ha != nullptr && &rb == runtimes.front().get();
  r->timers.push_back(*reactor.Every(
      kMetricsRefresh, [r] { r->metrics->Update(r->runtime->Snapshot()); }));
  if (config.stats_interval.count() > 0) {
    spdlog::logger* lg = log.get();
    DaemonHa* h = log_ha ? ha.get() : nullptr;
    r->timers.push_back(*reactor.Every(config.stats_interval, [r, lg, h] {
      BrokerSnapshot now = r->runtime->Snapshot();
      lg->info("{}", StatsLine(r->name, now, r->last_logged));
      r->last_logged = std::move(now);
      if (h != nullptr) lg->info("{}", h->StatusLine());
    }));
  }
}

absl::Status Daemon::Impl::StartHttp() {
  int major = 0, minor = 0, patch = 0;
  zmq_version(&major, &minor, &patch);
  metrics.SetBuildInfo(
      {{"version", ZB_VERSION},
       {"libzmq", absl::StrFormat("%d.%d.%d", major, minor, patch)}});
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Create(
      config.metrics,  // "host:port" (daemon.metrics)
      {{"/metrics",
        [this] {
          return HttpServer::Response{200, metrics.Serialize(),
                                      "text/plain; version=0.0.4"};
        }},
       // Liveness: the process runs and answers (and, in a fail-over
       // pair, which state it is in: docs/ha.md).
       {"/healthz",
        [this] {
          if (ha != nullptr) {
            return HttpServer::Response{200, "ok\n" + ha->StatusLine() + "\n"};
          }
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
  return control->Invoke([this](Reactor& reactor) -> absl::Status {
    trim_timer = *reactor.Every(kMemoryTrimInterval, [this] {
      if (const std::size_t held = TrimFreeMemory(); held > 0) {
        log->debug("memory: gave {} MiB of free heap back to the system",
                   held >> 20);
      }
    });
    absl::StatusOr<Reactor::SocketWatch> watch =
        reactor.AddFd(signal_fd, [this] { OnSignal(); });
    if (!watch.ok()) return watch.status();
    signal_watch = *std::move(watch);
    return absl::OkStatus();
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
  const milliseconds grace = config.grace;
  for (const std::unique_ptr<RunningBroker>& rb : runtimes) {
    RunningBroker* r = rb.get();
    // Runs on the broker's thread, possibly after a forced stop has already
    // taken the control thread down.
    auto drained = [this, r] {
      PostToControl([this, r] { OnBrokerDrained(r->name); });
    };
    r->thread->reactor().Post([r, grace, drained] {
      if (r->broker_destroyed) return;
      r->runtime->Drain(grace, [r, drained] {
        // Posted by the broker's destructor too, after a second signal: the
        // broker is gone then (issue 10, item 10: reading it, SIGSEGV).
        if (r->broker_destroyed) return;
        r->metrics->Update(r->runtime->Snapshot());
        drained();
      });
    });
  }
  drain_deadline = *control_reactor->After(config.grace + kDrainSlack, [this] {
    Finish("drain did not finish in time");
  });
}

void Daemon::Impl::OnBrokerDrained(const std::string& name) {
  if (state != State::kDraining) return;
  log->info("{}: drained", name);
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
  applied.titanic = previous.titanic;
  applied.metrics = previous.metrics;
  applied.stats_interval = previous.stats_interval;
  applied.grace = previous.grace;
  applied.yield_before_sleep = previous.yield_before_sleep;
  applied.batch_scheduling = previous.batch_scheduling;
  applied.ha = previous.ha;
}

void Daemon::Impl::PostToControl(Reactor::Task task) {
  std::lock_guard<std::mutex> lock(control_mu);
  if (control != nullptr) control->reactor().Post(std::move(task));
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
    ctl->Invoke([this](Reactor&) {
      signal_watch.Reset();
      trim_timer.Reset();
      drain_deadline.Reset();
    });
    StopThread(*ctl);
    ctl.reset();
  }
  if (signal_fd >= 0) {
    close(signal_fd);
    signal_fd = -1;
  }
  // Final counters, then the brokers themselves, each on its own thread.
  for (const std::unique_ptr<RunningBroker>& rb : runtimes) {
    RunningBroker* r = rb.get();
    r->thread->Invoke([this, r](Reactor&) {
      r->timers.clear();
      if (r->runtime != nullptr && ready) {
        const BrokerSnapshot last = r->runtime->Snapshot();
        r->metrics->Update(last);
        log->info("{}", TotalsLine(r->name, last));
      }
      r->broker_destroyed = true;
      r->monitor.reset();
      r->runtime.reset();
    });
    StopThread(*r->thread);
    r->thread.reset();
  }
  // The ZAP handler goes after the last CURVE listener.
  auth.reset();
}

Daemon::Daemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Daemon::~Daemon() { impl_.reset(); }

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Create(
    const DaemonConfig& config, std::shared_ptr<spdlog::logger> log,
    ConfigSource reload) {
  if (absl::Status s = ValidateConfig(config); !s.ok()) return s;
  auto impl = std::make_unique<Impl>(config, log, std::move(reload));
  // Before any broker thread (a batch thread) opens a socket: libzmq's
  // threads keep the process's scheduling policy (batch_scheduling.h).
  StartContextThreads(impl->context);
  log->info("zb-broker {} starting", ZB_VERSION);
  if (config.ha.role.has_value()) {
    absl::StatusOr<std::unique_ptr<DaemonHa>> ha =
        DaemonHa::Create(impl->context, config.ha, *log, impl->metrics);
    if (!ha.ok()) return ha.status();
    impl->ha = *std::move(ha);
  }
  if (!config.metrics.empty()) {
    if (absl::Status s = impl->StartHttp(); !s.ok()) return s;
  }
  if (HasCurveEndpoints(config)) {
    if (absl::Status s = impl->StartAuth(); !s.ok()) return s;
  }
  for (const BrokerPlan& plan : impl->Plans()) {
    if (absl::Status s = impl->StartBroker(plan); !s.ok()) return s;
  }
  impl->curve_secret_key.reset();  // the listeners have their copies
  if (absl::Status s = impl->StartControl(); !s.ok()) return s;

  impl->ready = true;
  impl->phase.store(Impl::Phase::kReady);
  std::unique_ptr<Daemon> daemon(new Daemon(std::move(impl)));
  Impl& d = *daemon->impl_;
  // Each broker bound its plaintext endpoints first, then its CURVE ones
  // (its internal ones are not among them).
  auto split = [](std::vector<std::string> all, std::size_t plain,
                  std::vector<std::string>& plain_out,
                  std::vector<std::string>& curve_out) {
    plain = std::min(plain, all.size());
    curve_out.assign(all.begin() + static_cast<std::ptrdiff_t>(plain),
                     all.end());
    all.resize(plain);
    plain_out = std::move(all);
  };
  for (const std::unique_ptr<RunningBroker>& rb : d.runtimes) {
    split(
        rb->thread->Invoke([&](Reactor&) { return rb->runtime->endpoints(); }),
        rb->plain_endpoints, rb->listening->plain, rb->listening->curve);
  }
  for (const std::unique_ptr<RunningBroker>& rb : d.runtimes) {
    for (const std::string& ep : rb->listening->plain) {
      log->info("{}: listening on {}", rb->name, ep);
    }
    for (const std::string& ep : rb->listening->curve) {
      log->info("{}: listening on {} (CURVE)", rb->name, ep);
    }
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

const std::vector<std::string>& Daemon::majordomo_endpoints() const {
  return impl_->majordomo_listening.plain;
}
const std::vector<std::string>& Daemon::majordomo_curve_endpoints() const {
  return impl_->majordomo_listening.curve;
}
const std::vector<std::string>& Daemon::consensus_endpoints() const {
  return impl_->consensus_listening.plain;
}
const std::vector<std::string>& Daemon::consensus_curve_endpoints() const {
  return impl_->consensus_listening.curve;
}

int Daemon::metrics_port() const {
  return impl_->http != nullptr ? impl_->http->port() : 0;
}

}  // namespace zb
