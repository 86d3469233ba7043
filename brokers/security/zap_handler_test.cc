// Copyright 2026 The zbrokers Authors.
//
// The allowlist, the ZAP handler against hand-made RFC 27 requests, and
// real CURVE handshakes through libzmq against the handler and the
// handshake monitor.

#include "zbrokers/security/zap_handler.h"

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/reactor/reactor_thread.h"
#include "zbrokers/security/handshake_monitor.h"

namespace zb {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class TempDir {
 public:
  TempDir() {
    const char* t = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(t != nullptr ? t : "/tmp") + "/zb_zap_test.XXXXXX";
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    const std::string cmd = "rm -rf '" + path_ + "'";
    if (std::system(cmd.c_str()) != 0) {
      // Best effort.
    }
  }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    return p;
  }

 private:
  std::string path_;
};

CurveKeyPair NewPair() {
  absl::StatusOr<CurveKeyPair> p = GenerateCurveKeyPair();
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

std::shared_ptr<const CurveAllowlist> ListOf(
    std::initializer_list<const CurveKey*> keys) {
  std::string text;
  for (const CurveKey* k : keys) text += Z85(*k) + "\n";
  absl::StatusOr<CurveAllowlist> list = CurveAllowlist::Parse(text, "test");
  EXPECT_TRUE(list.ok()) << list.status();
  return std::make_shared<const CurveAllowlist>(*std::move(list));
}

// --- CurveAllowlist
// ------------------------------------------------------------

TEST(CurveAllowlistTest, FileWithLabelsAndDuplicates) {
  const CurveKeyPair a = NewPair(), b = NewPair(), c = NewPair();
  TempDir dir;
  const std::string path = dir.Write(
      "clients", "# workers\n" + Z85(a.public_key) + " alice\n" +
                     Z85(b.public_key) + "\n" + Z85(a.public_key) + " again\n");
  absl::StatusOr<CurveAllowlist> list = CurveAllowlist::Load(path);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->size(), 2u);
  EXPECT_EQ(list->Find(a.public_key), "alice");
  EXPECT_EQ(list->Find(b.public_key), "");
  EXPECT_FALSE(list->Contains(c.public_key));
}

TEST(CurveAllowlistTest, DirectoryReadsPubFilesOnly) {
  const CurveKeyPair a = NewPair(), b = NewPair(), c = NewPair();
  TempDir dir;
  dir.Write("alice.pub", "# alice's laptop\n" + Z85(a.public_key) + "\n");
  dir.Write("bob.pub", Z85(b.public_key) + " bob-worker\n");
  dir.Write("carol.secret", Z85(c.public_key) + "\n");  // not *.pub
  dir.Write(".hidden.pub", Z85(c.public_key) + "\n");
  ASSERT_EQ(mkdir((dir.path() + "/sub.pub").c_str(), 0755), 0);
  absl::StatusOr<CurveAllowlist> list = CurveAllowlist::Load(dir.path());
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->size(), 2u);
  EXPECT_EQ(list->Find(a.public_key), "alice");  // the file's stem
  EXPECT_EQ(list->Find(b.public_key), "bob-worker");
  EXPECT_FALSE(list->Contains(c.public_key));
  EXPECT_EQ(list->ignored_files(), 3u);
}

TEST(CurveAllowlistTest, ErrorsNameFileAndLine) {
  TempDir dir;
  const CurveKeyPair a = NewPair();
  dir.Write("good.pub", Z85(a.public_key) + "\n");
  dir.Write("bad.pub", "# x\n\nhello world\n");
  absl::StatusOr<CurveAllowlist> list = CurveAllowlist::Load(dir.path());
  ASSERT_FALSE(list.ok());
  EXPECT_THAT(std::string(list.status().message()), HasSubstr("bad.pub:3:"));
  absl::StatusOr<CurveAllowlist> missing =
      CurveAllowlist::Load(dir.path() + "/none");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("none"));
  absl::StatusOr<CurveAllowlist> empty =
      CurveAllowlist::Parse("# nobody\n", "e");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->size(), 0u);
}

