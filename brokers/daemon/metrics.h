// Copyright 2026 The zbrokers Authors.
//
// Prometheus metrics for the zb-broker daemon (prometheus-cpp).
//
// The brokers keep plain counters on their own reactor threads.  The daemon
// takes a snapshot of them on each broker's reactor every refresh period
// (and once more at shutdown) and hands it to that broker's BrokerMetrics,
// whose Update() works out, on that thread, what a page shows of the broker
// (its "view": counters, gauges, which services have series of their own).
// A scrape (Serialize(), which the HTTP threads of http_server.h serve at
// /metrics) publishes each broker's latest view to the prometheus-cpp
// registry and collects the registry under one lock, so that every page is
// one consistent view: each broker's series on it come from one snapshot
// (zb_workers and zb_queue_depth name the same services, _other included;
// the counters agree with each other).  The reactor threads never wait for a
// scrape: Update() hands its view over with a pointer swap, under a mutex
// that is held for nothing longer than a swap.
//
//   zb::Metrics metrics;
//   metrics.SetBuildInfo({{"version", "0.1.0"}, {"libzmq", "4.3.4"}});
//   zb::BrokerMetrics& mdp = metrics.AddBroker("majordomo");
//   // On the majordomo reactor thread:
//   mdp.ObserveLatency(std::chrono::microseconds(180));  // per reply
//   mdp.Update(snapshot);                                // periodically
//   std::string page = metrics.Serialize();              // any thread
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
// Threading: AddBroker() and SetBuildInfo() are called on one thread (the
// daemon's main thread) before brokers start; Serialize() may run at any
// time on any thread (scrapes are serialized by one lock).  Each
// BrokerMetrics is updated (ObserveLatency(), Update(), last()) by one
// thread at a time, its broker's reactor thread.
//
// Why the series change only inside a scrape: prometheus-cpp locks each
// family on its own while it collects.  When Update() changed the families
// from the reactor thread, a scrape could collect zb_workers before an
// update and zb_queue_depth after it: such a page named up to twice the cap
// of service labels per broker (chaos_flood counted 1,213 against 1,100),
// and could have every queue of the new snapshot with zb_workers' _other
// still missing (metrics_exposition_test).

#ifndef ZB_BROKERS_DAEMON_METRICS_H_
#define ZB_BROKERS_DAEMON_METRICS_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
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
  // to local counts that the next Update() hands over.
  void ObserveLatency(std::chrono::nanoseconds latency);

  // Computes what a scrape shows of this broker from `snapshot` (counters
  // advance by the difference to the previous snapshot and never go back;
  // services missing from `snapshot` lose their series; the cap and _other,
  // see "Service labels") with the latencies observed up to now, and hands
  // it to the scrapes: the next one publishes it.  The hand-over is a
  // pointer swap under a mutex that a scrape holds only for the same swap,
  // so the caller (a broker's reactor thread) never waits for a scrape.
  void Update(const BrokerSnapshot& snapshot);

  // The last snapshot given to Update() (empty before the first).
  const BrokerSnapshot& last() const { return last_; }

  const std::string& name() const { return name_; }

 private:
  friend class Metrics;

  // What a scrape shows of this broker: computed by Update() from the
  // snapshots so far (so the page does not depend on when scrapes come),
  // published by the next scrape.  Immutable once handed over.
  struct View {
    // The snapshot as the page shows it.  Counters (requests .. malformed,
    // events, the own counters) are the published totals: the sum of every
    // step up between consecutive snapshots, so they never go back.
    // `services` are the labels with series of their own (name = label
    // value, at most max_services); the others are summed below, under
    // _other while `folded` > 0.
    BrokerSnapshot shown;
    std::uint64_t other_workers = 0;
    std::uint64_t other_queued = 0;
    std::uint64_t folded = 0;
    // Latencies observed since the start: per bucket (not cumulative over
    // buckets; the last slot is +Inf), and their sum in seconds.
    std::array<std::uint64_t, kLatencyBuckets.size() + 1> latency_buckets{};
    double latency_sum = 0;
  };

  BrokerMetrics(std::string name, std::size_t max_services,
                MetricFamilies& families);

  // Update()'s part for the service labels: which services keep or get
  // series of their own (slots_), and the sums.
  void FoldServices(const std::vector<BrokerSnapshot::Service>& services,
                    View& view);

  // Called by Metrics::Serialize() with its scrape lock held: brings this
  // broker's series to the latest view handed over (nothing to do when no
  // new one came since the last scrape).
  void Publish();
  void PublishServices(const View& view);

  const std::string name_;
  const std::size_t max_services_;

  // --- The broker's thread (ObserveLatency(), Update(), last()).
  BrokerSnapshot last_;
  std::shared_ptr<const View> view_;  // the latest, base of the next
  // Published totals of the snapshot's events and own counters, by name
  // (a name that comes back goes on from its total).
  absl::flat_hash_map<std::string, std::uint64_t> event_totals_;
  absl::flat_hash_map<std::string, std::uint64_t> counter_totals_;
  // The labels that have series of their own (at most max_services).
  absl::flat_hash_set<std::string> slots_;
  std::array<std::uint64_t, kLatencyBuckets.size() + 1> latency_buckets_{};
  double latency_sum_ = 0;

  // --- Where the two meet: the latest view (taken or not yet).
  std::mutex handover_mu_;
  std::shared_ptr<const View> handed_over_;  // guarded by handover_mu_

  // --- Scrapes only (Publish(), under Metrics' scrape lock): the series
  // and the view they show.
  std::shared_ptr<const View> published_;
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
  // A counter series and the total it shows.
  struct CounterSeries {
    prometheus::Counter* series = nullptr;
    std::uint64_t shown = 0;
  };
  // Moves `c` on to show `total` (never back).
  static void Show(CounterSeries& c, std::uint64_t total);
  absl::flat_hash_map<std::string, CounterSeries> event_series_;
  absl::flat_hash_map<std::string, CounterSeries> counter_series_;
  absl::flat_hash_map<std::string, prometheus::Gauge*> gauge_series_;
  struct ServiceGauges {
    prometheus::Gauge* workers;
    prometheus::Gauge* queued;
  };
  // Keyed by label value; "_other" is kept apart in other_.
  absl::flat_hash_map<std::string, ServiceGauges> service_series_;
  ServiceGauges other_{nullptr, nullptr};
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

  // The registry in Prometheus text format (what a scrape returns): every
  // broker's latest snapshot published, and the registry collected, under
  // one lock, so that the page shows each broker at one snapshot.
  std::string Serialize() const;

  // For metric families defined elsewhere (auth.h).  Thread-safe.
  prometheus::Registry& registry() { return *registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<MetricFamilies> families_;
  // One scrape at a time: Publish() and Collect() of one scrape must not
  // interleave with another's.  Also guards brokers_.
  mutable std::mutex scrape_mu_;
  std::vector<std::unique_ptr<BrokerMetrics>> brokers_;
};

}  // namespace zb

#endif  // ZB_BROKERS_DAEMON_METRICS_H_
