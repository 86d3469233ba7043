// Copyright 2026 The zbrokers Authors.
//
// In-process tests of the daemon's operational surface: the HTTP server's
// /healthz, /readyz and zb_build_info, metrics addresses that cannot be
// used, SIGHUP reloads, and ipc socket files.  daemon_test.cc covers the
// brokers, metrics and drain; zb_broker_ops_test.py runs the same features
// against the real zb-broker process.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spdlog/sinks/base_sink.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>
#include <zmq.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "absl/strings/str_cat.h"
#include "brokers/daemon/config.h"
#include "brokers/daemon/daemon.h"
#include "brokers/daemon/logging.h"
#include "brokers/daemon/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/loopback_http.h"
#include "test/testing/socket_io.h"

#ifndef ZB_VERSION
#define ZB_VERSION "dev"
#endif

namespace zb {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

class BlockSignals : public ::testing::Environment {
 public:
  void SetUp() override { BlockShutdownSignals(); }
};
const auto* const kBlockSignals =
    ::testing::AddGlobalTestEnvironment(new BlockSignals);

// A sink that keeps every formatted line, readable while others log.
class LinesSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::string text() {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    text_.append(line.data(), line.size());
  }
  void flush_() override {}

 private:
  std::string text_;
};

struct CapturedLog {
  std::shared_ptr<LinesSink> sink = std::make_shared<LinesSink>();
  std::shared_ptr<spdlog::logger> logger =
      MakeDaemonLogger(DaemonLogLevel::kInfo, sink);
  std::string text() { return sink->text(); }
};

DaemonConfig LoopbackConfig() {
  DaemonConfig c;
  c.majordomo.endpoints = {"tcp://127.0.0.1:*"};
  c.consensus.endpoints = {"tcp://127.0.0.1:*"};
  c.metrics = "127.0.0.1:0";
  c.stats_interval = 0ms;
  c.grace = 3s;
  return c;
}

struct HttpResponse {
  int status = 0;  // 0: no response
  std::string body;
  std::string raw;
};

HttpResponse HttpGet(int port, const std::string& path) {
  HttpResponse r;
  r.raw = test::HttpGet(port, path);
  if (r.raw.rfind("HTTP/1.", 0) == 0 && r.raw.size() > 12) {
    r.status = std::atoi(r.raw.c_str() + 9);
  }
  if (const std::size_t end = r.raw.find("\r\n\r\n");
      end != std::string::npos) {
    r.body = r.raw.substr(end + 4);
  }
  return r;
}

// GETs `path` until `done(response)` or 10 s; returns the last response.
HttpResponse GetUntil(int port, const std::string& path,
                      const std::function<bool(const HttpResponse&)>& done) {
  HttpResponse r;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    r = HttpGet(port, path);
    if (done(r)) break;
    std::this_thread::sleep_for(20ms);
  }
  return r;
}

using daemon_test::WaitBounded;

using test::RecvAll;
using test::SendAll;

// A TCP port on 127.0.0.1 held (listening) for the object's lifetime.
class BusyPort {
 public:
  BusyPort() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(fd_, 1), 0);
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~BusyPort() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A busy metrics port used to fail with civetweb's "null context when
// constructing CivetServer", which says nothing about the address.
TEST(MetricsAddressTest, BusyPortIsAnErrorInPlainWords) {
  BusyPort busy;
  CapturedLog log;
  DaemonConfig config = LoopbackConfig();
  config.metrics = absl::StrCat("127.0.0.1:", busy.port());
  absl::StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(config, log.logger);
  ASSERT_FALSE(d.ok());
  const std::string msg(d.status().message());
  EXPECT_THAT(msg,
              HasSubstr(absl::StrCat("metrics: cannot listen on "
                                     "127.0.0.1:",
                                     busy.port(), ": Address already in use")));
  EXPECT_THAT(msg, Not(HasSubstr("null context")));
  EXPECT_THAT(msg, Not(HasSubstr("CivetServer")));
}

TEST(MetricsAddressTest, UnknownHostAndForeignAddressAreErrorsInPlainWords) {
  CapturedLog log;
  DaemonConfig config = LoopbackConfig();
  config.metrics = "no-such-host.invalid:5580";
  absl::StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(config, log.logger);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(std::string(d.status().message()),
              HasSubstr("metrics: cannot listen on no-such-host.invalid:5580: "
                        "unknown host \"no-such-host.invalid\""));
  // An address this machine does not have (TEST-NET-1, RFC 5737).
  config.metrics = "192.0.2.1:5580";
  d = Daemon::Create(config, log.logger);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(std::string(d.status().message()),
              HasSubstr("metrics: cannot listen on 192.0.2.1:5580: Cannot "
                        "assign requested address"));
}

