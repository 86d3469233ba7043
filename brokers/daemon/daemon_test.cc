// Copyright 2026 The zbrokers Authors.
//
// In-process tests of zb::Daemon: both brokers on ephemeral loopback ports,
// spoken to with hand-built frames, the metrics endpoint scraped, and the
// drain started by Shutdown() and by a real SIGTERM.  The out-of-process
// tests with independent Python peers are in test/interop/.

#include "brokers/daemon/daemon.h"

#include <signal.h>
#include <spdlog/sinks/ostream_sink.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <future>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "brokers/daemon/logging.h"
#include "brokers/daemon/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/loopback_http.h"
#include "test/testing/socket_io.h"

namespace zb {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// signalfd only sees signals blocked in every thread: block them before any
// test creates a thread.
class BlockSignals : public ::testing::Environment {
 public:
  void SetUp() override { BlockShutdownSignals(); }
};
const auto* const kBlockSignals =
    ::testing::AddGlobalTestEnvironment(new BlockSignals);

using daemon_test::CapturedLog;

DaemonConfig LoopbackConfig() {
  DaemonConfig c;
  c.majordomo.endpoints = {"tcp://127.0.0.1:*"};
  c.consensus.endpoints = {"tcp://127.0.0.1:*"};
  c.metrics = "127.0.0.1:0";
  c.stats_interval = std::chrono::milliseconds(200);
  c.grace = std::chrono::milliseconds(500);
  return c;
}

std::string HttpGet(int port) { return test::HttpGet(port, "/metrics"); }

using test::RecvAll;
using test::SendAll;

// Sends `frames` on a fresh socket of `type` connected to `endpoint` and
// returns the reply's frames (empty after a 5 s timeout).
std::vector<std::string> RoundTrip(zmq::context_t& ctx, zmq::socket_type type,
                                   const std::string& endpoint,
                                   const std::vector<std::string>& frames) {
  zmq::socket_t s(ctx, type);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::rcvtimeo, 5000);
  s.connect(endpoint);
  SendAll(s, frames);
  return RecvAll(s);
}

using daemon_test::WaitBounded;

using daemon_test::Sample;

