// Copyright 2026 The zbrokers Authors.

#include "zbrokers/majordomo/codec.h"

#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zb::mdp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Frames F(std::initializer_list<std::string_view> parts) {
  return MakeFrames(parts);
}

const std::string kReadyByte(1, '\x01');
const std::string kRequestByte(1, '\x02');
const std::string kReplyByte(1, '\x03');
const std::string kHeartbeatByte(1, '\x04');
const std::string kDisconnectByte(1, '\x05');

// --- Well-formed messages ----------------------------------------------------

TEST(MdpClientTest, ParsesRequestWithOneBodyFrame) {
  Frames f = F({"", "MDPC01", "echo", "hello"});
  auto m = ParseClient(f);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->service, "echo");
  ASSERT_EQ(m->body.size(), 1u);
  EXPECT_EQ(View(m->body[0]), "hello");
  EXPECT_EQ(m->body.data(), &f[3]);  // a view, not a copy
}

TEST(MdpClientTest, ParsesMultiFrameBodyAndEmptyBodyFrames) {
  Frames f = F({"", "MDPC01", "svc", "a", "", "c"});
  auto m = ParseClient(f);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(FramesToStrings(m->body), ElementsAre("a", "", "c"));
}

TEST(MdpClientTest, ParsesWithoutDelimiterForReqSockets) {
  Frames f = F({"MDPC01", "svc", "x"});
  auto m = ParseClient(f, Delimiter::kNoDelimiter);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->service, "svc");
  EXPECT_THAT(FramesToStrings(m->body), ElementsAre("x"));
  // With the delimiter expected, the same frames are malformed.
  EXPECT_FALSE(ParseClient(f).ok());
}

TEST(MdpClientTest, ClassifiesByTag) {
  Frames c = F({"", "MDPC01", "s", "b"});
  Frames w = F({"", "MDPW01", kHeartbeatByte});
  EXPECT_EQ(*ClassifyMessage(c), Protocol::kClient);
  EXPECT_EQ(*ClassifyMessage(w), Protocol::kWorker);
}

TEST(MdpWorkerTest, ParsesReady) {
  Frames f = F({"", "MDPW01", kReadyByte, "echo"});
  auto m = ParseWorker(f);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->command, Command::kReady);
  EXPECT_EQ(m->service, "echo");
  EXPECT_EQ(m->address, nullptr);
  EXPECT_TRUE(m->body.empty());
}

TEST(MdpWorkerTest, ParsesRequestAndReply) {
  for (const std::string& byte : {kRequestByte, kReplyByte}) {
    Frames f = F({"", "MDPW01", byte, "client-id", "", "b1", "b2"});
    auto m = ParseWorker(f);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->command,
              byte == kRequestByte ? Command::kRequest : Command::kReply);
    ASSERT_NE(m->address, nullptr);
    EXPECT_EQ(m->address, &f[3]);
    EXPECT_EQ(View(*m->address), "client-id");
    EXPECT_THAT(FramesToStrings(m->body), ElementsAre("b1", "b2"));
  }
}

TEST(MdpWorkerTest, ParsesHeartbeatAndDisconnect) {
  Frames h = F({"", "MDPW01", kHeartbeatByte});
  Frames d = F({"", "MDPW01", kDisconnectByte});
  EXPECT_EQ(ParseWorker(h)->command, Command::kHeartbeat);
  EXPECT_EQ(ParseWorker(d)->command, Command::kDisconnect);
}

TEST(MdpTest, MmiNamespace) {
  EXPECT_TRUE(IsMmiService("mmi.service"));
  EXPECT_TRUE(IsMmiService("mmi."));
  EXPECT_FALSE(IsMmiService("mmi"));
  EXPECT_FALSE(IsMmiService("xmmi.service"));
  EXPECT_FALSE(IsMmiService(""));
}

TEST(MdpTest, CommandNames) {
  EXPECT_EQ(CommandName(Command::kReady), "READY");
  EXPECT_EQ(CommandName(Command::kDisconnect), "DISCONNECT");
  EXPECT_EQ(CommandName(static_cast<Command>(0x42)), "UNKNOWN");
}

// --- Malformed messages: each with the reason it gives ---------------------

struct BadCase {
  const char* name;
  std::vector<std::string> frames;
  const char* reason;  // substring of the error message
};

std::vector<BadCase> BadClientCases() {
  return {
      {"no frames", {}, "no frames"},
      {"first frame not empty",
       {"x", "MDPC01", "s", "b"},
       "missing empty delimiter"},
      {"tag only", {""}, "missing protocol tag"},
      {"wrong tag", {"", "MDPC02", "s", "b"}, "not MDPC01"},
      {"worker tag", {"", "MDPW01", "s", "b"}, "not MDPC01"},
      {"no service", {"", "MDPC01"}, "no service"},
      {"empty service", {"", "MDPC01", "", "b"}, "empty service"},
      {"no body", {"", "MDPC01", "s"}, "no body"},
  };
}

