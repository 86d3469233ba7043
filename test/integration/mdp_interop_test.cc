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

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "brokers/client/mdp_client.h"
#include "brokers/majordomo/majordomo_broker.h"
#include "brokers/worker/mdp_worker.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "reactor/reactor_thread.h"

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

bool WaitFor(const std::function<bool()>& pred,
             std::chrono::milliseconds limit = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return pred();
}

class MdpInteropTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MajordomoBroker::Options o;
    o.heartbeat_interval = 100ms;
    o.heartbeat_liveness = 5;  // Python peers can be starved under load
    o.max_redispatch = 3;
    broker_thread_.invoke([&](Reactor& r) {
      broker_ = std::make_unique<MajordomoBroker>(r, ctx_, o);
      ASSERT_TRUE(broker_->Bind("tcp://127.0.0.1:*").ok());
      endpoint_ = broker_->endpoints()[0];
      broker_->set_log_hook(nullptr);
    });
  }
  void TearDown() override {
    worker_thread_.invoke([&](Reactor&) { workers_.clear(); });
    broker_thread_.invoke([&](Reactor&) { broker_.reset(); });
  }

  std::size_t Workers(const std::string& service) {
    return broker_thread_.invoke([&](Reactor&) {
      auto s = broker_->stats();
      auto it = s.services.find(service);
      return it == s.services.end() ? std::size_t{0} : it->second.workers;
    });
  }

  std::unique_ptr<Peer> PyWorker(const std::string& service,
                                 std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"worker", endpoint_, service,
                                     "--heartbeat-ms", "100"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto p = std::make_unique<Peer>(args);
    EXPECT_TRUE(p->started());
    return p;
  }

  zmq::context_t ctx_;
  ReactorThread broker_thread_;
  ReactorThread worker_thread_;
  std::unique_ptr<MajordomoBroker> broker_;
  std::string endpoint_;
  std::vector<std::unique_ptr<MdpWorker>> workers_;
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
  MdpClient client(endpoint_, {}, &ctx_);
  for (int i = 0; i < 100; ++i) {
    auto reply =
        client.Request("py.echo", MakeFrames({"a", std::to_string(i)}));
    ASSERT_TRUE(reply.ok()) << reply.status();
    ASSERT_THAT(FramesToStrings(*reply),
                ::testing::ElementsAre("a", std::to_string(i)));
  }
}

TEST_F(MdpInteropTest, PythonClientWithCppWorker) {
  worker_thread_.invoke([&](Reactor& r) {
    MdpWorker::Options o;
    o.heartbeat_interval = 100ms;
    workers_.push_back(std::make_unique<MdpWorker>(
        r, ctx_, endpoint_, "cpp.echo",
        [](Frames body, MdpWorker::Replier rep) { rep.Reply(std::move(body)); },
        o));
    ASSERT_TRUE(workers_.back()->Start().ok());
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
  Peer sync({"client", endpoint_, "echo", "--requests", "50", "--timeout-ms",
             "5000", "--retries", "0"});
  EXPECT_EQ(sync.Wait(), 0) << sync.Output();
  EXPECT_EQ(crasher->Wait(), 3) << crasher->Output();
  const auto s =
      broker_thread_.invoke([&](Reactor&) { return broker_->stats(); });
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

}  // namespace
}  // namespace zb