// Scrapes the metrics endpoint until `ready(text)` or 10 s; returns the last
// response.
std::string ScrapeUntil(int port,
                        const std::function<bool(const std::string&)>& ready) {
  std::string text;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    text = HttpGet(port);
    if (ready(text)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return text;
}

TEST(DaemonTest, ServesBothBrokersPublishesMetricsAndDrains) {
  CapturedLog log;
  absl::StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(LoopbackConfig(), log.logger);
  ASSERT_TRUE(d.ok()) << d.status();
  Daemon& daemon = **d;
  ASSERT_EQ(daemon.majordomo_endpoints().size(), 1u);
  ASSERT_EQ(daemon.consensus_endpoints().size(), 1u);
  EXPECT_THAT(daemon.majordomo_endpoints()[0], StartsWith("tcp://127.0.0.1:"));
  EXPECT_NE(daemon.majordomo_endpoints()[0], "tcp://127.0.0.1:*");
  ASSERT_GT(daemon.metrics_port(), 0);

  zmq::context_t ctx;
  // Majordomo: an MMI query from a plain REQ client.
  EXPECT_EQ(
      RoundTrip(ctx, zmq::socket_type::req, daemon.majordomo_endpoints()[0],
                {"MDPC01", "mmi.service", "echo"}),
      (std::vector<std::string>{"MDPC01", "mmi.service", "404"}));
  // Consensus: a PING from a DEALER is echoed.
  EXPECT_EQ(RoundTrip(ctx, zmq::socket_type::dealer,
                      daemon.consensus_endpoints()[0], {"", "CCp100", "\x07"}),
            (std::vector<std::string>{"", "CCp100", "\x07"}));
  // Consensus: a request for a service without workers fails at once.
  const std::string seq("\0\0\0\0\0\0\0\1\0\0\0\x2a", 12);
  const std::vector<std::string> failed =
      RoundTrip(ctx, zmq::socket_type::dealer, daemon.consensus_endpoints()[0],
                {"", "CCp100", "\x03", "nobody", seq, "payload"});
  ASSERT_GE(failed.size(), 5u);
  EXPECT_EQ(failed[2], "\x05");

  // The counters reach the metrics endpoint within a refresh period or two.
  const std::string text =
      ScrapeUntil(daemon.metrics_port(), [](const std::string& t) {
        return Sample(t, "zb_requests_total{broker=\"majordomo\"}") >= 1 &&
               Sample(t, "zb_requests_total{broker=\"consensus\"}") >= 1;
      });
  EXPECT_THAT(text, HasSubstr("200 OK"));
  EXPECT_GE(Sample(text, "zb_requests_total{broker=\"majordomo\"}"), 1);
  EXPECT_GE(Sample(text, "zb_replies_total{broker=\"majordomo\"}"), 1);
  EXPECT_GE(Sample(text, "zb_requests_total{broker=\"consensus\"}"), 1);
  EXPECT_GE(
      Sample(text, "zb_events_total{broker=\"consensus\",event=\"pings\"}"), 1);

  daemon.Shutdown();
  EXPECT_TRUE(WaitBounded(daemon, std::chrono::seconds(15)).ok());
  const std::string logged = log.text();
  EXPECT_THAT(logged, HasSubstr("majordomo: listening on tcp://127.0.0.1:"));
  EXPECT_THAT(logged, HasSubstr("consensus: listening on tcp://127.0.0.1:"));
  EXPECT_THAT(logged, HasSubstr("ready:"));
  EXPECT_THAT(logged, HasSubstr("majordomo: stats requests="));
  EXPECT_THAT(logged, HasSubstr("Shutdown(): shutting down"));
  EXPECT_THAT(logged, HasSubstr("majordomo: totals: 1 request(s), 1 success"));
  EXPECT_THAT(logged, HasSubstr("stopped"));
}

// Issue 11 (items 3 and 5): the consensus bounds given in the config reach
// the broker -- a frame over consensus.max_message_size gets its peer
// disconnected unanswered, a request beyond max_requests_per_client is
// answered zb:busy -- and the refusals reach the metrics.
TEST(DaemonTest, ConsensusBoundsFromTheConfigReachTheBroker) {
  CapturedLog log;
  DaemonConfig config = LoopbackConfig();
  config.consensus.max_message_size = 4096;
  config.consensus.max_requests_per_client = 1;
  absl::StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(config, log.logger);
  ASSERT_TRUE(d.ok()) << d.status();
  Daemon& daemon = **d;
  const std::string ep = daemon.consensus_endpoints().at(0);
  zmq::context_t ctx;
  // A request with a 5000-byte frame is never answered (it would be
  // zb:no-workers); the next one, within the limit, is.
  const std::string id("\0\0\0\0\0\0\0\1\0\0\0\x2a", 12);
  EXPECT_TRUE(
      RoundTrip(ctx, zmq::socket_type::dealer, ep,
                {"", "CCp100", "\x03", "nobody", id, std::string(5000, 'x')})
          .empty());
  EXPECT_FALSE(
      RoundTrip(ctx, zmq::socket_type::dealer, ep,
                {"", "CCp100", "\x03", "nobody", id, std::string(4096, 'x')})
          .empty());
  // A worker that never answers holds the client's first request open.
  zmq::socket_t worker(ctx, zmq::socket_type::dealer);
  worker.set(zmq::sockopt::linger, 0);
  worker.set(zmq::sockopt::rcvtimeo, 5000);
  worker.connect(ep);
  SendAll(worker, {"", "CCp100", "\x01", "svc", std::string("\0\0\x03\xe8", 4),
                   "\x0a"});  // 1 s x 10: the most the broker allows
  zmq::socket_t client(ctx, zmq::socket_type::dealer);
  client.set(zmq::sockopt::linger, 0);
  client.set(zmq::sockopt::rcvtimeo, 5000);
  client.connect(ep);
  auto seq = [](std::uint8_t n) {
    return std::string("\0\0\0\0\0\0\0", 7) + std::string(1, char(n)) +
           std::string("\0\0\0\x2b", 4);
  };
  // The worker is registered once the metrics show it.
  const std::string registered =
      ScrapeUntil(daemon.metrics_port(), [](const std::string& t) {
        return t.find("zb_workers{broker=\"consensus\",service=\"svc\"} 1") !=
               std::string::npos;
      });
  ASSERT_THAT(registered,
              HasSubstr("zb_workers{broker=\"consensus\",service=\"svc\"} 1"));
  std::uint8_t n = 0;
  SendAll(client, {"", "CCp100", "\x03", "svc", seq(++n), "a"});
  ASSERT_FALSE(RecvAll(worker).empty());  // open at the worker
  SendAll(client, {"", "CCp100", "\x03", "svc", seq(++n), "b"});
  const std::vector<std::string> busy = RecvAll(client);
  ASSERT_GE(busy.size(), 6u);
  EXPECT_EQ(busy[2], "\x05");
  EXPECT_EQ(busy[5], "zb:busy");
  const std::string text =
      ScrapeUntil(daemon.metrics_port(), [](const std::string& t) {
        return Sample(t,
                      "zb_events_total{broker=\"consensus\",event=\"client_"
                      "busy\"}") >= 1;
      });
  EXPECT_EQ(
      Sample(text,
             "zb_events_total{broker=\"consensus\",event=\"client_busy\"}"),
      1);
  daemon.Shutdown();
  EXPECT_TRUE(WaitBounded(daemon, std::chrono::seconds(15)).ok());
}

// The event labels of zb_events_total of one broker, from a scrape.
std::set<std::string> EventNames(const std::string& text,
                                 const std::string& broker) {
  const std::string prefix =
      "zb_events_total{broker=\"" + broker + "\",event=\"";
  std::set<std::string> names;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    const std::size_t end = line.find('"', prefix.size());
    if (end != std::string::npos) {
      names.insert(line.substr(prefix.size(), end - prefix.size()));
    }
  }
  return names;
}