TEST(MdpClientTest, RejectsEveryMalformedForm) {
  for (const BadCase& c : BadClientCases()) {
    Frames f;
    for (const auto& s : c.frames) f.push_back(Frame(s));
    auto m = ParseClient(f);
    ASSERT_FALSE(m.ok()) << c.name;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(m.status().message(), HasSubstr(c.reason)) << c.name;
  }
}

std::vector<BadCase> BadWorkerCases() {
  const std::string two_bytes = std::string("\x01\x01", 2);
  return {
      {"no frames", {}, "no frames"},
      {"first frame not empty",
       {"x", "MDPW01", kHeartbeatByte},
       "missing empty delimiter"},
      {"tag only", {""}, "missing protocol tag"},
      {"wrong tag", {"", "MDPW02", kHeartbeatByte}, "not MDPW01"},
      {"client tag", {"", "MDPC01", kHeartbeatByte}, "not MDPW01"},
      {"no command", {"", "MDPW01"}, "no command"},
      {"empty command", {"", "MDPW01", ""}, "0 bytes"},
      {"two-byte command", {"", "MDPW01", two_bytes}, "2 bytes"},
      {"command 0x00",
       {"", "MDPW01", std::string(1, '\0')},
       "unknown command 0x00"},
      {"command 0x06", {"", "MDPW01", "\x06"}, "unknown command 0x06"},
      {"command 0xff", {"", "MDPW01", "\xff"}, "unknown command 0xff"},
      {"READY without service",
       {"", "MDPW01", kReadyByte},
       "READY has 3 frames"},
      {"READY with extra frame",
       {"", "MDPW01", kReadyByte, "s", "x"},
       "READY has 5 frames"},
      {"READY empty service", {"", "MDPW01", kReadyByte, ""}, "empty service"},
      {"REQUEST no address",
       {"", "MDPW01", kRequestByte},
       "REQUEST has no client address"},
      {"REQUEST empty address",
       {"", "MDPW01", kRequestByte, "", "", "b"},
       "empty client address"},
      {"REQUEST no delimiter",
       {"", "MDPW01", kRequestByte, "c"},
       "no empty delimiter"},
      {"REQUEST delimiter not empty",
       {"", "MDPW01", kRequestByte, "c", "x", "b"},
       "is not empty"},
      {"REQUEST no body",
       {"", "MDPW01", kRequestByte, "c", ""},
       "REQUEST has no body"},
      {"REPLY no address",
       {"", "MDPW01", kReplyByte},
       "REPLY has no client address"},
      {"REPLY two address frames",
       {"", "MDPW01", kReplyByte, "c", "c2", "", "b"},
       "exactly one address frame"},
      {"REPLY no body",
       {"", "MDPW01", kReplyByte, "c", ""},
       "REPLY has no body"},
      {"HEARTBEAT with extra frame",
       {"", "MDPW01", kHeartbeatByte, "x"},
       "HEARTBEAT has 4 frames"},
      {"DISCONNECT with extra frame",
       {"", "MDPW01", kDisconnectByte, ""},
       "DISCONNECT has 4 frames"},
  };
}

TEST(MdpWorkerTest, RejectsEveryMalformedForm) {
  for (const BadCase& c : BadWorkerCases()) {
    Frames f;
    for (const auto& s : c.frames) f.push_back(Frame(s));
    auto m = ParseWorker(f);
    ASSERT_FALSE(m.ok()) << c.name;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(m.status().message(), HasSubstr(c.reason))
        << c.name << ": " << m.status();
  }
}

TEST(MdpTest, ClassifyRejectsShortAndUntagged) {
  Frames one = F({""});
  Frames not_empty = F({"x", "MDPC01"});
  Frames bad_tag = F({"", "HTTP/1.1"});
  EXPECT_THAT(ClassifyMessage(one).status().message(), HasSubstr("1 frame"));
  EXPECT_THAT(ClassifyMessage(not_empty).status().message(),
              HasSubstr("missing empty delimiter"));
  EXPECT_THAT(ClassifyMessage(bad_tag).status().message(),
              HasSubstr("unknown protocol tag"));
}

// --- Encoding and round trips ---------------------------------------------

