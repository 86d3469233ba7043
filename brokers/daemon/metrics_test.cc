// Copyright 2026 The zbrokers Authors.

#include "brokers/daemon/metrics.h"

#include <atomic>
#include <chrono>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "brokers/daemon/http_server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/loopback_http.h"

namespace zb {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The whole response (headers and body) of GET http://127.0.0.1:port/path.
using test::HttpGet;

BrokerSnapshot Snapshot(std::uint64_t requests) {
  BrokerSnapshot s;
  s.requests = requests;
  s.replies = requests - 1;
  s.failures = 1;
  s.timeouts = 2;
  s.malformed = 3;
  s.events = {{"redispatched", 4}};
  s.services = {{"echo", 2, 7}, {"other", 1, 0}};
  s.open_requests = 7;
  return s;
}

TEST(MetricsTest, SnapshotBecomesMetrics) {
  Metrics metrics;
  BrokerMetrics& mdp = metrics.AddBroker("majordomo");
  mdp.Update(Snapshot(10));
  const std::string text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr("zb_requests_total{broker=\"majordomo\"} 10"));
  EXPECT_THAT(text, HasSubstr("zb_replies_total{broker=\"majordomo\"} 9"));
  EXPECT_THAT(text, HasSubstr("zb_failures_total{broker=\"majordomo\"} 1"));
  EXPECT_THAT(text, HasSubstr("zb_timeouts_total{broker=\"majordomo\"} 2"));
  EXPECT_THAT(text, HasSubstr("zb_malformed_total{broker=\"majordomo\"} 3"));
  EXPECT_THAT(text, HasSubstr("zb_events_total{broker=\"majordomo\","
                              "event=\"redispatched\"} 4"));
  EXPECT_THAT(text, HasSubstr("zb_workers{broker=\"majordomo\","
                              "service=\"echo\"} 2"));
  EXPECT_THAT(text, HasSubstr("zb_queue_depth{broker=\"majordomo\","
                              "service=\"echo\"} 7"));
  EXPECT_THAT(text, HasSubstr("zb_open_requests{broker=\"majordomo\"} 7"));
  EXPECT_THAT(text, HasSubstr("zb_draining{broker=\"majordomo\"} 0"));
  EXPECT_EQ(mdp.last().requests, 10u);
}

TEST(MetricsTest, CountersAdvanceByDifferenceAndNeverGoBack) {
  Metrics metrics;
  BrokerMetrics& ccp = metrics.AddBroker("consensus");
  ccp.Update(Snapshot(10));
  ccp.Update(Snapshot(25));
  EXPECT_THAT(metrics.Serialize(),
              HasSubstr("zb_requests_total{broker=\"consensus\"} 25"));
  ccp.Update(Snapshot(20));  // a reset broker must not lower the counter
  EXPECT_THAT(metrics.Serialize(),
              HasSubstr("zb_requests_total{broker=\"consensus\"} 25"));
}

// One kind of broker's own metrics (Titanic's): each a family named
// zb_<name> (gauges) or zb_<name>_total (counters) with the broker label,
// counters advancing by difference and never back, gauges set.
TEST(MetricsTest, OwnGaugesAndCountersAreFamiliesOfTheirOwn) {
  Metrics metrics;
  BrokerMetrics& t = metrics.AddBroker("titanic");
  auto snapshot = [](std::uint64_t stored, std::uint64_t accepted) {
    BrokerSnapshot s;
    s.gauges = {{"titanic_stored_requests", "stored", stored}};
    s.counters = {{"titanic_accepted", "accepted", accepted}};
    return s;
  };
  t.Update(snapshot(5, 7));
  std::string text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr("# TYPE zb_titanic_stored_requests gauge"));
  EXPECT_THAT(text,
              HasSubstr("zb_titanic_stored_requests{broker=\"titanic\"} 5"));
  EXPECT_THAT(text, HasSubstr("# TYPE zb_titanic_accepted_total counter"));
  EXPECT_THAT(text,
              HasSubstr("zb_titanic_accepted_total{broker=\"titanic\"} 7"));
  t.Update(snapshot(2, 9));
  t.Update(snapshot(3, 8));  // a counter never goes back
  text = metrics.Serialize();
  EXPECT_THAT(text,
              HasSubstr("zb_titanic_stored_requests{broker=\"titanic\"} 3"));
  EXPECT_THAT(text,
              HasSubstr("zb_titanic_accepted_total{broker=\"titanic\"} 9"));
  // Another broker without them has no such series.
  metrics.AddBroker("majordomo").Update(Snapshot(1));
  EXPECT_THAT(
      metrics.Serialize(),
      Not(HasSubstr("zb_titanic_stored_requests{broker=\"majordomo\"}")));
}

