// Copyright 2026 The zbrokers Authors.
//
// zb::BrokerAdapter<Broker> is the part of every BrokerRuntime adapter that
// does not depend on the protocol: both brokers have the same Bind(),
// Monitor(), Drain(grace, done) and endpoints() (issue 12), so an adapter
// only adds name() and Snapshot().  Internal to brokers/daemon/.

#ifndef ZB_BROKERS_DAEMON_BROKER_ADAPTER_H_
#define ZB_BROKERS_DAEMON_BROKER_ADAPTER_H_

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "brokers/daemon/broker_runtime.h"

namespace zb {

template <typename Broker>
class BrokerAdapter : public BrokerRuntime {
 public:
  absl::Status Bind(const std::string& endpoint,
                    const ListenerSecurity& security) override {
    return broker_.Bind(endpoint, security);
  }
  absl::Status Monitor(const std::string& monitor_endpoint,
                       int events) override {
    return broker_.Monitor(monitor_endpoint, events);
  }
  void Drain(std::chrono::milliseconds grace,
             absl::AnyInvocable<void()> done) override {
    broker_.Drain(grace, std::move(done));
  }
  const std::vector<std::string>& endpoints() const override {
    return broker_.endpoints();
  }

 protected:
  // Builds the broker on env's reactor and feeds its latencies to
  // env.metrics.
  BrokerAdapter(const BrokerEnvironment& env, typename Broker::Options options)
      : broker_(env.reactor, env.context, std::move(options)) {
    BrokerMetrics* m = &env.metrics;
    broker_.set_latency_hook([m](std::string_view, std::chrono::nanoseconds d) {
      m->ObserveLatency(d);
    });
  }

  Broker broker_;
};

}  // namespace zb

#endif  // ZB_BROKERS_DAEMON_BROKER_ADAPTER_H_
