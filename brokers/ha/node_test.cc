// Copyright 2026 The zbrokers Authors.
//
// zb::BinaryStarNode over real sockets: two nodes talking, and nodes
// talking to a raw PUB/SUB peer written here from the wire format alone.

#include "zbrokers/ha/node.h"

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "test/testing/socket_io.h"
#include "test/testing/wait.h"
#include "zbrokers/ha/codec.h"

namespace zb {
namespace {

using std::chrono::milliseconds;
using test::RunFor;
using test::RunUntil;

constexpr milliseconds kInterval{20};
constexpr milliseconds kExpiry{250};

struct Logged {
  std::vector<std::pair<LogLevel, std::string>> lines;
  bool Has(LogLevel level, std::string_view part) const {
    for (const auto& [l, text] : lines) {
      if (l == level && text.find(part) != std::string::npos) return true;
    }
    return false;
  }
  std::size_t Count(std::string_view part) const {
    std::size_t n = 0;
    for (const auto& [l, text] : lines) {
      n += text.find(part) != std::string::npos;
    }
    return n;
  }
};

class BinaryStarNodeTest : public ::testing::Test {
 protected:
  std::unique_ptr<BinaryStarNode> Make(HaRole role, const std::string& ours,
                                       const std::string& peer,
                                       Logged* log = nullptr) {
    absl::StatusOr<std::unique_ptr<BinaryStarNode>> n =
        BinaryStarNode::Create(reactor_, context_,
                               {.role = role,
                                .state_endpoint = ours,
                                .peer_state_endpoint = peer,
                                .heartbeat_interval = kInterval,
                                .peer_expiry = kExpiry});
    EXPECT_TRUE(n.ok()) << n.status();
    if (!n.ok()) return nullptr;
    if (log != nullptr) {
      (*n)->set_log_hook([log](LogLevel level, std::string_view line) {
        log->lines.emplace_back(level, std::string(line));
      });
    }
    return *std::move(n);
  }

  // Publishes a state as a peer would, from a raw PUB.
  void Say(zmq::socket_t& pub, HaState state, HaRole role) {
    std::vector<zmq::message_t> frames = hap::Encode({state, role});
    for (std::size_t i = 0; i < frames.size(); ++i) {
      pub.send(frames[i], i + 1 < frames.size() ? zmq::send_flags::sndmore
                                                : zmq::send_flags::none);
    }
  }

  zmq::context_t context_;
  Reactor reactor_;
};

TEST_F(BinaryStarNodeTest, APairConvergesOnThePrimaryActive) {
  Logged plog, blog;
  auto primary = Make(HaRole::kPrimary, "inproc://p", "inproc://b", &plog);
  auto backup = Make(HaRole::kBackup, "inproc://b", "inproc://p", &blog);
  ASSERT_TRUE(primary && backup);
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return primary->state() == HaState::kActive &&
           backup->state() == HaState::kPassive;
  }));
  EXPECT_TRUE(primary->AllowClientRequest());
  EXPECT_FALSE(backup->AllowClientRequest());
  // Time passes with both alive: nothing changes, and the backup keeps
  // refusing.
  RunFor(reactor_, 5 * kExpiry);
  EXPECT_EQ(backup->state(), HaState::kPassive);
  EXPECT_FALSE(backup->AllowClientRequest());
  EXPECT_EQ(backup->stats().failovers, 0u);
  EXPECT_GE(backup->stats().states_received, 5u);
  EXPECT_TRUE(plog.Has(LogLevel::kInfo, "state primary -> active"));
  EXPECT_TRUE(blog.Has(LogLevel::kInfo, "state backup -> passive"));
}

TEST_F(BinaryStarNodeTest, ThePassiveTakesOverOnlyAfterExpiryAndAClient) {
  auto primary = Make(HaRole::kPrimary, "inproc://p", "inproc://b");
  Logged blog;
  auto backup = Make(HaRole::kBackup, "inproc://b", "inproc://p", &blog);
  std::vector<std::pair<HaState, HaState>> changes;
  backup->set_state_hook(
      [&](HaState a, HaState b) { changes.emplace_back(a, b); });
  ASSERT_TRUE(
      RunUntil(reactor_, [&] { return backup->state() == HaState::kPassive; }));
  primary.reset();  // the active dies
  // Without a client, the passive stays passive however long it waits.
  RunFor(reactor_, 4 * kExpiry);
  EXPECT_EQ(backup->state(), HaState::kPassive);
  // The first client request after the expiry is served, and it is a
  // fail-over.
  EXPECT_TRUE(backup->AllowClientRequest());
  EXPECT_EQ(backup->state(), HaState::kActive);
  EXPECT_EQ(backup->stats().failovers, 1u);
  RunFor(reactor_, milliseconds(10));  // the report runs on the reactor
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[1], std::make_pair(HaState::kPassive, HaState::kActive));
  EXPECT_TRUE(blog.Has(LogLevel::kInfo, "passive -> active (fail-over"));
}

