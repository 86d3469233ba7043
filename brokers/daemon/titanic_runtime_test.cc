// Copyright 2026 The zbrokers Authors.
//
// The daemon's [titanic] table: the keys and flags, their validation, and
// zb::Daemon running Titanic in-process in front of its Majordomo broker
// (hand-built MDP frames from a plain REQ socket as the client, an MdpWorker
// echo worker), with Titanic's metrics on /metrics, also in a daemon of a
// fail-over pair.  The kill -9 tests of the real zb-broker are
// titanic_process_test.py --in-daemon and test/ha/ha_titanic_process_test.py.

#include <spdlog/sinks/ostream_sink.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "absl/strings/str_cat.h"
#include "brokers/daemon/config.h"
#include "brokers/daemon/daemon.h"
#include "brokers/daemon/logging.h"
#include "brokers/daemon/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/loopback_http.h"
#include "test/testing/socket_io.h"
#include "zbrokers/majordomo/worker.h"
#include "zbrokers/reactor/reactor_thread.h"
#include "zbrokers/titanic/titanic.h"

namespace zb {
namespace {

using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Strings = std::vector<std::string>;

class BlockSignals : public ::testing::Environment {
 public:
  void SetUp() override { BlockShutdownSignals(); }
};
const auto* const kBlockSignals =
    ::testing::AddGlobalTestEnvironment(new BlockSignals);

absl::StatusOr<CommandLine> Parse(std::vector<const char*> args) {
  return ParseCommandLine(std::span<const char* const>(args));
}

std::string ParseError(std::string_view toml) {
  absl::StatusOr<DaemonConfig> c = ParseConfigText(toml, "t.toml");
  EXPECT_FALSE(c.ok()) << "parsed: " << toml;
  return c.ok() ? "" : std::string(c.status().message());
}

TEST(TitanicConfigTest, FileSetsEveryKey) {
  absl::StatusOr<DaemonConfig> c = ParseConfigText(
      "[majordomo]\n"
      "endpoints = [\"tcp://*:5555\"]\n"
      "[titanic]\n"
      "store_path = \"/var/lib/zb/t.db\"\n"
      "synchronous = \"normal\"\n"
      "max_requests = 7\n"
      "max_request_bytes = 1000\n"
      "request_timeout = \"3s\"\n"
      "retry_delay = \"0s\"\n"
      "max_in_flight = 9\n"
      "request_expiry = \"2h\"\n",
      "t.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  const TitanicSettings& t = c->titanic;
  EXPECT_EQ(t.store_path, "/var/lib/zb/t.db");
  EXPECT_EQ(t.synchronous, "normal");
  EXPECT_EQ(t.max_requests, 7);
  EXPECT_EQ(t.max_request_bytes, 1000);
  EXPECT_EQ(t.request_timeout, 3s);
  EXPECT_EQ(t.retry_delay, 0ms);
  EXPECT_EQ(t.max_in_flight, 9);
  EXPECT_EQ(t.request_expiry, 2h);
  EXPECT_TRUE(ValidateConfig(*c).ok());
  // --check-config prints it back, and that parses to the same.
  const std::string printed = FormatConfig(*c);
  EXPECT_THAT(printed, HasSubstr("[titanic]\n"));
  EXPECT_THAT(printed, HasSubstr("request_expiry = \"2h\""));
  absl::StatusOr<DaemonConfig> back = ParseConfigText(printed, "p.toml");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << printed;
  EXPECT_EQ(FormatConfig(*back), printed);
}

TEST(TitanicConfigTest, FlagsAreTheKeysWithTheTablesName) {
  absl::StatusOr<CommandLine> cli =
      Parse({"--majordomo", "tcp://*:1", "--titanic-store-path", "/tmp/t.db",
             "--titanic-synchronous=normal", "--titanic-max-requests", "5",
             "--titanic-max-request-bytes", "64", "--titanic-request-timeout",
             "2s", "--titanic-retry-delay", "10ms", "--titanic-max-in-flight",
             "3", "--titanic-request-expiry", "0s"});
  ASSERT_TRUE(cli.ok()) << cli.status();
  absl::StatusOr<DaemonConfig> c = BuildConfig(*cli);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->titanic.store_path, "/tmp/t.db");
  EXPECT_EQ(c->titanic.synchronous, "normal");
  EXPECT_EQ(c->titanic.max_requests, 5);
  EXPECT_EQ(c->titanic.max_request_bytes, 64);
  EXPECT_EQ(c->titanic.request_timeout, 2s);
  EXPECT_EQ(c->titanic.retry_delay, 10ms);
  EXPECT_EQ(c->titanic.max_in_flight, 3);
  EXPECT_EQ(c->titanic.request_expiry, 0ms);
}

TEST(TitanicConfigTest, BadValuesNameTheKeyAndLine) {
  EXPECT_THAT(ParseError("[titanic]\nsynchronous = \"fast\"\n"),
              AllOf(HasSubstr("t.toml:2:"), HasSubstr("titanic.synchronous"),
                    HasSubstr("\"full\" or \"normal\"")));
  EXPECT_THAT(ParseError("[titanic]\nsynchronous = 1\n"),
              HasSubstr("titanic.synchronous"));
  EXPECT_THAT(ParseError("[titanic]\nmax_requests = 0\n"),
              AllOf(HasSubstr("titanic.max_requests"), HasSubstr("from 1")));
  EXPECT_THAT(ParseError("[titanic]\nmax_in_flight = -1\n"),
              HasSubstr("titanic.max_in_flight"));
  EXPECT_THAT(ParseError("[titanic]\nrequest_timeout = \"0s\"\n"),
              HasSubstr("titanic.request_timeout"));
  EXPECT_THAT(ParseError("[titanic]\nrequest_expiry = \"soon\"\n"),
              HasSubstr("titanic.request_expiry"));
  // Derived from the daemon, not keys: the broker and the heartbeat.
  EXPECT_THAT(ParseError("[titanic]\nbroker = \"tcp://x:1\"\n"),
              HasSubstr("titanic.broker"));
  EXPECT_THAT(ParseError("[titanic]\nheartbeat_interval = \"1s\"\n"),
              HasSubstr("titanic.heartbeat_interval"));
  absl::StatusOr<CommandLine> cli =
      Parse({"--majordomo", "tcp://*:1", "--titanic-synchronous", "off"});
  ASSERT_TRUE(cli.ok());
  absl::StatusOr<DaemonConfig> c = BuildConfig(*cli);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("--titanic-synchronous"));
}

TEST(TitanicConfigTest, NeedsTheMajordomoBroker) {
  absl::StatusOr<DaemonConfig> c = ParseConfigText(
      "[consensus]\nendpoints = [\"tcp://*:1\"]\n"
      "[titanic]\nstore_path = \"t.db\"\n",
      "t.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  absl::Status s = ValidateConfig(*c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              AllOf(HasSubstr("t.toml:4:"), HasSubstr("titanic.store_path"),
                    HasSubstr("majordomo.endpoints")));
}

