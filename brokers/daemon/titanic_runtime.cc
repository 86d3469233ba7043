// Copyright 2026 The zbrokers Authors.
//
// The daemon's adapter for zb::Titanic (broker_runtime.h): Titanic runs on
// a reactor thread of its own (with synchronous = full, each stored request
// waits for an fsync there, not on a broker's thread), in front of the
// daemon's Majordomo broker, which it reaches over inproc.

#include <memory>
#include <string>
#include <utility>

#include "brokers/daemon/broker_adapter.h"
#include "brokers/daemon/broker_runtime.h"
#include "zbrokers/titanic/titanic.h"

namespace zb {
namespace {

TitanicOptions OptionsFrom(const TitanicSettings& s, const std::string& broker,
                           std::chrono::milliseconds heartbeat_interval) {
  TitanicOptions options;
  options.broker = broker;
  options.heartbeat_interval = heartbeat_interval;
  options.store_path = s.store_path;
  if (s.synchronous) {
    options.synchronous = *s.synchronous == "normal"
                              ? TitanicStoreOptions::Synchronous::kNormal
                              : TitanicStoreOptions::Synchronous::kFull;
  }
  if (s.max_requests) {
    options.max_requests = static_cast<std::size_t>(*s.max_requests);
  }
  if (s.max_request_bytes) {
    options.max_request_bytes = static_cast<std::size_t>(*s.max_request_bytes);
  }
  if (s.request_timeout) options.request_timeout = *s.request_timeout;
  if (s.retry_delay) options.retry_delay = *s.retry_delay;
  if (s.max_in_flight) {
    options.max_in_flight = static_cast<std::size_t>(*s.max_in_flight);
  }
  if (s.request_expiry) options.request_expiry = *s.request_expiry;
  return options;
}

class TitanicAdapter final : public BrokerRuntime {
 public:
  TitanicAdapter(Reactor& reactor, std::unique_ptr<Titanic> titanic)
      : reactor_(reactor), titanic_(std::move(titanic)) {}

  std::string_view name() const override { return TitanicRuntime::kName; }

  // Titanic listens on nothing of its own: clients reach it through the
  // Majordomo broker's endpoints.
  absl::Status Bind(const std::string& endpoint,
                    const ListenerSecurity&) override {
    return absl::FailedPreconditionError(
        "titanic: binds no endpoint (clients use the Majordomo broker's): " +
        endpoint);
  }
  absl::Status Monitor(const std::string&, int) override {
    return absl::FailedPreconditionError("titanic: has no socket to monitor");
  }
  // Nothing to wait for: a request in flight stays pending in the store and
  // the next start resumes it, and the Majordomo broker (draining at the
  // same time) takes no new titanic.* requests.
  void Drain(std::chrono::milliseconds,
             absl::AnyInvocable<void()> done) override {
    draining_ = true;
    reactor_.Post([done = std::move(done)]() mutable { done(); });
  }

  BrokerSnapshot Snapshot() const override {
    const Titanic::Stats s = titanic_->stats();
    BrokerSnapshot out;
    // Every call of titanic.request, titanic.reply and titanic.close gets
    // one answer.
    out.requests = s.accepted + s.refused_full + s.bad_requests +
                   s.replies_served + s.replies_pending + s.replies_unknown +
                   s.closed;
    out.replies = out.requests;
    out.failures = s.refused_full;
    out.successes = out.replies - out.failures - s.bad_requests;
    // Accepted requests that were never answered before request_expiry.
    out.timeouts = s.expired_pending;
    out.malformed = s.bad_requests;
    out.events = {
        {"replies_served", s.replies_served},
        {"replies_pending", s.replies_pending},
        {"replies_unknown", s.replies_unknown},
        {"dispatched", s.dispatched},
        {"retries", s.retries},
        {"duplicate_replies", s.duplicate_replies},
        {"closed_before_answer", s.closed_before_answer},
        {"expired_pending", s.expired_pending},
        {"store_errors", s.store_errors},
    };
    out.gauges = {
        {"titanic_stored_requests",
         "Requests in Titanic's store: pending, or answered and not closed",
         s.stored},
        {"titanic_pending_requests",
         "Requests in Titanic's store without a reply yet", s.pending},
        {"titanic_in_flight_requests",
         "Requests Titanic has sent to a worker and not had answered",
         s.in_flight},
    };
    out.counters = {
        {"titanic_accepted", "Requests stored by Titanic, UUID sent",
         s.accepted},
        {"titanic_answered", "Replies Titanic stored (the first per request)",
         s.answered},
        {"titanic_closed", "titanic.close calls answered 200", s.closed},
        {"titanic_expired",
         "Requests Titanic deleted request_expiry after they arrived",
         s.expired},
        {"titanic_refused_full",
         "titanic.request answered 500: max_requests reached", s.refused_full},
    };
    out.open_requests = s.pending;
    out.draining = draining_;
    return out;
  }

  const std::vector<std::string>& endpoints() const override {
    return endpoints_;
  }

 private:
  Reactor& reactor_;
  // Destroyed first (members go in reverse): its workers and client close
  // their sockets on this thread.
  const std::unique_ptr<Titanic> titanic_;
  const std::vector<std::string> endpoints_;  // none
  bool draining_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BrokerRuntime>> TitanicRuntime::Create(
    const BrokerEnvironment& env, const TitanicSettings& settings,
    const std::string& broker, std::chrono::milliseconds heartbeat_interval) {
  TitanicOptions options = OptionsFrom(settings, broker, heartbeat_interval);
  options.log = DaemonLogHook(env.log, kName);
  absl::StatusOr<std::unique_ptr<Titanic>> titanic =
      Titanic::Create(env.reactor, env.context, std::move(options));
  if (!titanic.ok()) return titanic.status();
  return std::make_unique<TitanicAdapter>(env.reactor, *std::move(titanic));
}

}  // namespace zb