TEST_F(BinaryStarNodeTest, ARestartedPrimaryComesBackPassive) {
  auto primary = Make(HaRole::kPrimary, "inproc://p", "inproc://b");
  auto backup = Make(HaRole::kBackup, "inproc://b", "inproc://p");
  ASSERT_TRUE(
      RunUntil(reactor_, [&] { return backup->state() == HaState::kPassive; }));
  primary.reset();
  RunFor(reactor_, 2 * kExpiry);
  ASSERT_TRUE(backup->AllowClientRequest());
  primary = Make(HaRole::kPrimary, "inproc://p", "inproc://b");
  ASSERT_TRUE(RunUntil(reactor_,
                       [&] { return primary->state() == HaState::kPassive; }));
  RunFor(reactor_, 3 * kExpiry);
  EXPECT_EQ(primary->state(), HaState::kPassive);
  EXPECT_EQ(backup->state(), HaState::kActive);
  EXPECT_FALSE(primary->AllowClientRequest());
  // And the backup dying gives the service back to the primary.
  backup.reset();
  RunFor(reactor_, 2 * kExpiry);
  EXPECT_TRUE(primary->AllowClientRequest());
  EXPECT_EQ(primary->state(), HaState::kActive);
}

// A watcher that sees the log line of a change and then reads what the
// state hook publishes (the daemon's zb_ha_state gauge) must find the new
// state: the hook runs before the line is logged.  CI once read the gauge
// between the two and found the old state.
TEST_F(BinaryStarNodeTest, TheStateHookRunsBeforeTheChangeIsLogged) {
  // What each node did, in order: "hook" for a state hook call, "log" for
  // a state change's log line.
  std::vector<std::string> pseen, bseen;
  auto primary = Make(HaRole::kPrimary, "inproc://p", "inproc://b");
  auto backup = Make(HaRole::kBackup, "inproc://b", "inproc://p");
  ASSERT_TRUE(primary && backup);
  for (auto [node, seen] :
       {std::pair{primary.get(), &pseen}, std::pair{backup.get(), &bseen}}) {
    node->set_log_hook([seen](LogLevel, std::string_view line) {
      if (line.find("->") != std::string_view::npos) seen->push_back("log");
    });
    node->set_state_hook([seen](HaState, HaState) { seen->push_back("hook"); });
  }
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return primary->state() == HaState::kActive &&
           backup->state() == HaState::kPassive;
  }));
  const std::vector<std::string> one_change = {"hook", "log"};
  EXPECT_EQ(pseen, one_change);  // primary -> active
  EXPECT_EQ(bseen, one_change);  // backup -> passive
}

TEST_F(BinaryStarNodeTest, PublishesTheDocumentedWireToARawSubscriber) {
  auto primary = Make(HaRole::kPrimary, "inproc://p", "inproc://nobody");
  zmq::socket_t sub(context_, zmq::socket_type::sub);
  sub.set(zmq::sockopt::subscribe, "");
  sub.set(zmq::sockopt::rcvtimeo, 20);
  sub.connect("inproc://p");
  std::vector<std::string> got;
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    got = test::RecvAll(sub);
    return !got.empty();
  }));
  EXPECT_EQ(got, (std::vector<std::string>{"ZBHA01", "\x01", "\x01"}));
}

TEST_F(BinaryStarNodeTest, SplitBrainIsCountedAndTheBackupStepsDown) {
  // The peer is a raw PUB playing the primary.
  zmq::socket_t fake(context_, zmq::socket_type::pub);
  fake.bind("inproc://fake-primary");
  Logged log;
  auto backup =
      Make(HaRole::kBackup, "inproc://b", "inproc://fake-primary", &log);
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    Say(fake, HaState::kActive, HaRole::kPrimary);
    return backup->state() == HaState::kPassive;
  }));
  // The primary falls silent (a partition); a client arrives after expiry.
  RunFor(reactor_, 2 * kExpiry);
  ASSERT_TRUE(backup->AllowClientRequest());
  // The partition heals: the primary is active too.
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    Say(fake, HaState::kActive, HaRole::kPrimary);
    return backup->state() == HaState::kPassive;
  }));
  EXPECT_EQ(backup->stats().split_brains, 1u);
  EXPECT_TRUE(log.Has(LogLevel::kError, "split brain"));
  EXPECT_FALSE(backup->AllowClientRequest());
}