TEST(MetricsTest, ForgottenServicesLoseTheirSeries) {
  Metrics metrics;
  BrokerMetrics& mdp = metrics.AddBroker("majordomo");
  mdp.Update(Snapshot(10));
  ASSERT_THAT(metrics.Serialize(), HasSubstr("service=\"other\""));
  BrokerSnapshot s = Snapshot(11);
  s.services.pop_back();
  s.draining = true;
  mdp.Update(s);
  const std::string text = metrics.Serialize();
  EXPECT_THAT(text, Not(HasSubstr("service=\"other\"")));
  EXPECT_THAT(text, HasSubstr("service=\"echo\""));
  EXPECT_THAT(text, HasSubstr("zb_draining{broker=\"majordomo\"} 1"));
}

TEST(MetricsTest, TwoBrokersAreSeparateSeries) {
  Metrics metrics;
  BrokerMetrics& mdp = metrics.AddBroker("majordomo");
  BrokerMetrics& ccp = metrics.AddBroker("consensus");
  mdp.Update(Snapshot(3));
  ccp.Update(Snapshot(8));
  const std::string text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr("zb_requests_total{broker=\"majordomo\"} 3"));
  EXPECT_THAT(text, HasSubstr("zb_requests_total{broker=\"consensus\"} 8"));
}

TEST(MetricsTest, LatencyHistogramIsPublishedOnUpdate) {
  Metrics metrics;
  BrokerMetrics& mdp = metrics.AddBroker("majordomo");
  mdp.ObserveLatency(std::chrono::microseconds(40));   // <= 50us
  mdp.ObserveLatency(std::chrono::microseconds(300));  // <= 500us
  mdp.ObserveLatency(std::chrono::seconds(20));        // +Inf
  // Not visible before the next Update().
  EXPECT_THAT(metrics.Serialize(),
              HasSubstr("zb_request_latency_seconds_count{broker=\"majordomo\"}"
                        " 0"));
  mdp.Update(Snapshot(3));
  const std::string text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr("zb_request_latency_seconds_count{broker="
                              "\"majordomo\"} 3"));
  EXPECT_THAT(text, HasSubstr("zb_request_latency_seconds_bucket{broker="
                              "\"majordomo\",le=\"5e-05\"} 1"));
  EXPECT_THAT(text, HasSubstr("zb_request_latency_seconds_bucket{broker="
                              "\"majordomo\",le=\"0.0005\"} 2"));
  EXPECT_THAT(text, HasSubstr("zb_request_latency_seconds_bucket{broker="
                              "\"majordomo\",le=\"10\"} 2"));
  EXPECT_THAT(text, HasSubstr("zb_request_latency_seconds_bucket{broker="
                              "\"majordomo\",le=\"+Inf\"} 3"));
  // Published once only.
  mdp.Update(Snapshot(4));
  EXPECT_THAT(metrics.Serialize(),
              HasSubstr("zb_request_latency_seconds_count{broker="
                        "\"majordomo\"} 3"));
}