TEST(MdpEncodeTest, ClientRequestLayout) {
  Frames body = F({"a", "b"});
  Frames out;
  AppendClientRequest("svc", body, &out);
  EXPECT_THAT(FramesToStrings(out), ElementsAre("", "MDPC01", "svc", "a", "b"));
  Frames req;
  Frames body2 = F({"a"});
  AppendClientRequest("svc", body2, &req, Delimiter::kNoDelimiter);
  EXPECT_THAT(FramesToStrings(req), ElementsAre("MDPC01", "svc", "a"));
}

TEST(MdpEncodeTest, WorkerLayouts) {
  Frames out;
  AppendReady("echo", &out);
  EXPECT_THAT(FramesToStrings(out),
              ElementsAre("", "MDPW01", kReadyByte, "echo"));
  out.clear();
  Frames body = F({"x"});
  AppendRequest(Frame("cid"), body, &out);
  EXPECT_THAT(FramesToStrings(out),
              ElementsAre("", "MDPW01", kRequestByte, "cid", "", "x"));
  out.clear();
  body = F({"y", "z"});
  AppendReply(Frame("cid"), body, &out);
  EXPECT_THAT(FramesToStrings(out),
              ElementsAre("", "MDPW01", kReplyByte, "cid", "", "y", "z"));
  out.clear();
  AppendHeartbeat(&out);
  EXPECT_THAT(FramesToStrings(out), ElementsAre("", "MDPW01", kHeartbeatByte));
  out.clear();
  AppendDisconnect(&out);
  EXPECT_THAT(FramesToStrings(out), ElementsAre("", "MDPW01", kDisconnectByte));
}

TEST(MdpEncodeTest, BodyFramesAreMovedNotCopied) {
  // Larger than libzmq's inline ("very small message") limit, so the frame
  // owns a heap buffer whose address must survive the move.
  const std::string big(4096, 'q');
  Frames body;
  body.push_back(Frame(big));
  const void* data = body[0].data();
  Frames out;
  AppendRequest(Frame("c"), body, &out);
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[5].data(), data);
  EXPECT_EQ(body[0].size(), 0u);  // moved from

  Frames client;
  AppendClientReply("s", out, &client);  // any span works as a body
  auto parsed = ParseClient(client);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->body[5].data(), data);
}

TEST(MdpEncodeTest, RoundTripEveryWorkerCommand) {
  std::vector<Frames> messages;
  messages.push_back(F({"", "MDPW01", kReadyByte, "svc"}));
  messages.push_back(F({"", "MDPW01", kRequestByte, "cid", "", "a", "", "b"}));
  messages.push_back(F({"", "MDPW01", kReplyByte, "cid", "", "r"}));
  messages.push_back(F({"", "MDPW01", kHeartbeatByte}));
  messages.push_back(F({"", "MDPW01", kDisconnectByte}));
  for (Frames& m : messages) {
    const std::vector<std::string> before = FramesToStrings(m);
    auto parsed = ParseWorker(m);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    Frames out;
    AppendWorker(*parsed, &out);
    EXPECT_EQ(FramesToStrings(out), before);
  }
}

TEST(MdpEncodeTest, RoundTripClient) {
  Frames body = F({"1", "2", "3"});
  Frames out;
  AppendClientRequest("a.service", body, &out);
  auto m = ParseClient(out);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->service, "a.service");
  EXPECT_THAT(FramesToStrings(m->body), ElementsAre("1", "2", "3"));
  Frames again;
  AppendClientReply(m->service, m->body, &again);
  EXPECT_THAT(FramesToStrings(again),
              ElementsAre("", "MDPC01", "a.service", "1", "2", "3"));
}

// --- Request tags (zbrokers extension) ------------------------------------

TEST(MdpTaggedClientTest, ParsesAndClassifies) {
  Frames f = F({"", "zb.tag.MDPC01", "echo", "tag-1", "a", "b"});
  EXPECT_EQ(*ClassifyMessage(f), Protocol::kTaggedClient);
  auto m = ParseTaggedClient(f);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->service, "echo");
  ASSERT_NE(m->tag, nullptr);
  EXPECT_EQ(m->tag, &f[3]);  // a view, not a copy
  EXPECT_THAT(FramesToStrings(m->body), ElementsAre("a", "b"));
  // Plain RFC 7 parsing never takes a tagged message, nor the reverse.
  EXPECT_FALSE(ParseClient(f).ok());
  Frames plain = F({"", "MDPC01", "echo", "tag-1", "a"});
  EXPECT_FALSE(ParseTaggedClient(plain).ok());
  EXPECT_EQ(ParseClient(plain)->tag, nullptr);
  // Without the delimiter, as a REQ socket would hand it over.
  Frames req = F({"zb.tag.MDPC01", "echo", "t", "x"});
  ASSERT_TRUE(ParseTaggedClient(req, Delimiter::kNoDelimiter).ok());
}

