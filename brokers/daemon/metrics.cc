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
      : registry(r),
        requests(prometheus::BuildCounter()
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
        folded_services(prometheus::BuildGauge()
                            .Name("zb_folded_services")
                            .Help("Services without series of their own "
                                  "(beyond metrics_max_services), summed "
                                  "under the service label _other")
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

  // For the families of one kind of broker (BrokerSnapshot::gauges,
  // ::counters), registered when first seen.  The registry is thread-safe
  // and returns the family already registered under a name.
  prometheus::Registry& registry;
  prometheus::Family<prometheus::Counter>& requests;
  prometheus::Family<prometheus::Counter>& replies;
  prometheus::Family<prometheus::Counter>& failures;
  prometheus::Family<prometheus::Counter>& timeouts;
  prometheus::Family<prometheus::Counter>& malformed;
  prometheus::Family<prometheus::Counter>& events;
  prometheus::Family<prometheus::Gauge>& workers;
  prometheus::Family<prometheus::Gauge>& queue_depth;
  prometheus::Family<prometheus::Gauge>& folded_services;
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

// Length of the valid UTF-8 sequence at the start of `s`, or 0 when its
// first byte does not start one (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF).
std::size_t Utf8SequenceLength(std::string_view s) {
  const auto byte = [&](std::size_t i) {
    return static_cast<unsigned char>(s[i]);
  };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) return 1;
  std::size_t len;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;  // bounds of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < len) return 0;
  if (byte(1) < lo || byte(1) > hi) return 0;
  for (std::size_t i = 2; i < len; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return len;
}

}  // namespace

std::string ServiceLabel(std::string_view raw) {
  constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  out.reserve(raw.size());
  while (!raw.empty()) {
    const std::size_t n = Utf8SequenceLength(raw);
    if (n == 0) {
      out.append(kReplacement);
      raw.remove_prefix(1);
    } else {
      out.append(raw.substr(0, n));
      raw.remove_prefix(n);
    }
  }
  return out;
}

BrokerMetrics::BrokerMetrics(std::string name, std::size_t max_services,
                             MetricFamilies& f)
    : name_(std::move(name)),
      max_services_(max_services),
      view_(std::make_shared<const View>()),
      handed_over_(view_),
      published_(view_),
      families_(f),
      requests_(f.requests.Add({{"broker", name_}})),
      replies_(f.replies.Add({{"broker", name_}})),
      failures_(f.failures.Add({{"broker", name_}})),
      timeouts_(f.timeouts.Add({{"broker", name_}})),
      malformed_(f.malformed.Add({{"broker", name_}})),
      open_requests_(f.open_requests.Add({{"broker", name_}})),
      draining_(f.draining.Add({{"broker", name_}})),
      folded_services_(f.folded_services.Add({{"broker", name_}})),
      latency_(f.latency.Add({{"broker", name_}}, LatencyBoundaries())) {}

BrokerMetrics::~BrokerMetrics() = default;

void BrokerMetrics::ObserveLatency(std::chrono::nanoseconds latency) {
  const double seconds = std::chrono::duration<double>(latency).count();
  // Prometheus buckets are "less than or equal": the first bound >= value.
  const auto it =
      std::lower_bound(kLatencyBuckets.begin(), kLatencyBuckets.end(), seconds);
  ++latency_buckets_[static_cast<std::size_t>(it - kLatencyBuckets.begin())];
  latency_sum_ += seconds;
}

namespace {

// A counter's published value after a snapshot: it advances by the step up
// from the previous snapshot.  A counter that went backwards would be a
// broker bug; never make the Prometheus counter go backwards with it.
std::uint64_t Advanced(std::uint64_t shown, std::uint64_t before,
                       std::uint64_t now) {
  return now > before ? shown + (now - before) : shown;
}

// Moves a Prometheus counter that shows `before` on to `now`.
void Advance(prometheus::Counter& counter, std::uint64_t before,
             std::uint64_t now) {
  if (now > before) counter.Increment(static_cast<double>(now - before));
}

}  // namespace

void BrokerMetrics::Update(const BrokerSnapshot& s) {
  const BrokerSnapshot& was = view_->shown;
  auto view = std::make_shared<View>();
  BrokerSnapshot& shown = view->shown;
  shown.requests = Advanced(was.requests, last_.requests, s.requests);
  shown.replies = Advanced(was.replies, last_.replies, s.replies);
  shown.failures = Advanced(was.failures, last_.failures, s.failures);
  shown.timeouts = Advanced(was.timeouts, last_.timeouts, s.timeouts);
  shown.malformed = Advanced(was.malformed, last_.malformed, s.malformed);

  // Paired with the previous snapshot's events by position (metrics.h); an
  // event not there advances from 0.
  shown.events.reserve(s.events.size());
  for (std::size_t i = 0; i < s.events.size(); ++i) {
    const auto& [event, value] = s.events[i];
    const bool seen = i < last_.events.size() && last_.events[i].first == event;
    std::uint64_t& total = event_totals_[event];
    total = Advanced(total, seen ? last_.events[i].second : 0, value);
    shown.events.emplace_back(event, total);
  }
  // The broker's own families, paired by position like the events.
  shown.gauges = s.gauges;
  shown.counters.reserve(s.counters.size());
  for (std::size_t i = 0; i < s.counters.size(); ++i) {
    const BrokerSnapshot::Named& c = s.counters[i];
    const bool seen =
        i < last_.counters.size() && last_.counters[i].name == c.name;
    std::uint64_t& total = counter_totals_[std::string(c.name)];
    total = Advanced(total, seen ? last_.counters[i].value : 0, c.value);
    shown.counters.push_back({c.name, c.help, total});
  }

  FoldServices(s.services, *view);
  shown.open_requests = s.open_requests;
  shown.draining = s.draining;
  view->latency_buckets = latency_buckets_;
  view->latency_sum = latency_sum_;

  {
    std::lock_guard<std::mutex> lock(handover_mu_);
    handed_over_ = view;
  }
  // A view a scrape still holds is freed by whoever drops it last.
  view_ = std::move(view);
  last_ = s;
}

void BrokerMetrics::FoldServices(
    const std::vector<BrokerSnapshot::Service>& services, View& view) {
  // Sum by label value: distinct names may share one (see ServiceLabel).
  struct Sum {
    std::uint64_t workers = 0;
    std::uint64_t queued = 0;
    std::uint64_t names = 0;
  };
  absl::flat_hash_map<std::string, Sum> by_label;
  by_label.reserve(services.size());
  for (const BrokerSnapshot::Service& svc : services) {
    Sum& sum = by_label[ServiceLabel(svc.name)];
    sum.workers += svc.workers;
    sum.queued += svc.queued;
    ++sum.names;
  }

  // Services the broker forgot free their slots rather than report stale
  // values for ever (a client can invent service names).
  for (auto it = slots_.begin(); it != slots_.end();) {
    if (by_label.contains(*it)) {
      ++it;
    } else {
      slots_.erase(it++);
    }
  }

  // New labels take the free slots: services with workers first, then by
  // name, so that a flood of invented names (no workers) cannot take the
  // slots of real services that register later while slots are scarce.
  std::vector<const std::pair<const std::string, Sum>*> fresh;
  for (const auto& entry : by_label) {
    if (entry.first != kOtherService && !slots_.contains(entry.first)) {
      fresh.push_back(&entry);
    }
  }
  const std::size_t free =
      max_services_ > slots_.size() ? max_services_ - slots_.size() : 0;
  if (fresh.size() > free) {
    auto before = [](const auto* a, const auto* b) {
      const bool a_has = a->second.workers > 0;
      const bool b_has = b->second.workers > 0;
      if (a_has != b_has) return a_has;
      return a->first < b->first;
    };
    std::nth_element(fresh.begin(), fresh.begin() + free, fresh.end(), before);
    fresh.resize(free);
  }
  for (const auto* entry : fresh) slots_.insert(entry->first);

  view.shown.services.reserve(slots_.size());
  for (const auto& [label, sum] : by_label) {
    if (slots_.contains(label)) {
      view.shown.services.push_back({label, sum.workers, sum.queued});
    } else {
      view.other_workers += sum.workers;
      view.other_queued += sum.queued;
      view.folded += sum.names;
    }
  }
}

void BrokerMetrics::Show(CounterSeries& c, std::uint64_t total) {
  Advance(*c.series, c.shown, total);
  c.shown = std::max(c.shown, total);
}

void BrokerMetrics::Publish() {
  std::shared_ptr<const View> next;
  {
    std::lock_guard<std::mutex> lock(handover_mu_);
    next = handed_over_;
  }
  if (next == published_) return;  // no new view since the last scrape
  const BrokerSnapshot& was = published_->shown;
  const BrokerSnapshot& v = next->shown;
  Advance(requests_, was.requests, v.requests);
  Advance(replies_, was.replies, v.replies);
  Advance(failures_, was.failures, v.failures);
  Advance(timeouts_, was.timeouts, v.timeouts);
  Advance(malformed_, was.malformed, v.malformed);
  for (const auto& [event, total] : v.events) {
    CounterSeries& c = event_series_[event];
    if (c.series == nullptr) {
      c.series = &families_.events.Add({{"broker", name_}, {"event", event}});
    }
    Show(c, total);
  }
  for (const BrokerSnapshot::Named& g : v.gauges) {
    prometheus::Gauge*& series = gauge_series_[std::string(g.name)];
    if (series == nullptr) {
      // The registry returns the family already registered under a name
      // (another broker's).
      series = &prometheus::BuildGauge()
                    .Name("zb_" + std::string(g.name))
                    .Help(std::string(g.help))
                    .Register(families_.registry)
                    .Add({{"broker", name_}});
    }
    series->Set(static_cast<double>(g.value));
  }
  for (const BrokerSnapshot::Named& n : v.counters) {
    CounterSeries& c = counter_series_[std::string(n.name)];
    if (c.series == nullptr) {
      c.series = &prometheus::BuildCounter()
                      .Name("zb_" + std::string(n.name) + "_total")
                      .Help(std::string(n.help))
                      .Register(families_.registry)
                      .Add({{"broker", name_}});
    }
    Show(c, n.value);
  }

  PublishServices(*next);
  open_requests_.Set(static_cast<double>(v.open_requests));
  draining_.Set(v.draining ? 1 : 0);

  // The latencies observed between the two views.
  const View& from = *published_;
  std::vector<double> buckets(next->latency_buckets.size());
  bool any = false;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    buckets[i] =
        static_cast<double>(next->latency_buckets[i] - from.latency_buckets[i]);
    any = any || buckets[i] > 0;
  }
  if (any) {
    latency_.ObserveMultiple(buckets, next->latency_sum - from.latency_sum);
  }
  published_ = std::move(next);
}

