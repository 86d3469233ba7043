// Copyright 2026 The zbrokers Authors.
//
// Interoperability: the Majordomo broker against independent MDP peers
// written in Python from RFC 7 (test/interop/mdp_peers.py, pyzmq), and the
// C++ client and worker libraries against those peers.  The Python processes
// are started with posix_spawn and always killed and reaped at the end.

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "brokers/majordomo/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/must.h"
#include "test/testing/wait.h"
#include "zbrokers/majordomo/broker.h"
#include "zbrokers/majordomo/client.h"
#include "zbrokers/majordomo/worker.h"
#include "zbrokers/reactor/reactor_thread.h"

extern char** environ;

namespace zb {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

#ifndef ZB_SOURCE_ROOT
#error "ZB_SOURCE_ROOT must name the source tree"
#endif

const char* kPython = "/usr/bin/python3";
const std::string kPeers =
    std::string(ZB_SOURCE_ROOT) + "/test/interop/mdp_peers.py";

// One spawned peer; its stdout goes to a temp file.
class Peer {
 public:
  explicit Peer(std::vector<std::string> args) {
    char tmpl[] = "/tmp/zb-mdp-peer-XXXXXX";
    const int fd = mkstemp(tmpl);
    out_path_ = tmpl;
    std::vector<std::string> argv = {kPython, kPeers};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fd, 1);
    posix_spawn_file_actions_adddup2(&actions, fd, 2);
    const int rc =
        posix_spawn(&pid_, kPython, &actions, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fd);
    if (rc != 0) pid_ = -1;
  }