TEST(MdpTaggedClientTest, RejectsMalformedForms) {
  struct Case {
    Frames frames;
    std::string_view why;
  };
  const std::string big(kMaxTagSize + 1, 't');
  std::vector<Case> cases;
  cases.push_back({F({"x", "zb.tag.MDPC01", "s", "t", "b"}), "not empty"});
  cases.push_back({F({""}), "missing protocol tag"});
  cases.push_back({F({"", "zb.tag.MDPC02", "s", "t", "b"}), "zb.tag.MDPC01"});
  cases.push_back({F({"", "zb.tag.MDPC01"}), "no service"});
  cases.push_back({F({"", "zb.tag.MDPC01", "", "t", "b"}), "empty service"});
  cases.push_back({F({"", "zb.tag.MDPC01", "s"}), "no tag"});
  cases.push_back({F({"", "zb.tag.MDPC01", "s", "", "b"}), "0 bytes"});
  cases.push_back({F({"", "zb.tag.MDPC01", "s", big, "b"}), "33 bytes"});
  cases.push_back({F({"", "zb.tag.MDPC01", "s", "t"}), "no body"});
  for (Case& c : cases) {
    auto m = ParseTaggedClient(c.frames);
    ASSERT_FALSE(m.ok()) << c.why;
    EXPECT_THAT(std::string(m.status().message()), HasSubstr(c.why));
  }
  // The largest tag is fine.
  Frames ok = F({"", "zb.tag.MDPC01", "s", std::string(kMaxTagSize, 't'), "b"});
  EXPECT_TRUE(ParseTaggedClient(ok).ok());
}

TEST(MdpTaggedClientTest, EncodeLayoutsAndRoundTrip) {
  Frames body = F({"1", "2"});
  Frames out;
  AppendTaggedClientRequest("svc", Frame("id"), body, &out);
  EXPECT_THAT(FramesToStrings(out),
              ElementsAre("", "zb.tag.MDPC01", "svc", "id", "1", "2"));
  auto m = ParseTaggedClient(out);
  ASSERT_TRUE(m.ok());
  Frames again;
  AppendTaggedClientReply(m->service, std::move(*m->tag), m->body, &again);
  EXPECT_THAT(FramesToStrings(again),
              ElementsAre("", "zb.tag.MDPC01", "svc", "id", "1", "2"));
  EXPECT_TRUE(IsMmiService(kMmiTagService));
}

// Random frame lists built from protocol-shaped pieces: the parsers must
// never crash, and whatever parses must re-encode to the same frames.
TEST(MdpFuzzTest, RandomMessagesNeverCrashAndRoundTrip) {
  std::mt19937 rng(20260101);  // fixed seed: deterministic
  const std::vector<std::string> pieces = {"",
                                           "MDPC01",
                                           "MDPW01",
                                           "MDPC0",
                                           "MDPW011",
                                           kReadyByte,
                                           kRequestByte,
                                           kReplyByte,
                                           kHeartbeatByte,
                                           kDisconnectByte,
                                           std::string(1, '\0'),
                                           "\x06",
                                           "\xff",
                                           "svc",
                                           "mmi.service",
                                           std::string(100, 'x'),
                                           "client-address"};
  int client_ok = 0, worker_ok = 0;
  for (int i = 0; i < 50'000; ++i) {
    Frames f;
    const int n = static_cast<int>(rng() % 9);
    // Half the time start like a real message, so deep paths get exercised.
    if (rng() % 2 == 0 && n > 1) {
      f.push_back(Frame(""));
      f.push_back(Frame(rng() % 2 ? "MDPC01" : "MDPW01"));
    }
    while (static_cast<int>(f.size()) < n) {
      f.push_back(Frame(pieces[rng() % pieces.size()]));
    }
    const std::vector<std::string> before = FramesToStrings(f);
    (void)ClassifyMessage(f);
    if (auto c = ParseClient(f); c.ok()) {
      ++client_ok;
      EXPECT_FALSE(c->service.empty());
      EXPECT_FALSE(c->body.empty());
      Frames out;
      AppendClientRequest(std::string(c->service), c->body, &out);
      EXPECT_EQ(FramesToStrings(out), before);
      continue;  // the body was moved out
    }
    if (auto w = ParseWorker(f); w.ok()) {
      ++worker_ok;
      Frames out;
      AppendWorker(*w, &out);
      EXPECT_EQ(FramesToStrings(out), before);
    }
  }
  // The generator must actually reach the success paths.
  EXPECT_GT(client_ok, 100);
  EXPECT_GT(worker_ok, 100);
}

}  // namespace
}  // namespace zb::mdp