// A hostname works (civetweb itself takes only numeric addresses).
TEST(MetricsAddressTest, HostnameIsResolved) {
  CapturedLog log;
  DaemonConfig config = LoopbackConfig();
  config.metrics = "localhost:0";
  absl::StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(config, log.logger);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(HttpGet((*d)->metrics_port(), "/healthz").status, 200);
  (*d)->Shutdown();
  EXPECT_TRUE(WaitBounded(**d, 15s).ok());
}

TEST(HttpEndpointsTest, HealthzReadyzAndBuildInfo) {
  CapturedLog log;
  DaemonConfig config = LoopbackConfig();
  config.grace = 1s;  // the held request keeps the drain going this long
  absl::StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(config, log.logger);
  ASSERT_TRUE(d.ok()) << d.status();
  Daemon& daemon = **d;
  const int port = daemon.metrics_port();
  ASSERT_GT(port, 0);

  HttpResponse health = HttpGet(port, "/healthz");
  EXPECT_EQ(health.status, 200) << health.raw;
  EXPECT_EQ(health.body, "ok\n");
  HttpResponse ready = HttpGet(port, "/readyz");
  EXPECT_EQ(ready.status, 200) << ready.raw;
  EXPECT_EQ(ready.body, "ready\n");
  EXPECT_EQ(HttpGet(port, "/nope").status, 404);

  // zb_build_info: one series, value 1, the version and the libzmq in use.
  int major = 0, minor = 0, patch = 0;
  zmq_version(&major, &minor, &patch);
  const HttpResponse metrics = HttpGet(port, "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_THAT(metrics.body, HasSubstr("# TYPE zb_build_info gauge"));
  EXPECT_THAT(metrics.body, HasSubstr(absl::StrCat("libzmq=\"", major, ".",
                                                   minor, ".", patch, "\"")));
  EXPECT_THAT(metrics.body,
              HasSubstr(absl::StrCat("version=\"", ZB_VERSION, "\"} 1\n")));
  EXPECT_THAT(metrics.body,
              HasSubstr("zb_requests_total{broker=\"majordomo\"}"));

  // Hold a request open (a raw Majordomo worker that never answers), so
  // that the drain lasts: readiness turns 503 at once, liveness stays 200.
  zmq::context_t ctx;
  zmq::socket_t worker(ctx, zmq::socket_type::dealer);
  worker.set(zmq::sockopt::linger, 0);
  worker.set(zmq::sockopt::rcvtimeo, 5000);
  worker.connect(daemon.majordomo_endpoints()[0]);
  SendAll(worker, {"", "MDPW01", "\x01", "hold"});
  zmq::socket_t client(ctx, zmq::socket_type::dealer);
  client.set(zmq::sockopt::linger, 0);
  client.connect(daemon.majordomo_endpoints()[0]);
  SendAll(client, {"", "MDPC01", "hold", "body"});
  std::vector<std::string> request = RecvAll(worker);
  while (!request.empty() && request.size() > 2 && request[2] == "\x04") {
    request = RecvAll(worker);  // a heartbeat came first
  }
  ASSERT_GE(request.size(), 3u);
  ASSERT_EQ(request[2], "\x02");  // REQUEST: the client's request is open

  daemon.Shutdown();
  ready = GetUntil(port, "/readyz",
                   [](const HttpResponse& r) { return r.status == 503; });
  EXPECT_EQ(ready.status, 503) << ready.raw;
  EXPECT_EQ(ready.body, "draining\n");
  EXPECT_EQ(HttpGet(port, "/healthz").status, 200);
  EXPECT_TRUE(WaitBounded(daemon, 15s).ok());
}

// A config file the test rewrites.
class ConfigFile {
 public:
  ConfigFile() {
    char name[] = "/tmp/zb_ops_test_XXXXXX";
    const int fd = mkstemp(name);
    EXPECT_GE(fd, 0);
    close(fd);
    path_ = name;
  }
  ~ConfigFile() { std::remove(path_.c_str()); }
  void Write(const std::string& text) { std::ofstream(path_) << text; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string FileText(const std::string& level, const std::string& grace) {
  return absl::StrCat("[daemon]\nlog_level = \"", level, "\"\ngrace = \"",
                      grace,
                      "\"\nstats_interval = \"0s\"\n\n[consensus]\n"
                      "endpoints = [\"tcp://127.0.0.1:*\"]\n");
}

// Waits until the captured log contains `text` (10 s at most).
bool WaitForLog(CapturedLog& log, const std::string& text) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (log.text().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// SIGHUP used to kill the daemon (its default action) without a log line.
// Now it reads the configuration again: the log level changes at once,
// keys that need a restart are named, reload handlers run, and a file that
// does not load changes nothing.
TEST(SighupTest, ReloadsLogLevelAndRunsReloadHandlers) {
  ConfigFile file;
  file.Write(FileText("info", "5s"));
  absl::StatusOr<DaemonConfig> config = LoadConfigFile(file.path());
  ASSERT_TRUE(config.ok()) << config.status();
  CapturedLog log;
  const std::string path = file.path();
  absl::StatusOr<std::unique_ptr<Daemon>> d = Daemon::Create(
      *config, log.logger, [path]() -> absl::StatusOr<DaemonConfig> {
        absl::StatusOr<DaemonConfig> c = LoadConfigFile(path);
        if (c.ok()) {
          if (absl::Status s = ValidateConfig(*c); !s.ok()) return s;
        }
        return c;
      });
  ASSERT_TRUE(d.ok()) << d.status();
  Daemon& daemon = **d;
  std::atomic<int> handled{0};
  std::string seen_level;  // written on the control thread, read after Wait
  daemon.AddReloadHandler(
      {"test handler", {"daemon.log_level"}, [&](const DaemonConfig& c) {
         seen_level = std::string(LogLevelName(c.log_level));
         ++handled;
         return absl::OkStatus();
       }});
  daemon.AddReloadHandler({"failing handler", {}, [](const DaemonConfig&) {
                             return absl::InternalError("cannot apply");
                           }});

  log.logger->debug("hidden before the reload");
  file.Write(FileText("debug", "7s"));
  ASSERT_EQ(kill(getpid(), SIGHUP), 0);
  ASSERT_TRUE(WaitForLog(log, "SIGHUP: log level info -> debug")) << log.text();
  ASSERT_TRUE(WaitForLog(log, "failing handler: cannot apply")) << log.text();
  log.logger->debug("shown after the reload");
  EXPECT_EQ(handled.load(), 1);
  EXPECT_THAT(log.text(), HasSubstr("SIGHUP: reading the configuration again"));
  EXPECT_THAT(log.text(),
              HasSubstr("SIGHUP: daemon.grace changed; it takes effect after "
                        "a restart"));

  // A file that does not load: logged, nothing changes, still serving.
  file.Write("[daemon]\nlog_level = \"loud\"\n");
  ASSERT_EQ(kill(getpid(), SIGHUP), 0);
  ASSERT_TRUE(WaitForLog(log, "keeping the running configuration"))
      << log.text();
  EXPECT_EQ(handled.load(), 1);
  zmq::context_t ctx;
  zmq::socket_t client(ctx, zmq::socket_type::dealer);
  client.set(zmq::sockopt::linger, 0);
  client.set(zmq::sockopt::rcvtimeo, 5000);
  client.connect(daemon.consensus_endpoints()[0]);
  SendAll(client, {"", "CCp100", "\x07"});  // PING
  EXPECT_EQ(RecvAll(client), (std::vector<std::string>{"", "CCp100", "\x07"}));

  daemon.Shutdown();
  EXPECT_TRUE(WaitBounded(daemon, 15s).ok());
  const std::string text = log.text();
  EXPECT_THAT(text, Not(HasSubstr("hidden before the reload")));
  EXPECT_THAT(text, HasSubstr("shown after the reload"));
  EXPECT_THAT(text, HasSubstr("daemon.log_level: unknown log level \"loud\""));
  EXPECT_EQ(seen_level, "debug");
}

// Without a source (Create() without one) SIGHUP is logged and ignored.
TEST(SighupTest, WithoutASourceIsLoggedAndIgnored) {
  CapturedLog log;
  DaemonConfig config = LoopbackConfig();
  config.metrics.clear();
  absl::StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(config, log.logger);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(kill(getpid(), SIGHUP), 0);
  ASSERT_TRUE(WaitForLog(log, "SIGHUP: no configuration to read again"))
      << log.text();
  (*d)->Shutdown();
  EXPECT_TRUE(WaitBounded(**d, 15s).ok());
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// libzmq 4.3 leaves an ipc:// endpoint's socket file behind when the socket
// closes.  The consensus broker removed its own; the Majordomo broker left
// its file, so a restarted daemon's clients could connect to a dead path.
TEST(IpcCleanupTest, BothBrokersRemoveTheirSocketFilesOnExit) {
  char dir[] = "/tmp/zb_ops_ipc_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string mdp = std::string(dir) + "/mdp.sock";
  const std::string ccp = std::string(dir) + "/ccp.sock";
  CapturedLog log;
  DaemonConfig config = LoopbackConfig();
  config.metrics.clear();
  config.majordomo.endpoints = {"ipc://" + mdp, "tcp://127.0.0.1:*"};
  config.consensus.endpoints = {"ipc://" + ccp};
  absl::StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(config, log.logger);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(Exists(mdp));
  EXPECT_TRUE(Exists(ccp));
  (*d)->Shutdown();
  EXPECT_TRUE(WaitBounded(**d, 15s).ok());
  d->reset();
  EXPECT_FALSE(Exists(mdp)) << mdp << " is left behind";
  EXPECT_FALSE(Exists(ccp)) << ccp << " is left behind";
  std::remove(mdp.c_str());
  std::remove(ccp.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace zb