void BrokerMetrics::PublishServices(const View& v) {
  absl::flat_hash_set<std::string_view> labels;
  labels.reserve(v.shown.services.size());
  for (const BrokerSnapshot::Service& svc : v.shown.services) {
    labels.insert(svc.name);
  }
  for (auto it = service_series_.begin(); it != service_series_.end();) {
    if (labels.contains(it->first)) {
      ++it;
      continue;
    }
    families_.workers.Remove(it->second.workers);
    families_.queue_depth.Remove(it->second.queued);
    service_series_.erase(it++);
  }
  for (const BrokerSnapshot::Service& svc : v.shown.services) {
    auto [it, added] = service_series_.try_emplace(svc.name);
    if (added) {
      const prometheus::Labels l = {{"broker", name_}, {"service", svc.name}};
      it->second = {&families_.workers.Add(l), &families_.queue_depth.Add(l)};
    }
    it->second.workers->Set(static_cast<double>(svc.workers));
    it->second.queued->Set(static_cast<double>(svc.queued));
  }
  folded_services_.Set(static_cast<double>(v.folded));
  if (v.folded > 0) {
    if (other_.workers == nullptr) {
      const prometheus::Labels l = {{"broker", name_},
                                    {"service", std::string(kOtherService)}};
      other_ = {&families_.workers.Add(l), &families_.queue_depth.Add(l)};
    }
    other_.workers->Set(static_cast<double>(v.other_workers));
    other_.queued->Set(static_cast<double>(v.other_queued));
  } else if (other_.workers != nullptr) {
    families_.workers.Remove(other_.workers);
    families_.queue_depth.Remove(other_.queued);
    other_ = {nullptr, nullptr};
  }
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

BrokerMetrics& Metrics::AddBroker(const std::string& name,
                                  std::size_t max_services) {
  std::lock_guard<std::mutex> lock(scrape_mu_);
  brokers_.push_back(std::unique_ptr<BrokerMetrics>(
      new BrokerMetrics(name, max_services, *families_)));
  return *brokers_.back();
}

std::string Metrics::Serialize() const {
  std::vector<prometheus::MetricFamily> families;
  {
    // The brokers' series change only here, so nothing changes them while
    // Collect() reads them family by family (metrics.h, "Why the series
    // change only inside a scrape").
    std::lock_guard<std::mutex> lock(scrape_mu_);
    for (const std::unique_ptr<BrokerMetrics>& broker : brokers_) {
      broker->Publish();
    }
    families = registry_->Collect();
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace zb