TEST(MetricsTest, ServiceLabelsAreValidUtf8) {
  EXPECT_EQ(ServiceLabel("echo"), "echo");
  EXPECT_EQ(ServiceLabel("caf\xc3\xa9 \xe2\x98\x83 \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x98\x83 \xf0\x9f\x98\x80");  // kept as is
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(ServiceLabel("\xfe\xff bad utf8"), fffd + fffd + " bad utf8");
  EXPECT_EQ(ServiceLabel("a\x80z"), "a" + fffd + "z");          // lone
  EXPECT_EQ(ServiceLabel("\xc0\xaf"), fffd + fffd);             // overlong
  EXPECT_EQ(ServiceLabel("\xe0\x80\xaf"), fffd + fffd + fffd);  // overlong
  EXPECT_EQ(ServiceLabel("\xed\xa0\x80"), fffd + fffd + fffd);  // surrogate
  EXPECT_EQ(ServiceLabel("\xf4\x90\x80\x80"), fffd + fffd + fffd + fffd);
  EXPECT_EQ(ServiceLabel("end\xe2\x82"), "end" + fffd + fffd);  // truncated
  // Escaping is the serializer's job; the bytes are valid UTF-8.
  EXPECT_EQ(ServiceLabel("q\"b\\n\n"), "q\"b\\n\n");
  EXPECT_EQ(ServiceLabel(std::string_view("\0", 1)), std::string("\0", 1));
}

TEST(MetricsTest, HostileServiceNamesStayValidAndEscaped) {
  Metrics metrics;
  BrokerMetrics& mdp = metrics.AddBroker("majordomo");
  BrokerSnapshot s;
  s.services = {{"\xfe\xff bad utf8", 1, 2},
                {"\xff\xfe bad utf8", 1, 3},  // the same label: summed
                {"quote\" back\\slash new\nline", 0, 1}};
  mdp.Update(s);
  const std::string text = metrics.Serialize();
  EXPECT_THAT(text, Not(HasSubstr("\xfe")));
  EXPECT_THAT(text, HasSubstr("zb_queue_depth{broker=\"majordomo\",service=\""
                              "\xef\xbf\xbd\xef\xbf\xbd bad utf8\"} 5"));
  EXPECT_THAT(text, HasSubstr("zb_workers{broker=\"majordomo\",service=\""
                              "\xef\xbf\xbd\xef\xbf\xbd bad utf8\"} 2"));
  EXPECT_THAT(text,
              HasSubstr("service=\"quote\\\" back\\\\slash new\\nline\""));
}

TEST(MetricsTest, ServicesBeyondTheCapAreSummedUnderOther) {
  Metrics metrics;
  BrokerMetrics& mdp = metrics.AddBroker("majordomo", /*max_services=*/3);
  auto count = [](const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (std::size_t at = text.find(needle); at != std::string::npos;
         at = text.find(needle, at + 1)) {
      ++n;
    }
    return n;
  };
  BrokerSnapshot s;
  s.services = {{"a", 0, 1}, {"b", 0, 1}, {"c", 0, 1}};
  mdp.Update(s);
  // 20,000 invented names (no workers) and one real service with workers.
  for (int i = 0; i < 20'000; ++i) {
    s.services.push_back({"flood-" + std::to_string(i), 0, 1});
  }
  s.services.push_back({"real", 2, 0});
  mdp.Update(s);
  std::string text = metrics.Serialize();
  // The three that had series keep them; the rest are summed.
  EXPECT_EQ(count(text, "zb_queue_depth{"), 4u) << text.substr(0, 2000);
  EXPECT_THAT(text, HasSubstr("zb_queue_depth{broker=\"majordomo\","
                              "service=\"_other\"} 20000"));
  EXPECT_THAT(text, HasSubstr("zb_workers{broker=\"majordomo\","
                              "service=\"_other\"} 2"));
  EXPECT_THAT(text, HasSubstr("zb_folded_services{broker=\"majordomo\"} "
                              "20001"));
  // "a" goes away: its slot goes to the service with workers first.
  s.services.erase(s.services.begin());
  mdp.Update(s);
  text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr("zb_workers{broker=\"majordomo\","
                              "service=\"real\"} 2"));
  EXPECT_THAT(text, Not(HasSubstr("service=\"a\"")));
  EXPECT_THAT(text, HasSubstr("zb_folded_services{broker=\"majordomo\"} "
                              "20000"));
  // Back under the cap: _other disappears, the count goes to 0.
  s.services = {{"b", 0, 1}};
  mdp.Update(s);
  text = metrics.Serialize();
  EXPECT_THAT(text, Not(HasSubstr(",service=\"_other\"}")));
  EXPECT_THAT(text, HasSubstr("zb_folded_services{broker=\"majordomo\"} 0"));
  EXPECT_EQ(count(text, "zb_queue_depth{"), 1u);
}

// The services one broker's series name on a page, with their values:
// the samples of `family` (zb_workers, zb_queue_depth) whose labels are
// exactly {broker="<broker>",service="<label>"} (the serializer sorts
// labels by name).  The test's service names need no escaping.
std::vector<std::pair<std::string, double>> ServiceSeries(
    const std::string& page, const std::string& family,
    const std::string& broker) {
  const std::string prefix = family + "{broker=\"" + broker + "\",service=\"";
  std::vector<std::pair<std::string, double>> out;
  std::istringstream lines(page);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(prefix)) continue;
    const std::size_t end = line.find("\"} ", prefix.size());
    if (end == std::string::npos) continue;
    out.emplace_back(line.substr(prefix.size(), end - prefix.size()),
                     std::stod(line.substr(end + 3)));
  }
  return out;
}

