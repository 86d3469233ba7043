// Copyright 2026 The zbrokers Authors.
//
// zb::BrokerAdapter<Broker> is the part of every BrokerRuntime adapter that
// does not depend on the protocol: both brokers have the same Bind(),
// Monitor(), Drain(grace, done), endpoints(), latency hook and log hook
// (issue 12), so an adapter only builds its broker and adds Snapshot().
// Internal to brokers/daemon/.

#ifndef ZB_BROKERS_DAEMON_BROKER_ADAPTER_H_
#define ZB_BROKERS_DAEMON_BROKER_ADAPTER_H_

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "brokers/daemon/broker_runtime.h"
#include "zbrokers/common/log.h"

namespace zb {

// A broker's log hook that writes to `log` at the matching spdlog level,
// each line prefixed "`name`: ".  `log` must outlive the hook.
inline LogHook DaemonLogHook(spdlog::logger& log, std::string_view name) {
  return [lg = &log, name = std::string(name)](LogLevel level,
                                               std::string_view line) {
    switch (level) {
      case LogLevel::kDebug:
        lg->debug("{}: {}", name, line);
        break;
      case LogLevel::kInfo:
        lg->info("{}: {}", name, line);
        break;
      case LogLevel::kWarning:
        lg->warn("{}: {}", name, line);
        break;
      case LogLevel::kError:
        lg->error("{}: {}", name, line);
        break;
    }
  };
}

template <typename Broker>
class BrokerAdapter : public BrokerRuntime {
 public:
  absl::Status Bind(const std::string& endpoint,
                    const ListenerSecurity& security) override {
    return broker_->Bind(endpoint, security);
  }
  absl::Status Monitor(const std::string& monitor_endpoint,
                       int events) override {
    return broker_->Monitor(monitor_endpoint, events);
  }
  void Drain(std::chrono::milliseconds grace,
             absl::AnyInvocable<void()> done) override {
    broker_->Drain(grace, std::move(done));
  }
  const std::vector<std::string>& endpoints() const override {
    return broker_->endpoints();
  }
  void SetRequestGate(absl::AnyInvocable<bool()> gate) override {
    broker_->set_request_gate(std::move(gate));
  }
  std::string_view name() const override { return name_; }

 protected:
  // Takes the broker the adapter built on env's reactor (not null), named
  // `name` (a string that outlives the adapter, e.g. the runtime's kName),
  // feeds its latencies to env.metrics and its log lines to env.log
  // (DaemonLogHook: worker joins and leaves come that way, rate-limited by
  // the broker, so that a join flood cannot flood the log).
  BrokerAdapter(const BrokerEnvironment& env, std::string_view name,
                std::unique_ptr<Broker> broker)
      : name_(name), broker_(std::move(broker)) {
    BrokerMetrics* m = &env.metrics;
    broker_->set_latency_hook(
        [m](std::string_view, std::chrono::nanoseconds d) {
          m->ObserveLatency(d);
        });
    broker_->set_log_hook(DaemonLogHook(env.log, name_));
  }

  const std::string_view name_;
  const std::unique_ptr<Broker> broker_;
};

}  // namespace zb

#endif  // ZB_BROKERS_DAEMON_BROKER_ADAPTER_H_
