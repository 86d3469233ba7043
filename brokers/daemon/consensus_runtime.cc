// Copyright 2026 The zbrokers Authors.
//
// The daemon's adapter for zb::ConsensusBroker (broker_runtime.h).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "brokers/daemon/broker_adapter.h"
#include "brokers/daemon/broker_runtime.h"
#include "zbrokers/consensus/broker.h"

namespace zb {
namespace {

ConsensusBroker::Options OptionsFrom(const ConsensusSettings& s) {
  ConsensusBroker::Options options;
  if (s.request_timeout) options.request_timeout = *s.request_timeout;
  if (s.client_idle_timeout) {
    options.client_idle_timeout = *s.client_idle_timeout;
  }
  if (s.max_heartbeat_interval) {
    options.max_heartbeat_interval = *s.max_heartbeat_interval;
  }
  if (s.max_heartbeat_liveness) {
    options.max_heartbeat_liveness =
        static_cast<int>(*s.max_heartbeat_liveness);
  }
  auto size = [](std::int64_t n) { return static_cast<std::size_t>(n); };
  if (s.max_workers) options.max_workers = size(*s.max_workers);
  if (s.max_services) options.max_services = size(*s.max_services);
  if (s.max_clients) options.max_clients = size(*s.max_clients);
  if (s.max_requests_per_client) {
    options.max_requests_per_client = size(*s.max_requests_per_client);
  }
  if (s.max_message_size) options.max_message_size = *s.max_message_size;
  return options;
}

class ConsensusAdapter final : public BrokerAdapter<ConsensusBroker> {
 public:
  ConsensusAdapter(const BrokerEnvironment& env,
                   std::unique_ptr<ConsensusBroker> broker)
      : BrokerAdapter(env, ConsensusRuntime::kName, std::move(broker)) {}

  BrokerSnapshot Snapshot() const override {
    const ConsensusBroker::Stats s = broker_->stats();
    BrokerSnapshot out;
    out.requests = s.requests;
    out.replies = s.replies_success + s.replies_failure;
    out.successes = s.replies_success;
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
        {"workers_refused", s.workers_refused},
        {"refused_services", s.refused_services},
        {"malformed_requests", s.malformed_requests},
        {"requests_refused_passive", s.requests_refused_passive},
    };
    for (auto& [name, workers] : broker_->workers_per_service()) {
      out.services.push_back({std::move(name), workers, 0});
    }
    out.open_requests = broker_->open_requests();
    out.draining = broker_->draining();
    return out;
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<BrokerRuntime>> ConsensusRuntime::Create(
    const BrokerEnvironment& env, const ConsensusSettings& settings) {
  absl::StatusOr<std::unique_ptr<ConsensusBroker>> broker =
      ConsensusBroker::Create(env.reactor, env.context, OptionsFrom(settings));
  if (!broker.ok()) return broker.status();
  return std::make_unique<ConsensusAdapter>(env, *std::move(broker));
}

}  // namespace zb