// --- ZapHandler on raw RFC 27 requests -------------------------------------

class ZapRawTest : public ::testing::Test {
 protected:
  void SetUp() override {
    thread_.Invoke([&](Reactor& r) {
      absl::StatusOr<std::unique_ptr<ZapHandler>> zap =
          ZapHandler::Create(r, ctx_);
      ASSERT_TRUE(zap.ok());
      zap_ = *std::move(zap);
      zap_->set_allowlist(ListOf({&allowed_.public_key}));
      zap_->set_domains({"majordomo"});
      zap_->set_decision_hook([this](const ZapHandler::Decision& d) {
        std::lock_guard<std::mutex> lock(mu_);
        decisions_.push_back(std::string(d.domain) + "|" +
                             std::string(d.address) + "|" + d.key + "|" +
                             std::string(d.status_code));
      });
    });
    req_.set(zmq::sockopt::linger, 0);
    req_.set(zmq::sockopt::rcvtimeo, 2000);
    req_.connect(std::string(ZapHandler::kEndpoint));
  }
  void TearDown() override {
    req_.close();
    thread_.Invoke([&](Reactor&) { zap_.reset(); });
  }

  // Sends one request through a REQ socket (which adds the delimiter, as
  // libzmq's own ZAP client does) and returns the reply frames.
  std::vector<std::string> Ask(std::vector<std::string> frames) {
    Frames out;
    for (const std::string& f : frames) out.push_back(Frame(f));
    EXPECT_TRUE(SendFrames(req_, out).ok());
    Frames in;
    EXPECT_GT(ReceiveMessage(req_, in, 0), 0) << "no ZAP reply";
    return FramesToStrings(in);
  }

  static std::string Raw(const CurveKey& k) {
    return std::string(reinterpret_cast<const char*>(k.data()), k.size());
  }

  zmq::context_t ctx_;
  ReactorThread thread_;
  std::unique_ptr<ZapHandler> zap_;
  zmq::socket_t req_{ctx_, zmq::socket_type::req};
  const CurveKeyPair allowed_ = NewPair();
  const CurveKeyPair other_ = NewPair();
  std::mutex mu_;
  std::vector<std::string> decisions_;
};

TEST_F(ZapRawTest, AllowsListedCurveKey) {
  EXPECT_THAT(
      Ask({"1.0", "7", "majordomo", "10.0.0.1", "", "CURVE",
           Raw(allowed_.public_key)}),
      ElementsAre("1.0", "7", "200", "OK", Z85(allowed_.public_key), ""));
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_THAT(decisions_, ElementsAre("majordomo|10.0.0.1|" +
                                      Z85(allowed_.public_key) + "|200"));
}

TEST_F(ZapRawTest, RefusesUnlistedKeyOtherMechanismsAndDomains) {
  EXPECT_EQ(Ask({"1.0", "1", "majordomo", "a", "", "CURVE",
                 Raw(other_.public_key)})[2],
            "400");
  // NULL comes only from plaintext listeners, which let everyone in; in a
  // domain the handler does not serve it is refused like the rest.
  EXPECT_EQ(Ask({"1.0", "2", "majordomo", "a", "", "NULL"})[2], "200");
  EXPECT_EQ(Ask({"1.0", "2", "elsewhere", "a", "", "NULL"})[2], "400");
  EXPECT_EQ(Ask({"1.0", "3", "majordomo", "a", "", "PLAIN", "user", "pw"})[2],
            "400");
  EXPECT_EQ(Ask({"1.0", "4", "elsewhere", "a", "", "CURVE",
                 Raw(allowed_.public_key)})[2],
            "400");
  std::vector<std::string> bad = Ask(
      {"2.0", "5", "majordomo", "a", "", "CURVE", Raw(allowed_.public_key)});
  EXPECT_EQ(bad[1], "5");
  EXPECT_EQ(bad[2], "500");
  EXPECT_EQ(Ask({"1.0", "6", "majordomo", "a", "", "CURVE", "short"})[2],
            "500");
  const ZapHandler::Stats stats =
      thread_.Invoke([&](Reactor&) { return zap_->stats(); });
  EXPECT_EQ(stats.requests, 7u);
  EXPECT_EQ(stats.allowed, 1u);
  EXPECT_EQ(stats.denied, 4u);
  EXPECT_EQ(stats.malformed, 2u);
}

