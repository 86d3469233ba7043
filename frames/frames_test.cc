// Copyright 2026 The zbrokers Authors.

#include "zbrokers/frames/frames.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

namespace zb {
namespace {

using testing::ElementsAre;

// Receives one whole multipart message, waiting at most 10 s per frame.
std::vector<std::string> RecvAll(zmq::socket_t& s) {
  s.set(zmq::sockopt::rcvtimeo, 10'000);
  std::vector<std::string> out;
  zmq::message_t m;
  do {
    if (!s.recv(m)) {
      ADD_FAILURE() << "timed out";
      break;
    }
    out.emplace_back(View(m));
  } while (m.more());
  return out;
}

class FramesTest : public testing::Test {
 protected:
  zmq::socket_t Socket(zmq::socket_type type) {
    zmq::socket_t s(ctx_, type);
    s.set(zmq::sockopt::linger, 0);
    return s;
  }
  // A ROUTER with ZMQ_ROUTER_MANDATORY bound to `endpoint`.
  zmq::socket_t MandatoryRouter(const std::string& endpoint) {
    zmq::socket_t router = Socket(zmq::socket_type::router);
    router.set(zmq::sockopt::router_mandatory, 1);
    router.bind(endpoint);
    return router;
  }
  // A DEALER with routing id `id`, connected to `router` at `endpoint`, and
  // known to it (it sent "hello", which the router received).
  zmq::socket_t KnownDealer(zmq::socket_t& router, const std::string& endpoint,
                            const std::string& id) {
    zmq::socket_t dealer = Socket(zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::routing_id, id);
    dealer.connect(endpoint);
    Frames hello = MakeFrames({"hello"});
    EXPECT_TRUE(SendFrames(dealer, hello).ok());
    EXPECT_THAT(RecvAll(router), ElementsAre(id, "hello"));
    return dealer;
  }
  zmq::context_t ctx_;
};

TEST(FramesHelpersTest, MakeViewAndCopyBack) {
  const std::string binary("a\0b", 3);
  Frames frames = MakeFrames({"", "hello", binary});
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].size(), 0u);
  EXPECT_EQ(View(frames[1]), "hello");
  EXPECT_EQ(View(frames[2]), binary);
  EXPECT_THAT(FramesToStrings(frames), ElementsAre("", "hello", binary));
  EXPECT_EQ(View(Frame("x")), "x");
}

TEST_F(FramesTest, SendFramesMovesEveryFrameIntoOneMultipartMessage) {
  zmq::socket_t a = Socket(zmq::socket_type::pair);
  zmq::socket_t b = Socket(zmq::socket_type::pair);
  a.bind("inproc://frames-send");
  b.connect("inproc://frames-send");
  Frames frames = MakeFrames({"one", "", std::string(1000, 'z')});
  ASSERT_TRUE(SendFrames(a, frames).ok());
  for (const auto& f : frames) EXPECT_EQ(f.size(), 0u);  // moved out
  EXPECT_THAT(RecvAll(b), ElementsAre("one", "", std::string(1000, 'z')));
}

TEST_F(FramesTest, SendFramesWithHeadAndBody) {
  zmq::socket_t a = Socket(zmq::socket_type::pair);
  zmq::socket_t b = Socket(zmq::socket_type::pair);
  a.bind("inproc://frames-head-body");
  b.connect("inproc://frames-head-body");
  Frames head = MakeFrames({"id", ""});
  Frames body = MakeFrames({"x", "y"});
  ASSERT_TRUE(SendFrames(a, head, body).ok());
  EXPECT_THAT(RecvAll(b), ElementsAre("id", "", "x", "y"));
  // An empty head or body is fine as long as something is sent.
  Frames only = MakeFrames({"solo"});
  ASSERT_TRUE(SendFrames(a, {}, only).ok());
  EXPECT_THAT(RecvAll(b), ElementsAre("solo"));
}

TEST_F(FramesTest, EmptyMessageIsInvalid) {
  zmq::socket_t a = Socket(zmq::socket_type::pair);
  EXPECT_TRUE(absl::IsInvalidArgument(SendFrames(a, {})));
}

TEST_F(FramesTest, UnknownRouterPeerIsUnavailableWithRouterMandatory) {
  zmq::socket_t router = MandatoryRouter("inproc://frames-router");
  // Learn the known peer first, so the router has a real routing table.
  zmq::socket_t dealer = KnownDealer(router, "inproc://frames-router", "known");

  Frames lost = MakeFrames({"nobody", "payload"});
  const absl::Status status = SendFrames(router, lost);
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  // Nothing was sent, so the frames are still there.
  EXPECT_EQ(View(lost[1]), "payload");

  Frames reply = MakeFrames({"known", "hi"});
  ASSERT_TRUE(SendFrames(router, reply).ok());
  EXPECT_THAT(RecvAll(dealer), ElementsAre("hi"));
}

TEST_F(FramesTest, ReceiveMessageFillsAReusedBuffer) {
  zmq::socket_t a = Socket(zmq::socket_type::pair);
  zmq::socket_t b = Socket(zmq::socket_type::pair);
  a.bind("inproc://frames-receive");
  b.connect("inproc://frames-receive");
  Frames buffer;
  EXPECT_EQ(ReceiveMessage(b, buffer, ZMQ_DONTWAIT), -1);
  EXPECT_EQ(errno, EAGAIN);
  Frames three = MakeFrames({"one", "", "three"});
  ASSERT_TRUE(SendFrames(a, three).ok());
  Frames one = MakeFrames({"solo"});
  ASSERT_TRUE(SendFrames(a, one).ok());
  ASSERT_EQ(ReceiveMessage(b, buffer, 0), 3);
  EXPECT_THAT(FramesToStrings(buffer), ElementsAre("one", "", "three"));
  // A shorter message reuses the buffer; the elements past it are left.
  ASSERT_EQ(ReceiveMessage(b, buffer, 0), 1);
  EXPECT_EQ(buffer.size(), 3u);
  EXPECT_EQ(View(buffer[0]), "solo");
}

TEST_F(FramesTest, SendRoutedCopiesOrMovesTheBodyToOnePeer) {
  zmq::socket_t router = MandatoryRouter("inproc://frames-routed");
  zmq::socket_t dealer = KnownDealer(router, "inproc://frames-routed", "peer");

  zmq::message_t identity = Frame("peer");
  const std::string big(1000, 'b');  // shared, not copied, by zmq_msg_copy
  Frames body = MakeFrames({"tag", "", big});
  // Copies: the caller keeps identity and body, and can send them again.
  ASSERT_TRUE(SendRouted(router, identity, body, false).ok());
  ASSERT_TRUE(SendRouted(router, identity, body, false).ok());
  EXPECT_EQ(View(identity), "peer");
  EXPECT_THAT(FramesToStrings(body), ElementsAre("tag", "", big));
  EXPECT_THAT(RecvAll(dealer), ElementsAre("", "tag", "", big));
  EXPECT_THAT(RecvAll(dealer), ElementsAre("", "tag", "", big));
  // Moved: the last send of a fan-out takes the frames.
  ASSERT_TRUE(SendRouted(router, identity, body, true).ok());
  for (const auto& f : body) EXPECT_EQ(f.size(), 0u);
  EXPECT_THAT(RecvAll(dealer), ElementsAre("", "tag", "", big));
  // An empty body sends the identity and the delimiter only.
  ASSERT_TRUE(SendRouted(router, identity, {}, true).ok());
  EXPECT_THAT(RecvAll(dealer), ElementsAre(""));
}

TEST_F(FramesTest, SendRoutedToAnUnknownPeerSendsNothingAndKeepsTheBody) {
  zmq::socket_t router = MandatoryRouter("inproc://frames-routed-unknown");
  zmq::message_t identity = Frame("nobody");
  Frames body = MakeFrames({"payload"});
  for (bool move : {false, true}) {
    const absl::Status status = SendRouted(router, identity, body, move);
    EXPECT_TRUE(absl::IsUnavailable(status)) << status;
    EXPECT_EQ(View(body[0]), "payload");
  }
}

TEST_F(FramesTest, NoPeerToSendToIsResourceExhausted) {
  // A DEALER without any connection has no pipe to queue on: EAGAIN.
  zmq::socket_t dealer = Socket(zmq::socket_type::dealer);
  Frames frames = MakeFrames({"x"});
  const absl::Status status = SendFrames(dealer, frames);
  EXPECT_TRUE(absl::IsResourceExhausted(status)) << status;
  EXPECT_EQ(View(frames[0]), "x");
}

TEST_F(FramesTest, OtherErrorsAreInternalAndNamed) {
  // A REP socket cannot send before it has received: EFSM.
  zmq::socket_t rep = Socket(zmq::socket_type::rep);
  Frames frames = MakeFrames({"x"});
  const absl::Status status = SendFrames(rep, frames);
  EXPECT_TRUE(absl::IsInternal(status)) << status;
  EXPECT_THAT(std::string(status.message()), testing::HasSubstr("frame 0"));
}

}  // namespace
}  // namespace zb