// "workers_refused" -> {"refused", "workers"}: the words, in any order.
std::multiset<std::string> Words(const std::string& name) {
  std::multiset<std::string> words;
  std::istringstream in(name);
  std::string word;
  while (std::getline(in, word, '_')) words.insert(word);
  return words;
}

// One name per concept (docs/glossary.md): the two brokers never count one
// event under the same words in another order, and a READY refused because
// max_workers workers are registered is `workers_refused` in both.
TEST(DaemonTest, BothBrokersNameTheSameEventTheSameWay) {
  CapturedLog log;
  DaemonConfig config = LoopbackConfig();
  config.majordomo.max_workers = 1;
  config.consensus.max_workers = 1;
  absl::StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(config, log.logger);
  ASSERT_TRUE(d.ok()) << d.status();
  Daemon& daemon = **d;
  zmq::context_t ctx;
  std::vector<zmq::socket_t> workers;
  auto ready = [&](const std::string& endpoint,
                   const std::vector<std::string>& frames) {
    zmq::socket_t& w = workers.emplace_back(ctx, zmq::socket_type::dealer);
    w.set(zmq::sockopt::linger, 0);
    w.connect(endpoint);
    SendAll(w, frames);
  };
  // Two workers each; the second READY is one beyond max_workers.
  for (int i = 0; i < 2; ++i) {
    ready(daemon.majordomo_endpoints().at(0), {"", "MDPW01", "\x01", "svc"});
    ready(
        daemon.consensus_endpoints().at(0),
        {"", "CCp100", "\x01", "svc", std::string("\0\0\x03\xe8", 4), "\x03"});
  }
  const std::string mdp_series =
      "zb_events_total{broker=\"majordomo\",event=\"workers_refused\"}";
  const std::string ccp_series =
      "zb_events_total{broker=\"consensus\",event=\"workers_refused\"}";
  const std::string text =
      ScrapeUntil(daemon.metrics_port(), [&](const std::string& t) {
        return Sample(t, mdp_series) >= 1 && Sample(t, ccp_series) >= 1;
      });
  EXPECT_EQ(Sample(text, mdp_series), 1) << text;
  EXPECT_EQ(Sample(text, ccp_series), 1) << text;

  const std::set<std::string> mdp = EventNames(text, "majordomo");
  const std::set<std::string> ccp = EventNames(text, "consensus");
  ASSERT_FALSE(mdp.empty()) << text;
  ASSERT_FALSE(ccp.empty()) << text;
  for (const std::string& m : mdp) {
    for (const std::string& c : ccp) {
      EXPECT_FALSE(m != c && Words(m) == Words(c))
          << "majordomo's " << m << " and consensus's " << c
          << " are one event under two names";
    }
  }
  daemon.Shutdown();
  EXPECT_TRUE(WaitBounded(daemon, std::chrono::seconds(15)).ok());
}

