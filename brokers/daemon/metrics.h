// Copyright 2026 The zbrokers Authors.
//
// Prometheus metrics for the zb-broker daemon (prometheus-cpp).
//
// The brokers keep plain counters on their own reactor threads.  The daemon
// takes a snapshot of them on each broker's reactor every refresh period
// (and once more at shutdown) and hands it to that broker's BrokerMetrics,
// which turns it into prometheus-cpp metrics.  prometheus-cpp metrics are
// thread-safe, so the HTTP threads (http_server.h, which serves Serialize()
// at /metrics) can scrape while the reactor threads update; the brokers
// themselves never see a lock.
//
//   zb::Metrics metrics;
//   metrics.SetBuildInfo({{"version", "0.1.0"}, {"libzmq", "4.3.4"}});
//   zb::BrokerMetrics& mdp = metrics.AddBroker("majordomo");
//   // On the majordomo reactor thread:
//   mdp.ObserveLatency(std::chrono::microseconds(180));  // per reply
//   mdp.Update(snapshot);                                // periodically
//
// Names (every one carries broker="majordomo"|"consensus"):
//   zb_requests_total            counter   requests accepted from clients
//   zb_replies_total             counter   replies sent to clients
//   zb_failures_total            counter   requests that failed
//   zb_timeouts_total            counter   requests that ran out of time
//   zb_malformed_total           counter   messages dropped as malformed
//   zb_events_total{event=...}   counter   broker-specific counters
//   zb_workers{service=...}      gauge     registered workers per service
//   zb_queue_depth{service=...}  gauge     requests waiting per service
//   zb_folded_services           gauge     services counted under "_other"
//   zb_open_requests             gauge     requests queued or in flight
//   zb_draining                  gauge     1 while the broker drains
//   zb_request_latency_seconds   histogram request arrival -> reply sent
// plus the metrics of one kind of broker only, each a family of its own
// (BrokerSnapshot::gauges and ::counters), e.g. Titanic's
//   zb_titanic_stored_requests   gauge     requests in its store
//   zb_titanic_accepted_total    counter   requests stored, UUID sent
// and one without the broker label:
//   zb_build_info{version=...,libzmq=...}  gauge  always 1
// docs/daemon.md says which broker counter feeds which metric.
//
// Service labels.  A service name is whatever bytes a peer sent, so it is
// made a valid label value first (ServiceLabel(): every byte that is not
// part of a valid UTF-8 sequence becomes U+FFFD; the serializer then escapes
// backslash, double quote and newline as the text format requires).  Names
// that end up with the same label share one series, their values summed.
// At most `max_services` labels per broker get series of their own; the
// others are summed under service="_other" and counted by
// zb_folded_services.  A service keeps its series for as long as it exists
// (no churn while the set is full); a free slot goes to a new service with
// workers before one without, then in name order.
//
// Threading: Metrics' methods are called on one thread (the daemon's main
// thread) before brokers start and after they stop; Serialize() and scrapes
// may run at any time.  Each BrokerMetrics is updated by one thread at a
// time (its broker's reactor thread).

#ifndef ZB_BROKERS_DAEMON_METRICS_H_
#define ZB_BROKERS_DAEMON_METRICS_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace zb {

// The metric families shared by all brokers (defined in metrics.cc).
struct MetricFamilies;

// A broker-neutral view of one broker's counters at one moment (each
// broker's adapter, broker_runtime.h, fills it from the broker's Stats).
// Counters only grow; gauges are current values.
struct BrokerSnapshot {
  std::uint64_t requests = 0;
  std::uint64_t replies = 0;
  // Of the replies, those that report success (the totals log line; not a
  // metric of its own).
  std::uint64_t successes = 0;
  std::uint64_t failures = 0;
  std::uint64_t timeouts = 0;
  std::uint64_t malformed = 0;
  // Broker-specific counters (zb_events_total{event=name}).  One broker
  // lists the same events in the same order in every snapshot, so that
  // Update() pairs them with the previous snapshot's by position.
  std::vector<std::pair<std::string, std::uint64_t>> events;
  struct Service {
    std::string name;
    std::uint64_t workers = 0;
    std::uint64_t queued = 0;
  };
  std::vector<Service> services;
  std::uint64_t open_requests = 0;
  bool draining = false;
  // Metrics only this kind of broker has, each its own family: gauges are
  // published as zb_<name>, counters as zb_<name>_total, both labelled
  // broker=NAME (Titanic's zb_titanic_stored_requests).  As with events,
  // the same names in the same order in every snapshot; `name` and `help`
  // point to static text.
  struct Named {
    std::string_view name;
    std::string_view help;
    std::uint64_t value = 0;
  };
  std::vector<Named> gauges;
  std::vector<Named> counters;
};