TEST_F(ZapRawTest, ReloadSwapsTheList) {
  EXPECT_EQ(Ask({"1.0", "1", "majordomo", "a", "", "CURVE",
                 Raw(other_.public_key)})[2],
            "400");
  thread_.Invoke(
      [&](Reactor&) { zap_->set_allowlist(ListOf({&other_.public_key})); });
  EXPECT_EQ(Ask({"1.0", "2", "majordomo", "a", "", "CURVE",
                 Raw(other_.public_key)})[2],
            "200");
  EXPECT_EQ(Ask({"1.0", "3", "majordomo", "a", "", "CURVE",
                 Raw(allowed_.public_key)})[2],
            "400");
}

TEST_F(ZapRawTest, SecondHandlerInTheSameContextIsRefused) {
  absl::Status s = thread_.Invoke(
      [&](Reactor& r) { return ZapHandler::Create(r, ctx_).status(); });
  EXPECT_TRUE(absl::IsAlreadyExists(s)) << s;
}

// --- Real handshakes -------------------------------------------------------

// A ROUTER in the test thread listening in plaintext, with CURVE, and in
// plaintext again (libzmq takes a socket's security options per listener,
// at bind time); the ZAP handler and a handshake monitor on a reactor
// thread.
class HandshakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    router_.set(zmq::sockopt::linger, 0);
    ASSERT_EQ(zmq_socket_monitor(router_.handle(), "inproc://zb-test-monitor",
                                 HandshakeMonitor::kEvents),
              0);
    thread_.Invoke([&](Reactor& r) {
      absl::StatusOr<std::unique_ptr<ZapHandler>> zap =
          ZapHandler::Create(r, ctx_);
      ASSERT_TRUE(zap.ok());
      zap_ = *std::move(zap);
      zap_->set_allowlist(ListOf({&client_.public_key}));
      absl::StatusOr<std::unique_ptr<HandshakeMonitor>> monitor =
          HandshakeMonitor::Create(r, ctx_, "inproc://zb-test-monitor",
                                   [this](const HandshakeMonitor::Failure& f) {
                                     std::lock_guard<std::mutex> lock(mu_);
                                     failures_.emplace_back(f.reason);
                                   });
      ASSERT_TRUE(monitor.ok());
      monitor_ = *std::move(monitor);
    });
    plain_ = Bind({});
    curve_ = Bind(
        {.curve_secret_key = server_.secret_key, .zap_domain = "consensus"});
    plain2_ = Bind({});
  }
  void TearDown() override {
    for (zmq::socket_t& d : dealers_) d.close();
    router_.close();
    thread_.Invoke([&](Reactor&) {
      monitor_.reset();
      zap_.reset();
    });
  }

  std::string Bind(const ListenerSecurity& security) {
    ListenerSecurityScope scope(router_, security);
    EXPECT_TRUE(scope.status().ok()) << scope.status();
    router_.bind("tcp://127.0.0.1:*");
    return router_.get(zmq::sockopt::last_endpoint);
  }

  // A DEALER that sends `text` to `endpoint`, with CURVE when `keys`.
  void Send(const std::string& endpoint, const std::string& text,
            const CurveClientKeys* keys = nullptr) {
    zmq::socket_t& d = dealers_.emplace_back(ctx_, zmq::socket_type::dealer);
    d.set(zmq::sockopt::linger, 0);
    if (keys != nullptr) {
      ASSERT_TRUE(ApplyCurveClient(d, *keys).ok());
    }
    d.connect(endpoint);
    d.send(zmq::buffer(text), zmq::send_flags::dontwait);
  }

  // The bodies the ROUTER receives within `wait`.
  std::vector<std::string> Received(milliseconds wait) {
    std::vector<std::string> out;
    const auto end = std::chrono::steady_clock::now() + wait;
    while (true) {
      const auto left = std::chrono::duration_cast<milliseconds>(
          end - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, left) <= 0) break;
      Frames in;
      if (ReceiveMessage(router_, in, ZMQ_DONTWAIT) == 2) {
        out.emplace_back(View(in[1]));
      }
    }
    return out;
  }

  // Waits until the monitor has reported `reason`, or 3 s.
  bool SawFailure(std::string_view reason) {
    for (int i = 0; i < 300; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (const std::string& f : failures_) {
          if (f == reason) return true;
        }
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  }

  CurveClientKeys KeysFor(const CurveKey& server_public,
                          const CurveKeyPair& own) {
    absl::StatusOr<CurveClientKeys> k =
        MakeCurveClientKeys(server_public, own.secret_key);
    EXPECT_TRUE(k.ok());
    return *k;
  }

  zmq::context_t ctx_;
  ReactorThread thread_;
  std::unique_ptr<ZapHandler> zap_;
  std::unique_ptr<HandshakeMonitor> monitor_;
  zmq::socket_t router_{ctx_, zmq::socket_type::router};
  std::vector<zmq::socket_t> dealers_;
  const CurveKeyPair server_ = NewPair();
  const CurveKeyPair client_ = NewPair();
  const CurveKeyPair stranger_ = NewPair();
  std::string plain_, curve_, plain2_;
  std::mutex mu_;
  std::vector<std::string> failures_;
};

