// Copyright 2026 The zbrokers Authors.

#include "brokers/daemon/ha.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <array>
#include <chrono>
#include <utility>

#include "absl/strings/str_format.h"
#include "brokers/daemon/broker_adapter.h"

namespace zb {
namespace {

constexpr std::array<HaState, 4> kStates = {
    HaState::kPrimary, HaState::kBackup, HaState::kActive, HaState::kPassive};
// As often as the brokers' own counters are published.
constexpr std::chrono::milliseconds kRefresh{1000};

}  // namespace

struct DaemonHa::Gauges {
  explicit Gauges(prometheus::Registry& r)
      : state_family(prometheus::BuildGauge()
                         .Name("zb_ha_state")
                         .Help("Fail-over pair state: 1 for the current one")
                         .Register(r)),
        failovers(prometheus::BuildCounter()
                      .Name("zb_ha_failovers_total")
                      .Help("Times this broker went from passive to active")
                      .Register(r)
                      .Add({})),
        split_brain(prometheus::BuildCounter()
                        .Name("zb_ha_split_brain_total")
                        .Help("Times both brokers of the pair were active")
                        .Register(r)
                        .Add({})),
        role_conflicts(prometheus::BuildCounter()
                           .Name("zb_ha_role_conflicts_total")
                           .Help("Peer state messages announcing our own role")
                           .Register(r)
                           .Add({})),
        malformed(prometheus::BuildCounter()
                      .Name("zb_ha_malformed_total")
                      .Help("Peer state messages that did not parse")
                      .Register(r)
                      .Add({})) {
    for (std::size_t i = 0; i < kStates.size(); ++i) {
      state[i] =
          &state_family.Add({{"state", std::string(HaStateName(kStates[i]))}});
    }
  }

  // Counters advance by what the node counted since the last call.
  static void Advance(prometheus::Counter& c, std::uint64_t& seen,
                      std::uint64_t now) {
    if (now > seen) c.Increment(static_cast<double>(now - seen));
    seen = now;
  }

  prometheus::Family<prometheus::Gauge>& state_family;
  std::array<prometheus::Gauge*, 4> state{};
  prometheus::Counter& failovers;
  prometheus::Counter& split_brain;
  prometheus::Counter& role_conflicts;
  prometheus::Counter& malformed;
  BinaryStarNode::Stats seen;
};

DaemonHa::DaemonHa(spdlog::logger& log, Metrics& metrics)
    : log_(log), gauges_(std::make_unique<Gauges>(metrics.registry())) {}

absl::StatusOr<std::unique_ptr<DaemonHa>> DaemonHa::Create(
    zmq::context_t& context, const HaSettings& settings, spdlog::logger& log,
    Metrics& metrics) {
  if (!settings.role.has_value()) {
    return absl::InvalidArgumentError("ha.role: not set");
  }
  std::unique_ptr<DaemonHa> ha(new DaemonHa(log, metrics));
  ha->thread_ = std::make_unique<ReactorThread>();
  DaemonHa* h = ha.get();
  absl::Status s = ha->thread_->Invoke([&](Reactor& reactor) -> absl::Status {
    absl::StatusOr<std::unique_ptr<BinaryStarNode>> node =
        BinaryStarNode::Create(
            reactor, context,
            {.role = *settings.role,
             .state_endpoint = settings.state_endpoint,
             .peer_state_endpoint = settings.peer_state_endpoint,
             .heartbeat_interval = settings.heartbeat_interval,
             .peer_expiry = settings.peer_expiry});
    if (!node.ok()) {
      return absl::Status(node.status().code(),
                          absl::StrFormat("ha: %s", node.status().message()));
    }
    h->node_ = *std::move(node);
    h->node_->set_log_hook(DaemonLogHook(h->log_, "ha"));
    h->node_->set_state_hook([h](HaState, HaState) { h->Publish(); });
    h->refresh_ = *reactor.Every(kRefresh, [h] { h->Publish(); });
    h->Publish();
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  log.info(
      "ha: {} broker of a fail-over pair, state on {}, peer at {}, "
      "heartbeat {}, peer expiry {}",
      HaRoleName(*settings.role), ha->state_endpoint(),
      settings.peer_state_endpoint, FormatDuration(settings.heartbeat_interval),
      FormatDuration(settings.peer_expiry));
  return ha;
}

DaemonHa::~DaemonHa() {
  if (thread_ == nullptr) return;
  thread_->Invoke([this](Reactor&) {
    refresh_.Reset();
    if (node_ != nullptr) Publish();  // the last state, for a final scrape
    node_.reset();
  });
  thread_->Stop();
  if (absl::Status s = thread_->join(); !s.ok()) {
    log_.error("ha: {}", std::string(s.message()));
  }
}

absl::AnyInvocable<bool()> DaemonHa::Gate() {
  BinaryStarNode* n = node_.get();
  return [n] { return n->AllowClientRequest(); };
}

std::string DaemonHa::StatusLine() const {
  const BinaryStarNode::Stats s = node_->stats();
  return absl::StrFormat(
      "ha: stats role=%s state=%s failovers=%d split_brain=%d "
      "role_conflicts=%d malformed=%d",
      HaRoleName(role()), HaStateName(state()), s.failovers, s.split_brains,
      s.role_conflicts, s.malformed);
}

void DaemonHa::Publish() {
  const HaState now = node_->state();
  for (std::size_t i = 0; i < kStates.size(); ++i) {
    gauges_->state[i]->Set(kStates[i] == now ? 1 : 0);
  }
  const BinaryStarNode::Stats s = node_->stats();
  Gauges& g = *gauges_;
  Gauges::Advance(g.failovers, g.seen.failovers, s.failovers);
  Gauges::Advance(g.split_brain, g.seen.split_brains, s.split_brains);
  Gauges::Advance(g.role_conflicts, g.seen.role_conflicts, s.role_conflicts);
  Gauges::Advance(g.malformed, g.seen.malformed, s.malformed);
}

}  // namespace zb