TEST(TitanicConfigTest, UsageListsEveryFlagWithItsDefault) {
  const std::string usage = UsageText();
  const TitanicOptions t;
  for (const std::string& want :
       {std::string("--titanic-store-path FILE"),
        std::string("--titanic-synchronous full|normal"),
        absl::StrCat("[", t.max_requests, "]"),
        absl::StrCat("[", t.max_request_bytes, "]"),
        absl::StrCat("[", FormatDuration(t.request_timeout), "]"),
        absl::StrCat("[", FormatDuration(t.request_expiry), "]"),
        std::string("--titanic-retry-delay"),
        std::string("--titanic-max-in-flight")}) {
    EXPECT_THAT(usage, HasSubstr(want));
  }
}

using daemon_test::CapturedLog;

using daemon_test::Sample;

class TitanicDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/zb_titanic_daemon_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  DaemonConfig Config() {
    DaemonConfig c;
    c.majordomo.endpoints = {"tcp://127.0.0.1:*"};
    c.majordomo.heartbeat_interval = 100ms;
    c.metrics = "127.0.0.1:0";
    c.grace = 500ms;
    c.titanic.store_path = dir_ + "/titanic.db";
    return c;
  }

  // One MDP request from a plain REQ socket; the reply without the
  // "MDPC01" and service frames (empty after 5 s).
  Strings Call(const std::string& endpoint, const Strings& frames) {
    zmq::socket_t s(ctx_, zmq::socket_type::req);
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::rcvtimeo, 5000);
    s.connect(endpoint);
    test::SendAll(s, frames);
    Strings r = test::RecvAll(s);
    if (r.size() < 2 || r[0] != "MDPC01" || r[1] != frames[1]) return {};
    return Strings(r.begin() + 2, r.end());
  }

  // An MdpWorker for "echo" at `endpoint`, on a reactor thread of its own.
  void StartEcho(const std::string& endpoint) {
    ASSERT_TRUE(worker_thread_
                    .Invoke([&](Reactor& reactor) -> absl::Status {
                      MdpWorker::Options o;
                      o.heartbeat_interval = 100ms;
                      absl::StatusOr<std::unique_ptr<MdpWorker>> w =
                          MdpWorker::Create(
                              reactor, ctx_, endpoint, "echo",
                              [](Frames body, MdpWorker::Replier rep) {
                                rep.Reply(std::move(body));
                              },
                              o);
                      if (!w.ok()) return w.status();
                      worker_ = *std::move(w);
                      return absl::OkStatus();
                    })
                    .ok());
  }
  void StopEcho() {
    worker_thread_.Invoke([&](Reactor&) { worker_.reset(); });
  }

  // /metrics once `series` has `value` (the page is refreshed once a
  // second), or the last page after 10 s.
  static std::string ScrapeUntil(int port, const std::string& series,
                                 double value) {
    std::string text;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    do {
      text = test::HttpGet(port, "/metrics");
      if (Sample(text, series) == value) break;
      std::this_thread::sleep_for(100ms);
    } while (std::chrono::steady_clock::now() < deadline);
    return text;
  }

  zmq::context_t ctx_;
  std::string dir_;
  ReactorThread worker_thread_;
  std::unique_ptr<MdpWorker> worker_;
};