// The consensus broker's answered requests reach the latency histogram, and
// its drain ends as soon as the last open request is answered -- long before
// the grace period -- because the broker calls back instead of being polled.
TEST(DaemonTest, ConsensusLatencyIsObservedAndDrainEndsWithTheLastRequest) {
  CapturedLog log;
  DaemonConfig config = LoopbackConfig();
  config.grace = std::chrono::seconds(30);
  absl::StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(config, log.logger);
  ASSERT_TRUE(d.ok()) << d.status();
  Daemon& daemon = **d;
  const std::string ep = daemon.consensus_endpoints()[0];

  zmq::context_t ctx;
  zmq::socket_t worker(ctx, zmq::socket_type::dealer);
  zmq::socket_t client(ctx, zmq::socket_type::dealer);
  for (zmq::socket_t* s : {&worker, &client}) {
    s->set(zmq::sockopt::linger, 0);
    s->set(zmq::sockopt::rcvtimeo, 5000);
    s->connect(ep);
  }
  // READY "svc", heartbeat 10 s x 3 (the test outlives no heartbeat).
  SendAll(worker, {"", "CCp100", "\x01", "svc", std::string("\0\0\x27\x10", 4),
                   "\x03"});
  // Sequence ids of client 0x2b; each request must use the next number.
  std::uint64_t next = 1;
  auto sequence = [](std::uint64_t n) {
    std::string b(12, '\0');
    for (int i = 0; i < 8; ++i) b[7 - i] = static_cast<char>(n >> (8 * i));
    b[11] = '\x2b';
    return b;
  };
  // The next REQUEST the worker gets (broker HEARTBEATs skipped), or empty.
  auto next_request = [&worker] {
    for (;;) {
      std::vector<std::string> m = RecvAll(worker);
      if (m.size() < 3 || m[2] != "\x02") return m;
    }
  };
  // The first requests may beat the READY to the broker (answered
  // zb:no-workers): send until one reaches the worker.
  worker.set(zmq::sockopt::rcvtimeo, 100);
  std::vector<std::string> got;
  for (int i = 0; i < 50 && got.empty(); ++i) {
    SendAll(client, {"", "CCp100", "\x03", "svc", sequence(next++), "p"});
    got = next_request();
    if (got.empty()) RecvAll(client);  // the zb:no-workers failure
  }
  worker.set(zmq::sockopt::rcvtimeo, 5000);
  ASSERT_GE(got.size(), 6u);
  SendAll(worker, {"", "CCp100", "\x04", "svc", got[4], "answer"});
  std::vector<std::string> reply = RecvAll(client);
  ASSERT_GE(reply.size(), 6u);
  EXPECT_EQ(reply[2], "\x04");

  const std::string latency_count =
      "zb_request_latency_seconds_count{broker=\"consensus\"}";
  const std::string text = ScrapeUntil(
      daemon.metrics_port(),
      [&](const std::string& t) { return Sample(t, latency_count) >= 1; });
  EXPECT_GE(Sample(text, latency_count), 1);

  // A second request stays open at the worker while the daemon drains.
  SendAll(client, {"", "CCp100", "\x03", "svc", sequence(next++), "q"});
  got = next_request();
  ASSERT_GE(got.size(), 6u);
  const auto drain_start = std::chrono::steady_clock::now();
  daemon.Shutdown();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  SendAll(worker, {"", "CCp100", "\x04", "svc", got[4], "late answer"});
  reply = RecvAll(client);
  ASSERT_GE(reply.size(), 6u);
  EXPECT_EQ(reply[2], "\x04");
  EXPECT_TRUE(WaitBounded(daemon, std::chrono::seconds(15)).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - drain_start,
            std::chrono::seconds(10))
      << "the drain waited for the grace period";
  EXPECT_THAT(log.text(), HasSubstr("consensus: drained"));
}

