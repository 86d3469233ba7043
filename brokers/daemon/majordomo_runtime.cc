// Copyright 2026 The zbrokers Authors.
//
// The daemon's adapter for zb::MajordomoBroker (broker_runtime.h).

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "brokers/daemon/broker_adapter.h"
#include "brokers/daemon/broker_runtime.h"
#include "zbrokers/majordomo/broker.h"

namespace zb {
namespace {

MajordomoBroker::Options OptionsFrom(const MajordomoSettings& s) {
  MajordomoBroker::Options options;
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
  return options;
}

class MajordomoAdapter final : public BrokerAdapter<MajordomoBroker> {
 public:
  MajordomoAdapter(const BrokerEnvironment& env,
                   std::unique_ptr<MajordomoBroker> broker)
      : BrokerAdapter(env, MajordomoRuntime::kName, std::move(broker)) {}

  absl::Status BindInternal(const std::string& endpoint) override {
    return broker_->BindInternal(endpoint);
  }

  BrokerSnapshot Snapshot() const override {
    const MajordomoBroker::Stats s = broker_->stats();
    BrokerSnapshot out;
    out.requests = s.requests;
    out.replies = s.replies;
    // RFC 7 has no failure reply: every reply is a success.
    out.successes = s.replies;
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
        {"requests_refused_passive", s.requests_refused_passive},
        {"requests_internal", s.requests_internal},
    };
    for (const auto& [name, svc] : s.services) {
      out.services.push_back({name, svc.workers, svc.queued});
    }
    std::sort(out.services.begin(), out.services.end(),
              [](const auto& a, const auto& b) { return a.name < b.name; });
    out.open_requests = broker_->open_requests();
    out.draining = broker_->draining();
    return out;
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<BrokerRuntime>> MajordomoRuntime::Create(
    const BrokerEnvironment& env, const MajordomoSettings& settings) {
  absl::StatusOr<std::unique_ptr<MajordomoBroker>> broker =
      MajordomoBroker::Create(env.reactor, env.context, OptionsFrom(settings));
  if (!broker.ok()) return broker.status();
  return std::make_unique<MajordomoAdapter>(env, *std::move(broker));
}

}  // namespace zb
