// Copyright 2026 The zbrokers Authors.

#include "brokers/daemon/auth.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"

namespace zb {
namespace {

struct AuthFamilies {
  explicit AuthFamilies(prometheus::Registry& r)
      : failures(prometheus::BuildCounter()
                     .Name("zb_auth_failures_total")
                     .Help("Handshakes refused (CURVE/ZAP), by reason")
                     .Register(r)),
        allowed(prometheus::BuildCounter()
                    .Name("zb_auth_allowed_total")
                    .Help("CURVE clients let in by the allowlist")
                    .Register(r)),
        allowlist_keys(prometheus::BuildGauge()
                           .Name("zb_curve_allowlist_keys")
                           .Help("Client public keys in the CURVE allowlist")
                           .Register(r)) {}

  prometheus::Family<prometheus::Counter>& failures;
  prometheus::Family<prometheus::Counter>& allowed;
  prometheus::Family<prometheus::Gauge>& allowlist_keys;
};

}  // namespace

// The registry merges families registered twice under one name, so a
// second DaemonAuth on the same Metrics shares these series.
struct DaemonAuth::Families : AuthFamilies {
  using AuthFamilies::AuthFamilies;
};

bool LogRateLimiter::Allow(std::uint64_t* suppressed) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  if (now - window_start_ >= window_) {
    window_start_ = now;
    in_window_ = 0;
  }
  if (in_window_ >= burst_) {
    ++suppressed_;
    return false;
  }
  ++in_window_;
  *suppressed = suppressed_;
  suppressed_ = 0;
  return true;
}

DaemonAuth::DaemonAuth(std::shared_ptr<spdlog::logger> log, Metrics& metrics)
    : log_(std::move(log)),
      families_(std::make_unique<Families>(metrics.registry())) {}

std::string DaemonAuth::MonitorEndpoint(std::string_view broker) {
  return absl::StrFormat("inproc://zb-broker-handshakes-%s", broker);
}

absl::StatusOr<std::unique_ptr<DaemonAuth>> DaemonAuth::Create(
    zmq::context_t& context, const DaemonConfig& config,
    std::vector<std::string> brokers, const CurveFiles& files,
    std::shared_ptr<spdlog::logger> log, Metrics& metrics) {
  std::unique_ptr<DaemonAuth> auth(new DaemonAuth(log, metrics));
  auth->brokers_ = brokers;
  Families& families = *auth->families_;
  // Every series exists from the start (at 0), so that rate() and alerts
  // work before the first refusal.
  for (const std::string& b : brokers) {
    for (std::string_view reason : HandshakeMonitor::kReasons) {
      auth->FailureCounter(b, reason);
    }
    families.allowed.Add({{"broker", b}});
  }
  auth->allowlist_keys_ = &families.allowlist_keys.Add({});

  auto list = std::make_shared<const CurveAllowlist>(files.allowlist);
  {
    std::lock_guard<std::mutex> lock(auth->reload_mu_);
    auth->current_ = list;
  }
  auth->allowlist_keys_->Set(static_cast<double>(list->size()));
  auth->thread_ = std::make_unique<ReactorThread>();
  DaemonAuth* a = auth.get();
  absl::Status started = a->thread_->Invoke([&](Reactor& reactor) {
    absl::StatusOr<std::unique_ptr<ZapHandler>> zap =
        ZapHandler::Create(reactor, context);
    if (!zap.ok()) return zap.status();
    a->zap_ = *std::move(zap);
    a->zap_->set_allowlist(list);
    a->zap_->set_domains(brokers);
    a->zap_->set_decision_hook(
        [a](const ZapHandler::Decision& d) { a->OnDecision(d); });
    return absl::OkStatus();
  });
  if (!started.ok()) {
    return absl::Status(started.code(),
                        absl::StrFormat("curve: cannot start the ZAP handler: "
                                        "%s",
                                        started.message()));
  }
  log->info("curve: server public key {} (clients use it as their server key)",
            Z85(files.public_key));
  if (!files.secret_key_warning.empty()) {
    log->warn("curve: {}", files.secret_key_warning);
  }
  log->info("curve: allowlist {}: {} key(s){}", config.curve_allowlist,
            list->size(),
            list->ignored_files() > 0
                ? absl::StrFormat(" (%d file(s) ignored: not *.pub)",
                                  list->ignored_files())
                : std::string());
  if (list->size() == 0) {
    log->warn(
        "curve: the allowlist is empty: no client can use the CURVE "
        "endpoints until keys are added (then send SIGHUP)");
  }
  return auth;
}

