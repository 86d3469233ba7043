// Copyright 2026 The zbrokers Authors.

#include "brokers/daemon/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <sstream>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"

namespace zb {

struct MetricFamilies {
  explicit MetricFamilies(prometheus::Registry& r)
      : requests(prometheus::BuildCounter()
                     .Name("zb_requests_total")
                     .Help("Client requests accepted by the broker")
                     .Register(r)),
        replies(prometheus::BuildCounter()
                    .Name("zb_replies_total")
                    .Help("Replies sent to clients")
                    .Register(r)),
        failures(prometheus::BuildCounter()
                     .Name("zb_failures_total")
                     .Help("Requests that failed (worker failure, no worker, "
                           "dropped after redispatch)")
                     .Register(r)),
        timeouts(prometheus::BuildCounter()
                     .Name("zb_timeouts_total")
                     .Help("Requests that ran out of time (deadline or queue "
                           "expiry)")
                     .Register(r)),
        malformed(prometheus::BuildCounter()
                      .Name("zb_malformed_total")
                      .Help("Messages dropped as malformed")
                      .Register(r)),
        events(prometheus::BuildCounter()
                   .Name("zb_events_total")
                   .Help("Broker-specific counters, by event")
                   .Register(r)),
        workers(prometheus::BuildGauge()
                    .Name("zb_workers")
                    .Help("Registered workers per service")
                    .Register(r)),
        queue_depth(prometheus::BuildGauge()
                        .Name("zb_queue_depth")
                        .Help("Requests waiting per service")
                        .Register(r)),
        open_requests(prometheus::BuildGauge()
                          .Name("zb_open_requests")
                          .Help("Requests queued or in flight")
                          .Register(r)),
        draining(prometheus::BuildGauge()
                     .Name("zb_draining")
                     .Help("1 while the broker drains before shutdown")
                     .Register(r)),
        latency(prometheus::BuildHistogram()
                    .Name("zb_request_latency_seconds")
                    .Help("Time from a request's arrival at the broker to "
                          "its reply")
                    .Register(r)) {}

  prometheus::Family<prometheus::Counter>& requests;
  prometheus::Family<prometheus::Counter>& replies;
  prometheus::Family<prometheus::Counter>& failures;
  prometheus::Family<prometheus::Counter>& timeouts;
  prometheus::Family<prometheus::Counter>& malformed;
  prometheus::Family<prometheus::Counter>& events;
  prometheus::Family<prometheus::Gauge>& workers;
  prometheus::Family<prometheus::Gauge>& queue_depth;
  prometheus::Family<prometheus::Gauge>& open_requests;
  prometheus::Family<prometheus::Gauge>& draining;
  prometheus::Family<prometheus::Histogram>& latency;
};

namespace {

prometheus::Histogram::BucketBoundaries LatencyBoundaries() {
  return prometheus::Histogram::BucketBoundaries(
      BrokerMetrics::kLatencyBuckets.begin(),
      BrokerMetrics::kLatencyBuckets.end());
}

}  // namespace

BrokerMetrics::BrokerMetrics(std::string kind, MetricFamilies& f)
    : kind_(std::move(kind)),
      families_(f),
      requests_(f.requests.Add({{"broker", kind_}})),
      replies_(f.replies.Add({{"broker", kind_}})),
      failures_(f.failures.Add({{"broker", kind_}})),
      timeouts_(f.timeouts.Add({{"broker", kind_}})),
      malformed_(f.malformed.Add({{"broker", kind_}})),
      open_requests_(f.open_requests.Add({{"broker", kind_}})),
      draining_(f.draining.Add({{"broker", kind_}})),
      latency_(f.latency.Add({{"broker", kind_}}, LatencyBoundaries())) {}

BrokerMetrics::~BrokerMetrics() = default;

void BrokerMetrics::ObserveLatency(std::chrono::nanoseconds latency) {
  const double seconds = std::chrono::duration<double>(latency).count();
  // Prometheus buckets are "less than or equal": the first bound >= value.
  const auto it =
      std::lower_bound(kLatencyBuckets.begin(), kLatencyBuckets.end(), seconds);
  pending_buckets_[static_cast<std::size_t>(it - kLatencyBuckets.begin())] += 1;
  pending_sum_ += seconds;
  pending_any_ = true;
}

void BrokerMetrics::Advance(prometheus::Counter& counter, std::uint64_t before,
                            std::uint64_t now) {
  // A counter that went backwards would be a broker bug; never make the
  // Prometheus counter go backwards with it.
  if (now > before) counter.Increment(static_cast<double>(now - before));
}

void BrokerMetrics::Update(const BrokerSnapshot& s) {
  Advance(requests_, last_.requests, s.requests);
  Advance(replies_, last_.replies, s.replies);
  Advance(failures_, last_.failures, s.failures);
  Advance(timeouts_, last_.timeouts, s.timeouts);
  Advance(malformed_, last_.malformed, s.malformed);

  for (const auto& [name, value] : s.events) {
    auto [it, inserted] = events_.try_emplace(name, nullptr);
    if (inserted) {
      it->second = &families_.events.Add({{"broker", kind_}, {"event", name}});
    }
    std::uint64_t before = 0;
    for (const auto& [old_name, old_value] : last_.events) {
      if (old_name == name) before = old_value;
    }
    Advance(*it->second, before, value);
  }

  absl::flat_hash_set<std::string> present;
  for (const BrokerSnapshot::Service& svc : s.services) {
    present.insert(svc.name);
    auto [it, inserted] = services_.try_emplace(svc.name, ServiceGauges{});
    if (inserted) {
      const prometheus::Labels labels = {{"broker", kind_},
                                         {"service", svc.name}};
      it->second.workers = &families_.workers.Add(labels);
      it->second.queued = &families_.queue_depth.Add(labels);
    }
    it->second.workers->Set(static_cast<double>(svc.workers));
    it->second.queued->Set(static_cast<double>(svc.queued));
  }
  // Services the broker forgot: drop their series rather than report stale
  // values for ever (a client can invent service names).
  for (auto it = services_.begin(); it != services_.end();) {
    if (present.contains(it->first)) {
      ++it;
      continue;
    }
    families_.workers.Remove(it->second.workers);
    families_.queue_depth.Remove(it->second.queued);
    services_.erase(it++);
  }

  open_requests_.Set(static_cast<double>(s.open_requests));
  draining_.Set(s.draining ? 1 : 0);

  if (pending_any_) {
    latency_.ObserveMultiple(
        std::vector<double>(pending_buckets_.begin(), pending_buckets_.end()),
        pending_sum_);
    pending_buckets_.fill(0);
    pending_sum_ = 0;
    pending_any_ = false;
  }
  last_ = s;
}

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      families_(std::make_unique<MetricFamilies>(*registry_)) {}

Metrics::~Metrics() = default;

void Metrics::SetBuildInfo(
    const std::vector<std::pair<std::string, std::string>>& labels) {
  prometheus::Labels l;
  for (const auto& [name, value] : labels) l[name] = value;
  prometheus::BuildGauge()
      .Name("zb_build_info")
      .Help("Build of this zb-broker: version, libzmq in use; always 1")
      .Register(*registry_)
      .Add(l)
      .Set(1);
}

BrokerMetrics& Metrics::AddBroker(const std::string& kind) {
  brokers_.push_back(
      std::unique_ptr<BrokerMetrics>(new BrokerMetrics(kind, *families_)));
  return *brokers_.back();
}

std::string Metrics::Serialize() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace zb