TEST_F(TitanicDaemonTest, RunsTitanicInFrontOfMajordomoWithItsMetrics) {
  CapturedLog log;
  absl::StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(Config(), log.logger);
  ASSERT_TRUE(d.ok()) << d.status();
  Daemon& daemon = **d;
  // The inproc endpoint Titanic uses is the daemon's own, not listed.
  ASSERT_EQ(daemon.majordomo_endpoints().size(), 1u);
  const std::string ep = daemon.majordomo_endpoints()[0];

  Strings r = Call(ep, {"MDPC01", "titanic.request", "echo", "hello"});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], "200");
  const std::string uuid = r[1];
  EXPECT_TRUE(TitanicStore::ValidUuid(uuid)) << uuid;
  EXPECT_EQ(Call(ep, {"MDPC01", "titanic.reply", uuid}), (Strings{"300"}));

  // An echo worker comes: Titanic's dispatcher gets the request answered.
  StartEcho(ep);
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  do {
    r = Call(ep, {"MDPC01", "titanic.reply", uuid});
    if (r != Strings{"300"}) break;
    std::this_thread::sleep_for(50ms);
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(r, (Strings{"200", "hello"}));
  EXPECT_EQ(Call(ep, {"MDPC01", "titanic.close", uuid}), (Strings{"200"}));

  const std::string text = ScrapeUntil(
      daemon.metrics_port(), "zb_titanic_closed_total{broker=\"titanic\"}", 1);
  EXPECT_EQ(Sample(text, "zb_titanic_accepted_total{broker=\"titanic\"}"), 1);
  EXPECT_EQ(Sample(text, "zb_titanic_answered_total{broker=\"titanic\"}"), 1);
  EXPECT_EQ(Sample(text, "zb_titanic_closed_total{broker=\"titanic\"}"), 1);
  EXPECT_EQ(Sample(text, "zb_titanic_expired_total{broker=\"titanic\"}"), 0);
  EXPECT_EQ(Sample(text, "zb_titanic_refused_full_total{broker=\"titanic\"}"),
            0);
  EXPECT_EQ(Sample(text, "zb_titanic_stored_requests{broker=\"titanic\"}"), 0);
  EXPECT_EQ(Sample(text, "zb_titanic_pending_requests{broker=\"titanic\"}"), 0);
  EXPECT_GE(Sample(text, "zb_requests_total{broker=\"titanic\"}"), 4);

  StopEcho();
  daemon.Shutdown();
  EXPECT_TRUE(daemon_test::WaitBounded(daemon, 15s).ok());
  EXPECT_THAT(log.text(), HasSubstr("titanic: totals:"));
}