// `raw` as a valid UTF-8 Prometheus label value (see "Service labels").
std::string ServiceLabel(std::string_view raw);

class BrokerMetrics {
 public:
  // Default of max_services (Metrics::AddBroker): per broker, per gauge.
  static constexpr std::size_t kDefaultMaxServices = 1000;
  // The label value services beyond max_services are summed under.
  static constexpr std::string_view kOtherService = "_other";

  // Upper bounds of the latency buckets, in seconds (50 us .. 10 s).
  static constexpr std::array<double, 17> kLatencyBuckets = {
      0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
      0.05,    0.1,    0.25,    0.5,    1.0,   2.5,    5.0,   10.0};

  BrokerMetrics(const BrokerMetrics&) = delete;
  BrokerMetrics& operator=(const BrokerMetrics&) = delete;
  ~BrokerMetrics();

  // Records one request's latency.  Cheap (no lock, no allocation): it adds
  // to a local histogram that the next Update() publishes.
  void ObserveLatency(std::chrono::nanoseconds latency);

  // Publishes `snapshot` and the latencies observed since the last call.
  // Counters advance by the difference to the previous snapshot; services
  // missing from `snapshot` lose their gauges.
  void Update(const BrokerSnapshot& snapshot);

  // The last snapshot published (for the periodic log line).
  const BrokerSnapshot& last() const { return last_; }

  const std::string& name() const { return name_; }

 private:
  friend class Metrics;
  BrokerMetrics(std::string name, std::size_t max_services,
                MetricFamilies& families);
  void UpdateServices(const std::vector<BrokerSnapshot::Service>& services);

  static void Advance(prometheus::Counter& counter, std::uint64_t before,
                      std::uint64_t now);

  const std::string name_;
  const std::size_t max_services_;
  MetricFamilies& families_;
  prometheus::Counter& requests_;
  prometheus::Counter& replies_;
  prometheus::Counter& failures_;
  prometheus::Counter& timeouts_;
  prometheus::Counter& malformed_;
  prometheus::Gauge& open_requests_;
  prometheus::Gauge& draining_;
  prometheus::Gauge& folded_services_;
  prometheus::Histogram& latency_;
  // zb_events_total's series, in the order of the snapshot's events.
  std::vector<prometheus::Counter*> events_;
  // The series of the snapshot's own gauges and counters, by position.
  std::vector<prometheus::Gauge*> gauges_;
  std::vector<prometheus::Counter*> counters_;
  struct ServiceGauges {
    prometheus::Gauge* workers;
    prometheus::Gauge* queued;
  };
  // Keyed by label value; "_other" is kept apart in other_.
  absl::flat_hash_map<std::string, ServiceGauges> services_;
  ServiceGauges other_{nullptr, nullptr};

  BrokerSnapshot last_;
  // Latencies since the last Update(): per-bucket counts (not cumulative;
  // the last slot is +Inf) and their sum in seconds.
  std::array<double, kLatencyBuckets.size() + 1> pending_buckets_{};
  double pending_sum_ = 0;
  bool pending_any_ = false;
};

class Metrics {
 public:
  Metrics();
  ~Metrics();

  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Publishes zb_build_info with these labels and the value 1.  Call once.
  void SetBuildInfo(
      const std::vector<std::pair<std::string, std::string>>& labels);

  // Metrics for one broker, labelled broker=`name`, with at most
  // `max_services` per-service series per gauge (see "Service labels").
  // Owned by this object.
  BrokerMetrics& AddBroker(
      const std::string& name,
      std::size_t max_services = BrokerMetrics::kDefaultMaxServices);

  // The registry in Prometheus text format (what a scrape returns).
  std::string Serialize() const;

  // For metric families defined elsewhere (auth.h).  Thread-safe.
  prometheus::Registry& registry() { return *registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<MetricFamilies> families_;
  std::vector<std::unique_ptr<BrokerMetrics>> brokers_;
};

}  // namespace zb

#endif  // ZB_BROKERS_DAEMON_METRICS_H_