TEST(DaemonTest, SigtermDrainsAndStops) {
  CapturedLog log;
  DaemonConfig config = LoopbackConfig();
  config.metrics.clear();
  config.consensus.endpoints.clear();
  absl::StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(config, log.logger);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->metrics_port(), 0);
  ASSERT_EQ(kill(getpid(), SIGTERM), 0);
  EXPECT_TRUE(WaitBounded(**d, std::chrono::seconds(15)).ok());
  EXPECT_THAT(log.text(), HasSubstr("SIGTERM: shutting down"));
}

TEST(DaemonTest, BusyEndpointIsAnErrorNamingIt) {
  CapturedLog log;
  DaemonConfig first_config = LoopbackConfig();
  first_config.metrics.clear();
  first_config.consensus.endpoints.clear();
  absl::StatusOr<std::unique_ptr<Daemon>> first =
      Daemon::Create(first_config, log.logger);
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string taken = (*first)->majordomo_endpoints()[0];

  DaemonConfig second_config = LoopbackConfig();
  second_config.metrics.clear();
  second_config.majordomo.endpoints.clear();
  second_config.consensus.endpoints = {taken};
  absl::StatusOr<std::unique_ptr<Daemon>> second =
      Daemon::Create(second_config, log.logger);
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.status().message(), HasSubstr("consensus: cannot bind"));
  EXPECT_THAT(second.status().message(), HasSubstr(taken));
  // The first daemon is unaffected and stops cleanly.
  (*first)->Shutdown();
  EXPECT_TRUE(WaitBounded(**first, std::chrono::seconds(15)).ok());
}

TEST(DaemonTest, StopWhileTimersFireOftenIsSafe) {
  // The brokers' periodic timers (here every millisecond) keep firing until
  // their threads stop; the brokers must not be reached after they are
  // destroyed.  Under ASan this catches a use-after-free at once.
  for (int i = 0; i < 20; ++i) {
    CapturedLog log;
    log.logger->set_level(spdlog::level::warn);
    DaemonConfig config = LoopbackConfig();
    config.metrics.clear();
    config.stats_interval = std::chrono::milliseconds(1);
    config.grace = std::chrono::milliseconds(0);
    absl::StatusOr<std::unique_ptr<Daemon>> d =
        Daemon::Create(config, log.logger);
    ASSERT_TRUE(d.ok()) << d.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(i % 5));
    if (i % 2 == 0) {
      (*d)->Shutdown();
      ASSERT_TRUE(WaitBounded(**d, std::chrono::seconds(15)).ok());
    } else {
      d->reset();  // no drain at all
    }
  }
}

TEST(DaemonTest, ConfigWithoutBrokersIsRejected) {
  CapturedLog log;
  DaemonConfig config;
  absl::StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(config, log.logger);
  EXPECT_FALSE(d.ok());
}

TEST(DaemonTest, DestroyWithoutDrainStopsEverything) {
  CapturedLog log;
  absl::StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(LoopbackConfig(), log.logger);
  ASSERT_TRUE(d.ok()) << d.status();
  const std::string endpoint = (**d).majordomo_endpoints()[0];
  d->reset();  // must join every thread and close every socket
  // The port is free again.
  zmq::context_t ctx;
  zmq::socket_t s(ctx, zmq::socket_type::router);
  s.set(zmq::sockopt::linger, 0);
  EXPECT_NO_THROW(s.bind(endpoint));
}

}  // namespace
}  // namespace zb