// The store full and expiry reach the metrics too (max_requests 1, a short
// request_expiry, no worker for the service).
TEST_F(TitanicDaemonTest, RefusedAndExpiredRequestsAreCounted) {
  CapturedLog log;
  DaemonConfig c = Config();
  c.titanic.max_requests = 1;
  c.titanic.request_expiry = 400ms;
  absl::StatusOr<std::unique_ptr<Daemon>> d = Daemon::Create(c, log.logger);
  ASSERT_TRUE(d.ok()) << d.status();
  Daemon& daemon = **d;
  const std::string ep = daemon.majordomo_endpoints()[0];
  Strings r = Call(ep, {"MDPC01", "titanic.request", "nobody", "1"});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], "200");
  r = Call(ep, {"MDPC01", "titanic.request", "nobody", "2"});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].substr(0, 3), "500");
  const std::string text = ScrapeUntil(
      daemon.metrics_port(), "zb_titanic_expired_total{broker=\"titanic\"}", 1);
  EXPECT_EQ(Sample(text, "zb_titanic_expired_total{broker=\"titanic\"}"), 1);
  EXPECT_EQ(Sample(text, "zb_titanic_refused_full_total{broker=\"titanic\"}"),
            1);
  EXPECT_EQ(Sample(text, "zb_titanic_stored_requests{broker=\"titanic\"}"), 0);
  EXPECT_EQ(
      Sample(text,
             "zb_events_total{broker=\"titanic\",event=\"expired_pending\"}"),
      1);
  daemon.Shutdown();
  EXPECT_TRUE(daemon_test::WaitBounded(daemon, 15s).ok());
}

// In a fail-over pair (docs/titanic.md, "Titanic in a fail-over pair"):
// a backup that has never heard its primary serves no client at all, but
// its Titanic reaches the Majordomo broker on the internal endpoint, which
// the pair never gates, so the requests its file holds are answered.
// Before, Titanic was a client like any other: its dispatches were
// dropped (answered stayed 0).
TEST_F(TitanicDaemonTest, ABrokerThatServesNoClientStillServesItsTitanic) {
  {
    auto store = TitanicStore::Open(dir_ + "/titanic.db");
    ASSERT_TRUE(store.ok()) << store.status();
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE((*store)->Store("echo", MakeFrames({"stored"})).ok());
    }
  }
  CapturedLog log;
  DaemonConfig c = Config();
  c.titanic.request_timeout = 500ms;
  c.titanic.retry_delay = 50ms;
  c.ha.role = HaRole::kBackup;
  c.ha.state_endpoint = "tcp://127.0.0.1:*";
  c.ha.peer_state_endpoint = "tcp://127.0.0.1:1";  // nobody: never heard
  absl::StatusOr<std::unique_ptr<Daemon>> d = Daemon::Create(c, log.logger);
  ASSERT_TRUE(d.ok()) << d.status();
  Daemon& daemon = **d;
  const std::string ep = daemon.majordomo_endpoints()[0];
  StartEcho(ep);
  std::string text =
      ScrapeUntil(daemon.metrics_port(),
                  "zb_titanic_answered_total{broker=\"titanic\"}", 3);
  EXPECT_EQ(Sample(text, "zb_titanic_answered_total{broker=\"titanic\"}"), 3);
  EXPECT_EQ(Sample(text, "zb_titanic_pending_requests{broker=\"titanic\"}"), 0);
  EXPECT_GE(Sample(text,
                   "zb_events_total{broker=\"majordomo\",event="
                   "\"requests_internal\"}"),
            3);
  EXPECT_EQ(Sample(text, "zb_ha_state{state=\"backup\"}"), 1);
  // A client from outside is dropped, as a backup does.
  zmq::socket_t client(ctx_, zmq::socket_type::req);
  client.set(zmq::sockopt::linger, 0);
  client.set(zmq::sockopt::rcvtimeo, 300);
  client.connect(ep);
  test::SendAll(client, {"MDPC01", "mmi.service", "echo"});
  EXPECT_TRUE(test::RecvAll(client).empty());
  text = ScrapeUntil(daemon.metrics_port(),
                     "zb_events_total{broker=\"majordomo\",event="
                     "\"requests_refused_passive\"}",
                     1);
  EXPECT_EQ(Sample(text,
                   "zb_events_total{broker=\"majordomo\",event="
                   "\"requests_refused_passive\"}"),
            1);
  EXPECT_EQ(Sample(text, "zb_ha_state{state=\"backup\"}"), 1);
  StopEcho();
  daemon.Shutdown();
  EXPECT_TRUE(daemon_test::WaitBounded(daemon, 15s).ok());
}

TEST_F(TitanicDaemonTest, StoreThatCannotOpenIsAnErrorNamingIt) {
  CapturedLog log;
  DaemonConfig c = Config();
  c.titanic.store_path = dir_ + "/no/such/dir/t.db";
  absl::StatusOr<std::unique_ptr<Daemon>> d = Daemon::Create(c, log.logger);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(),
              AllOf(HasSubstr("titanic: "), HasSubstr("no/such/dir")));
}

}  // namespace
}  // namespace zb