DaemonAuth::~DaemonAuth() {
  if (thread_ == nullptr) return;
  thread_->Invoke([this](Reactor&) { zap_.reset(); });
  thread_->Stop();
  thread_->join().IgnoreError();
}

std::size_t DaemonAuth::allowlist_size() const {
  std::lock_guard<std::mutex> lock(reload_mu_);
  return current_ == nullptr ? 0 : current_->size();
}

absl::Status DaemonAuth::Reload(const DaemonConfig& config) {
  std::lock_guard<std::mutex> lock(reload_mu_);
  absl::StatusOr<CurveAllowlist> loaded =
      config.curve_allowlist.empty()
          ? absl::InvalidArgumentError(
                "daemon.curve_allowlist is no longer set (CURVE endpoints "
                "need it; removing them needs a restart)")
          : LoadCurveAllowlist(config);
  if (!loaded.ok()) {
    return absl::Status(
        loaded.status().code(),
        absl::StrFormat("allowlist reload failed, keeping the previous %d "
                        "key(s): %s",
                        current_->size(), loaded.status().message()));
  }
  auto next = std::make_shared<const CurveAllowlist>(*std::move(loaded));
  std::size_t added = 0;
  std::size_t removed = 0;
  for (const CurveKey& k : next->keys()) added += current_->Contains(k) ? 0 : 1;
  for (const CurveKey& k : current_->keys())
    removed += next->Contains(k) ? 0 : 1;
  thread_->Invoke([&](Reactor&) { zap_->set_allowlist(next); });
  current_ = next;
  allowlist_keys_->Set(static_cast<double>(next->size()));
  log_->info("curve: allowlist {} reloaded: {} key(s), {} added, {} removed",
             config.curve_allowlist, next->size(), added, removed);
  return absl::OkStatus();
}

prometheus::Counter& DaemonAuth::FailureCounter(std::string_view broker,
                                                std::string_view reason) {
  // Family::Add returns the existing series for known labels.
  return families_->failures.Add(
      {{"broker", std::string(broker)}, {"reason", std::string(reason)}});
}

void DaemonAuth::OnHandshakeFailure(std::string_view broker,
                                    const HandshakeMonitor::Failure& f) {
  FailureCounter(broker, f.reason).Increment();
  if (f.reason == "key_not_allowed") return;  // OnDecision logged it
  std::uint64_t suppressed = 0;
  if (!limiter_.Allow(&suppressed)) return;
  log_->warn(
      "{}: refused a handshake on {}: {}{}{}", broker, f.endpoint,
      HandshakeMonitor::Describe(f.reason),
      f.reason == "other"
          ? absl::StrFormat(" (%s)", std::strerror(static_cast<int>(f.value)))
          : std::string(),
      suppressed > 0 ? absl::StrFormat(" (%d similar line(s) "
                                       "suppressed)",
                                       suppressed)
                     : std::string());
}

void DaemonAuth::OnDecision(const ZapHandler::Decision& d) {
  // Runs on the auth thread, once per CURVE handshake that decrypted.
  if (d.allowed) {
    if (d.mechanism == "CURVE") {
      families_->allowed.Add({{"broker", std::string(d.domain)}}).Increment();
      log_->debug("{}: CURVE client {} ({}) from {} let in", d.domain,
                  d.label.empty() ? std::string_view("(unlabelled)") : d.label,
                  d.key, d.address);
    }
    return;
  }
  std::uint64_t suppressed = 0;
  if (!limiter_.Allow(&suppressed)) return;
  log_->warn("{}: refused {} client {}{} from {}: {}{}", d.domain, d.mechanism,
             d.key.empty() ? "" : "key ", d.key, d.address, d.status_text,
             suppressed > 0 ? absl::StrFormat(" (%d similar line(s) "
                                              "suppressed)",
                                              suppressed)
                            : std::string());
}

}  // namespace zb