TEST_F(BinaryStarNodeTest, MalformedPeerMessagesAreCountedAndLoggedLimited) {
  // Over tcp, where libzmq enforces the SUB's ZMQ_MAXMSGSIZE.
  zmq::socket_t fake(context_, zmq::socket_type::pub);
  fake.bind("tcp://127.0.0.1:*");
  const std::string fake_ep = fake.get(zmq::sockopt::last_endpoint);
  Logged log;
  auto backup = Make(HaRole::kBackup, "tcp://127.0.0.1:*", fake_ep, &log);
  // Wait until the subscription is through, then until the last of those
  // messages is in.
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    Say(fake, HaState::kActive, HaRole::kPrimary);
    return backup->state() == HaState::kPassive;
  }));
  RunFor(reactor_, milliseconds(50));
  const std::uint64_t received = backup->stats().states_received;
  for (int i = 0; i < 200; ++i) {
    test::SendAll(fake, {"ZBHA01", "\x09", "\x01"});
    test::SendAll(fake, {"ZBHA02", "\x03", "\x01"});
    test::SendAll(fake, {"garbage"});
  }
  ASSERT_TRUE(
      RunUntil(reactor_, [&] { return backup->stats().malformed >= 600u; }));
  // A frame above the SUB's ZMQ_MAXMSGSIZE is never read: libzmq drops
  // the connection, which comes back by itself.
  test::SendAll(fake, {std::string(1 << 20, 'x'), "\x03", "\x01"});
  RunFor(reactor_, milliseconds(100));
  EXPECT_EQ(backup->stats().malformed, 600u);
  EXPECT_EQ(backup->stats().states_received, received);
  EXPECT_EQ(backup->state(), HaState::kPassive);
  const std::size_t lines = log.Count("malformed state message");
  EXPECT_GE(lines, 1u);
  EXPECT_LE(lines, 10u);  // 5 per second
  EXPECT_TRUE(log.Has(LogLevel::kWarning, "unknown state code 9"));
  // libzmq does not reconnect after that; the node reopens its SUB once
  // the peer has been silent for an expiry, and hears it again.
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    Say(fake, HaState::kActive, HaRole::kPrimary);
    return backup->stats().states_received > received;
  }));
  EXPECT_GE(backup->stats().link_reopens, 1u);
}

TEST_F(BinaryStarNodeTest, APeerOfTheSameRoleIsReportedAndNeverTakenOver) {
  Logged log;
  auto a = Make(HaRole::kPrimary, "inproc://a", "inproc://b", &log);
  auto b = Make(HaRole::kPrimary, "inproc://b", "inproc://a");
  ASSERT_TRUE(
      RunUntil(reactor_, [&] { return a->stats().role_conflicts >= 3u; }));
  RunFor(reactor_, 2 * kExpiry);
  EXPECT_FALSE(a->AllowClientRequest());
  EXPECT_FALSE(b->AllowClientRequest());
  EXPECT_EQ(a->state(), HaState::kPrimary);
  EXPECT_TRUE(log.Has(LogLevel::kError, "configured as primary too"));
}

TEST_F(BinaryStarNodeTest, AGateOnAnotherThreadReportsOnTheReactor) {
  auto primary = Make(HaRole::kPrimary, "inproc://p", "inproc://silent");
  std::vector<HaState> seen;
  primary->set_state_hook([&](HaState, HaState now) {
    EXPECT_TRUE(reactor_.on_owner_thread());
    seen.push_back(now);
  });
  RunFor(reactor_, 2 * kExpiry);
  bool served = false;
  std::thread t([&] { served = primary->AllowClientRequest(); });
  t.join();
  EXPECT_TRUE(served);
  ASSERT_TRUE(RunUntil(reactor_, [&] { return !seen.empty(); }));
  EXPECT_EQ(seen, std::vector<HaState>{HaState::kActive});
}

TEST_F(BinaryStarNodeTest, CreateRefusesBadOptionsNamingTheMember) {
  struct Case {
    BinaryStarNode::Options options;
    std::string member;
  };
  const std::vector<Case> cases = {
      {{.state_endpoint = "", .peer_state_endpoint = "inproc://x"},
       "state_endpoint"},
      {{.state_endpoint = "inproc://x", .peer_state_endpoint = ""},
       "peer_state_endpoint"},
      {{.state_endpoint = "tcp://127.0.0.1:99999",
        .peer_state_endpoint = "inproc://x"},
       "state_endpoint"},
      {{.state_endpoint = "inproc://x", .peer_state_endpoint = "inproc://x"},
       "peer_state_endpoint"},
      {{.state_endpoint = "inproc://x",
        .peer_state_endpoint = "inproc://y",
        .heartbeat_interval = milliseconds(0)},
       "heartbeat_interval"},
      {{.state_endpoint = "inproc://x",
        .peer_state_endpoint = "inproc://y",
        .heartbeat_interval = milliseconds(100),
        .peer_expiry = milliseconds(100)},
       "peer_expiry"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::unique_ptr<BinaryStarNode>> n =
        BinaryStarNode::Create(reactor_, context_, c.options);
    ASSERT_FALSE(n.ok()) << c.member;
    EXPECT_EQ(n.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StartsWith(n.status().message(), c.member + ":"))
        << n.status().message();
  }
  // An endpoint in use is an error naming it.
  auto first = Make(HaRole::kPrimary, "inproc://used", "inproc://y");
  absl::StatusOr<std::unique_ptr<BinaryStarNode>> second =
      BinaryStarNode::Create(reactor_, context_,
                             {.state_endpoint = "inproc://used",
                              .peer_state_endpoint = "inproc://z"});
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("inproc://used"), std::string::npos);
}

}  // namespace
}  // namespace zb