TEST_F(HandshakeTest, EachListenerKeepsTheSecurityItWasBoundWith) {
  const CurveClientKeys keys = KeysFor(server_.public_key, client_);
  Send(plain_, "plain-1");
  Send(curve_, "curve", &keys);
  Send(plain2_, "plain-2");
  std::vector<std::string> got = Received(milliseconds(1500));
  std::sort(got.begin(), got.end());
  EXPECT_THAT(got, ElementsAre("curve", "plain-1", "plain-2"));
  // And across: CURVE on a plaintext listener, plaintext on the CURVE one.
  Send(plain_, "curve-on-plain", &keys);
  Send(curve_, "plain-on-curve");
  EXPECT_THAT(Received(milliseconds(700)), ElementsAre());
  EXPECT_TRUE(SawFailure("mechanism_mismatch"));
}

TEST_F(HandshakeTest, UnlistedKeyIsRefusedAndReported) {
  const CurveClientKeys keys = KeysFor(server_.public_key, stranger_);
  Send(curve_, "stranger", &keys);
  EXPECT_THAT(Received(milliseconds(700)), ElementsAre());
  EXPECT_TRUE(SawFailure("key_not_allowed"));
  EXPECT_GE(thread_.Invoke([&](Reactor&) { return zap_->stats().denied; }), 1u);
}

TEST_F(HandshakeTest, WrongServerKeyIsRefusedAndReported) {
  const CurveKeyPair impostor = NewPair();
  const CurveClientKeys keys = KeysFor(impostor.public_key, client_);
  Send(curve_, "wrong-server", &keys);
  EXPECT_THAT(Received(milliseconds(700)), ElementsAre());
  EXPECT_TRUE(SawFailure("decrypt_failed"));
  // It never reached the ZAP handler.
  EXPECT_EQ(thread_.Invoke([&](Reactor&) { return zap_->stats().requests; }),
            0u);
}

TEST_F(HandshakeTest, ReloadLetsANewKeyInAndKeepsOthersOut) {
  const CurveClientKeys stranger = KeysFor(server_.public_key, stranger_);
  Send(curve_, "before", &stranger);
  EXPECT_THAT(Received(milliseconds(500)), ElementsAre());
  // Closed first: libzmq would retry its handshake after the reload.
  dealers_.clear();
  thread_.Invoke(
      [&](Reactor&) { zap_->set_allowlist(ListOf({&stranger_.public_key})); });
  Send(curve_, "after", &stranger);
  const CurveClientKeys removed = KeysFor(server_.public_key, client_);
  Send(curve_, "removed", &removed);
  EXPECT_THAT(Received(milliseconds(1000)), ElementsAre("after"));
}

}  // namespace
}  // namespace zb