  ~Peer() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::remove(out_path_.c_str());
  }

  bool started() const { return pid_ > 0; }

  // Waits up to `limit` for the process to end; returns its exit code, or
  // -1 when it did not end in time (it is then killed).
  int Wait(std::chrono::milliseconds limit = 60s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!exited_) {
      int status = 0;
      const pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exited_ = true;
        code_ =
            WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) return -1;
      std::this_thread::sleep_for(5ms);
    }
    return code_;
  }

  // SIGTERM (a worker then sends DISCONNECT and prints its summary).
  int Terminate() {
    if (!exited_) kill(pid_, SIGTERM);
    return Wait(10s);
  }

  std::string Output() const {
    std::ifstream in(out_path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  int code_ = -1;
  std::string out_path_;
};

// Python peers start slowly: a longer default bound than test::WaitFor's.
bool WaitFor(const std::function<bool()>& pred,
             std::chrono::milliseconds limit = 20s) {
  return test::WaitFor(pred, limit);
}

// The broker and the C++ peers' reactor threads are MdpIntegrationTest's
// (test_util.h); heartbeats are slower than its defaults for Python peers.
class MdpInteropTest : public mdp_test::MdpIntegrationTest {
 protected:
  void SetUp() override {
    MajordomoBroker::Options o;
    o.heartbeat_interval = 100ms;
    o.heartbeat_liveness = 5;  // Python peers can be starved under load
    o.max_redispatch = 3;
    StartBroker(o);
  }

  std::unique_ptr<Peer> PyWorker(const std::string& service,
                                 std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"worker", endpoint_, service,
                                     "--heartbeat-interval", "100ms"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto p = std::make_unique<Peer>(args);
    EXPECT_TRUE(p->started());
    return p;
  }
};

TEST_F(MdpInteropTest, PythonClientsAndWorkers) {
  auto w1 = PyWorker("echo");
  auto w2 = PyWorker("echo");
  ASSERT_TRUE(WaitFor([&] { return Workers("echo") == 2; }));
  Peer sync({"client", endpoint_, "echo", "--requests", "1000"});
  Peer async({"async-client", endpoint_, "echo", "--requests", "3000",
              "--window", "100"});
  EXPECT_EQ(sync.Wait(), 0) << sync.Output();
  EXPECT_EQ(async.Wait(), 0) << async.Output();
  EXPECT_THAT(sync.Output(), HasSubstr("ok=1000 lost=0"));
  EXPECT_THAT(async.Output(), HasSubstr("ok=3000 lost=0"));
  Peer found({"mmi", endpoint_, "echo"});
  Peer missing({"mmi", endpoint_, "nope"});
  EXPECT_EQ(found.Wait(), 0) << found.Output();
  EXPECT_EQ(missing.Wait(), 1) << missing.Output();
  EXPECT_EQ(w1->Terminate(), 0) << w1->Output();
  EXPECT_EQ(w2->Terminate(), 0) << w2->Output();
  // Both workers said DISCONNECT.
  EXPECT_TRUE(WaitFor([&] { return Workers("echo") == 0; }));
}

TEST_F(MdpInteropTest, CppClientWithPythonWorker) {
  auto w = PyWorker("py.echo");
  ASSERT_TRUE(WaitFor([&] { return Workers("py.echo") == 1; }));
  absl::StatusOr<std::unique_ptr<MdpClient>> client_or =
      MdpClient::Create(endpoint_, {}, &ctx_);
  ASSERT_TRUE(client_or.ok()) << client_or.status();
  MdpClient& client = **client_or;
  for (int i = 0; i < 100; ++i) {
    auto reply =
        client.Request("py.echo", MakeFrames({"a", std::to_string(i)}));
    ASSERT_TRUE(reply.ok()) << reply.status();
    ASSERT_THAT(FramesToStrings(*reply),
                ::testing::ElementsAre("a", std::to_string(i)));
  }
}

TEST_F(MdpInteropTest, PythonClientWithCppWorker) {
  worker_thread_.Invoke([&](Reactor& r) {
    MdpWorker::Options o;
    o.heartbeat_interval = 100ms;
    workers_.push_back(test::Must(MdpWorker::Create(
        r, ctx_, endpoint_, "cpp.echo",
        [](Frames body, MdpWorker::Replier rep) { rep.Reply(std::move(body)); },
        o)));
  });
  ASSERT_TRUE(WaitFor([&] { return Workers("cpp.echo") == 1; }));
  Peer sync({"client", endpoint_, "cpp.echo", "--requests", "500"});
  Peer async({"async-client", endpoint_, "cpp.echo", "--requests", "1000"});
  EXPECT_EQ(sync.Wait(), 0) << sync.Output();
  EXPECT_EQ(async.Wait(), 0) << async.Output();
}

TEST_F(MdpInteropTest, PythonWorkerCrashWhileBusyLosesNothing) {
  auto crasher = PyWorker("echo", {"--crash-after", "5"});
  auto steady = PyWorker("echo");
  ASSERT_TRUE(WaitFor([&] { return Workers("echo") == 2; }));
  Peer sync({"client", endpoint_, "echo", "--requests", "50", "--timeout",
             "5000ms", "--retries", "0"});
  EXPECT_EQ(sync.Wait(), 0) << sync.Output();
  EXPECT_EQ(crasher->Wait(), 3) << crasher->Output();
  const auto s =
      broker_thread_.Invoke([&](Reactor&) { return broker_->stats(); });
  // At least the crashed worker's request went to another worker.  (On a
  // heavily loaded machine a starved Python worker can also miss its
  // heartbeats and be expired and redispatched once more; that loses
  // nothing either, so the counts are lower bounds.)
  EXPECT_GE(s.redispatched, 1u);
  EXPECT_GE(s.workers_expired, 1u);
  EXPECT_EQ(s.failures, 0u);
}

TEST_F(MdpInteropTest, RawMalformedGetsNoAnswerButUnexpectedGetsDisconnect) {
  Peer garbage({"raw", endpoint_, "", "MDPW01", "\\x09"});
  EXPECT_EQ(garbage.Wait(), 0);
  EXPECT_THAT(garbage.Output(), HasSubstr("reply=[]"));
  Peer stranger({"raw", endpoint_, "", "MDPW01", "\\x04"});
  EXPECT_EQ(stranger.Wait(), 0);
  EXPECT_THAT(stranger.Output(), HasSubstr("reply=[b'', b'MDPW01', b'\\x05']"));
}

// --- Request tags (issue 10 item 4) ---------------------------------------

// The Python async client, written from docs/protocols/mdp.md, speaks the
// request-tag extension against this broker with 4 Python workers that
// finish out of order and 50 requests outstanding: every reply carries the
// tag of the request it answers.
TEST_F(MdpInteropTest, PythonTaggedClientGetsEveryReplyUnderItsOwnTag) {
  std::vector<std::unique_ptr<Peer>> workers;
  for (int i = 0; i < 4; ++i) {
    workers.push_back(PyWorker("echo", {"--jitter-ms", "3"}));
  }
  ASSERT_TRUE(WaitFor([&] { return Workers("echo") == 4; }));
  Peer client({"async-client", endpoint_, "echo", "--requests", "4000",
               "--window", "50", "--tagged", "--timeout", "20000ms"});
  EXPECT_EQ(client.Wait(120s), 0) << client.Output();
  EXPECT_THAT(client.Output(), HasSubstr("ok=4000 lost=0 bad=0 wrong=0"));
  const auto s =
      broker_thread_.Invoke([&](Reactor&) { return broker_->stats(); });
  EXPECT_GE(s.tagged_requests, 4000u);
}

// MdpAsyncClient with 4 Python workers that finish out of order and 50
// requests outstanding: 0 mismatches, through this broker (tags) ...
TEST_F(MdpInteropTest, CppAsyncClientMatchesExactlyWithPythonWorkers) {
  std::vector<std::unique_ptr<Peer>> workers;
  for (int i = 0; i < 4; ++i) {
    workers.push_back(PyWorker("echo", {"--jitter-ms", "3"}));
  }
  ASSERT_TRUE(WaitFor([&] { return Workers("echo") == 4; }));
  constexpr int kRequests = 2000;
  mdp_test::MatchCounts counts;
  std::atomic<bool> finished{false};
  std::unique_ptr<MdpAsyncClient> client;
  worker_thread_.Invoke([&](Reactor& r) {
    MdpAsyncClient::Options o;
    o.timeout = 20s;
    absl::StatusOr<std::unique_ptr<MdpAsyncClient>> created =
        MdpAsyncClient::Create(r, ctx_, endpoint_, o);
    ASSERT_TRUE(created.ok()) << created.status();
    client = *std::move(created);
    mdp_test::RunMatched(*client, kRequests, 50, counts, finished);
  });
  ASSERT_TRUE(WaitFor([&] { return finished.load(); }, 120s));
  worker_thread_.Invoke([&](Reactor&) {
    EXPECT_EQ(counts.wrong, 0);
    EXPECT_EQ(counts.ok, kRequests);
    EXPECT_TRUE(client->tagged());
    client.reset();
  });
}

// ... and through the minimal RFC 7-only Python broker, with and without
// RFC 8 MMI: the client then keeps one request per service on the wire.
class PlainBrokerTest : public MdpInteropTest,
                        public ::testing::WithParamInterface<bool> {};

TEST_P(PlainBrokerTest, CppAsyncClientFallsBackToWhatRfc7CanMatch) {
  // Generous liveness: this broker has no redispatch, so a Python worker
  // starved past it on a loaded machine loses its request (the client's
  // retry then resends it).
  std::vector<std::string> args = {
      "broker", "tcp://127.0.0.1:*",    "--heartbeat-interval",
      "200ms",  "--heartbeat-liveness", "10"};
  if (GetParam()) args.push_back("--mmi");
  Peer broker(args);
  std::string endpoint;
  ASSERT_TRUE(WaitFor([&] {
    const std::string out = broker.Output();
    const auto at = out.find("listening on ");
    const auto end = out.find('\n', at);
    if (at == std::string::npos || end == std::string::npos) return false;
    endpoint = out.substr(at + 13, end - at - 13);
    return true;
  })) << broker.Output();
  std::vector<std::unique_ptr<Peer>> workers;
  for (int i = 0; i < 4; ++i) {
    workers.push_back(std::make_unique<Peer>(std::vector<std::string>{
        "worker", endpoint, "echo", "--heartbeat-interval", "200ms",
        "--heartbeat-liveness", "10", "--jitter-ms", "2"}));
  }
  // No way to ask a plain broker how many workers it has: the first
  // requests simply wait in its queue until one registers.
  constexpr int kRequests = 600;
  mdp_test::MatchCounts counts;
  std::atomic<bool> finished{false};
  std::unique_ptr<MdpAsyncClient> client;
  worker_thread_.Invoke([&](Reactor& r) {
    MdpAsyncClient::Options o;
    o.timeout = 10s;
    o.retries = 3;
    absl::StatusOr<std::unique_ptr<MdpAsyncClient>> created =
        MdpAsyncClient::Create(r, ctx_, endpoint, o);
    ASSERT_TRUE(created.ok()) << created.status();
    client = *std::move(created);
    mdp_test::RunMatched(*client, kRequests, 50, counts, finished);
  });
  ASSERT_TRUE(WaitFor([&] { return finished.load(); }, 150s))
      << broker.Output();
  worker_thread_.Invoke([&](Reactor&) {
    EXPECT_EQ(counts.wrong, 0);
    EXPECT_EQ(counts.failed, 0);
    EXPECT_EQ(counts.ok, kRequests);
    EXPECT_FALSE(client->tagged());
    client.reset();
  });
  EXPECT_EQ(broker.Terminate(), 0);
  // The plain broker never saw a tagged request.
  EXPECT_THAT(broker.Output(), HasSubstr("invalid=0"));
}

INSTANTIATE_TEST_SUITE_P(Mmi, PlainBrokerTest, ::testing::Bool(),
                         [](const auto& info) {
                           return info.param ? "WithMmi" : "WithoutMmi";
                         });

}  // namespace
}  // namespace zb