// chaos_flood's flood, fed to the metrics while /metrics is scraped: ever
// new invented service names (each with a queued request, no workers) that
// the broker forgets again when their requests expire, more of them than
// the cap, next to one real service with a worker.  Every page must be one
// snapshot: at most the cap of services of their own plus _other, the same
// services in zb_workers and zb_queue_depth, and every value from the same
// snapshot.  Before scrapes published the snapshots themselves, a scrape
// collected the families one at a time while Update() changed them on the
// broker's thread: zb_workers from one snapshot and zb_queue_depth from the
// next, up to twice the cap of service labels on one page (chaos_flood:
// 1,213 labels against its cap of 1,100).
TEST(MetricsTest, EveryScrapeIsOneSnapshotWithinTheCap) {
  constexpr std::size_t kCap = BrokerMetrics::kDefaultMaxServices;
  constexpr int kNames = 1500;    // in every snapshot: more than the cap
  constexpr int kTurnover = 500;  // names replaced from one to the next
  constexpr int kMaxUpdates = 3000;
  constexpr int kPages = 40;
  Metrics metrics;
  BrokerMetrics& mdp = metrics.AddBroker("majordomo");
  // Snapshot k: k requests; every service has k requests queued, so that a
  // page's values tell which snapshot they came from.
  auto snapshot = [](int k) {
    BrokerSnapshot s;
    s.requests = static_cast<std::uint64_t>(k);
    s.replies = s.requests;
    s.services.push_back({"echo", 1, static_cast<std::uint64_t>(k)});
    for (int i = 0; i < kNames; ++i) {
      s.services.push_back({"flood-" + std::to_string(k * kTurnover + i), 0,
                            static_cast<std::uint64_t>(k)});
    }
    return s;
  };
  mdp.Update(snapshot(1));
  std::atomic<bool> stop = false;
  std::thread broker_thread([&] {  // plays the broker's reactor thread
    for (int k = 2; k <= kMaxUpdates && !stop; ++k) mdp.Update(snapshot(k));
  });
  int torn = 0;
  for (int page_number = 0; page_number < kPages && torn == 0; ++page_number) {
    const std::string page = metrics.Serialize();
    const auto workers = ServiceSeries(page, "zb_workers", "majordomo");
    const auto queued = ServiceSeries(page, "zb_queue_depth", "majordomo");
    std::set<std::string> worker_labels, queue_labels;
    for (const auto& [label, value] : workers) worker_labels.insert(label);
    for (const auto& [label, value] : queued) queue_labels.insert(label);
    std::set<std::string> all = worker_labels;
    all.insert(queue_labels.begin(), queue_labels.end());
    // The requests counter says which snapshot the page shows.
    const std::string requests_prefix =
        "zb_requests_total{broker=\"majordomo\"} ";
    const std::size_t at = page.find(requests_prefix);
    ASSERT_NE(at, std::string::npos);
    const double requests = std::stod(
        page.substr(at + requests_prefix.size(),
                    page.find('\n', at) - at - requests_prefix.size()));
    int stray_values = 0;
    for (const auto& [label, value] : queued) {
      if (label != BrokerMetrics::kOtherService && value != requests) {
        ++stray_values;
      }
    }
    EXPECT_LE(all.size(), kCap + 1) << "page " << page_number;
    // (Counts, not the sets: a thousand names would drown the message.)
    EXPECT_EQ(all.size() - queue_labels.size(), 0u)
        << "page " << page_number << ": services only in zb_workers";
    EXPECT_EQ(all.size() - worker_labels.size(), 0u)
        << "page " << page_number << ": services only in zb_queue_depth";
    EXPECT_TRUE(
        worker_labels.contains(std::string(BrokerMetrics::kOtherService)))
        << "page " << page_number;
    EXPECT_EQ(stray_values, 0)
        << "page " << page_number << " (zb_requests_total " << requests << ")";
    if (all.size() > kCap + 1 || worker_labels != queue_labels ||
        stray_values != 0) {
      ++torn;
    }
  }
  stop = true;
  broker_thread.join();
}

TEST(MetricsTest, ServesOverHttp) {
  Metrics metrics;
  BrokerMetrics& mdp = metrics.AddBroker("majordomo");
  mdp.Update(Snapshot(42));
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Create(
      "127.0.0.1:0", {{"/metrics", [&metrics] {
                         return HttpServer::Response{200, metrics.Serialize()};
                       }}});
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string response = HttpGet((*server)->port(), "/metrics");
  EXPECT_THAT(response, HasSubstr("200 OK"));
  EXPECT_THAT(response,
              HasSubstr("zb_requests_total{broker=\"majordomo\"} 42"));
  EXPECT_THAT(response, HasSubstr("# TYPE zb_request_latency_seconds "
                                  "histogram"));
}

TEST(MetricsTest, BuildInfo) {
  Metrics metrics;
  metrics.SetBuildInfo({{"version", "1.2.3"}, {"libzmq", "4.3.4"}});
  EXPECT_THAT(
      metrics.Serialize(),
      HasSubstr("# TYPE zb_build_info gauge\n"
                "zb_build_info{libzmq=\"4.3.4\",version=\"1.2.3\"} 1\n"));
}

}  // namespace
}  // namespace zb
