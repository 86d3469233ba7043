// Copyright 2026 The zbrokers Authors.

#include "zbrokers/consensus/codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <variant>
#include <vector>

namespace zb::ccp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Seq(std::uint64_t sequence, std::uint32_t client) {
  const auto bytes = EncodeSequenceId({sequence, client});
  return std::string(bytes.data(), bytes.size());
}

std::string Byte(MessageType t) { return std::string(1, static_cast<char>(t)); }

// Frames from strings (MakeFrames takes an initializer_list only).
Frames FramesOf(const std::vector<std::string>& parts) {
  Frames out;
  for (const auto& p : parts) out.push_back(Frame(p));
  return out;
}

absl::Status ParseError(const std::vector<std::string>& parts,
                        const ParseLimits& limits = {}) {
  Frames f = FramesOf(parts);
  return ParseHeader(f, limits).status();
}

const std::string kReadyB = Byte(MessageType::kReady);
const std::string kHeartbeatB = Byte(MessageType::kHeartbeat);
const std::string kRequestB = Byte(MessageType::kRequest);
const std::string kSuccessB = Byte(MessageType::kReplySuccess);
const std::string kFailureB = Byte(MessageType::kReplyFailure);
const std::string kDisconnectB = Byte(MessageType::kDisconnect);
const std::string kPingB = Byte(MessageType::kPing);
const std::string kTagS(kTag);
const std::string kInterval1000("\x00\x00\x03\xe8", 4);

TEST(SequenceIdTest, EncodesThreeBigEndianWords) {
  const auto bytes = EncodeSequenceId({0x0102030405060708ull, 0x0a0b0c0du});
  EXPECT_EQ(
      std::string(bytes.data(), bytes.size()),
      std::string("\x01\x02\x03\x04\x05\x06\x07\x08\x0a\x0b\x0c\x0d", 12));
}

TEST(SequenceIdTest, RoundTrips) {
  for (SequenceId id : {SequenceId{0, 0}, SequenceId{1, 42},
                        SequenceId{~0ull, ~0u}, SequenceId{1ull << 32, 7}}) {
    const auto bytes = EncodeSequenceId(id);
    auto back = DecodeSequenceId(std::string_view(bytes.data(), bytes.size()));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, id);
  }
}

TEST(SequenceIdTest, RejectsWrongLength) {
  EXPECT_THAT(DecodeSequenceId("short").status().message(),
              HasSubstr("5 bytes, expected 12"));
  EXPECT_FALSE(DecodeSequenceId(std::string(13, 'x')).ok());
}

TEST(CcpParseTest, Ready) {
  Frames f = FramesOf({kTagS, kReadyB, "echo", kInterval1000, "\x05"});
  auto h = ParseHeader(f);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->type, MessageType::kReady);
  EXPECT_EQ(h->service, "echo");
  EXPECT_EQ(h->heartbeat_interval_ms, 1000u);
  EXPECT_EQ(h->heartbeat_retries, 5);
  EXPECT_EQ(h->payload_index, f.size());
}

TEST(CcpParseTest, HeartbeatAndPing) {
  Frames hb = FramesOf({kTagS, kHeartbeatB});
  auto h = ParseHeader(hb);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->type, MessageType::kHeartbeat);
  EXPECT_TRUE(h->service.empty());

  Frames ping = FramesOf({kTagS, kPingB});
  h = ParseHeader(ping);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->type, MessageType::kPing);
}

TEST(CcpParseTest, Disconnect) {
  Frames f = FramesOf({kTagS, kDisconnectB, "svc"});
  auto h = ParseHeader(f);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->type, MessageType::kDisconnect);
  EXPECT_EQ(h->service, "svc");
}

TEST(CcpParseTest, RequestWithPayload) {
  Frames f = FramesOf({kTagS, kRequestB, "svc", Seq(9, 77), "a", "bb"});
  auto h = ParseHeader(f);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->type, MessageType::kRequest);
  EXPECT_EQ(h->service, "svc");
  EXPECT_EQ(h->sequence, (SequenceId{9, 77}));
  EXPECT_EQ(h->payload_index, kPayloadIndex);
  // The header views the caller's frames; nothing was copied.
  EXPECT_EQ(h->service.data(), f[kServiceIndex].data());
}

TEST(CcpParseTest, RepliesMayHaveNoPayload) {
  for (const std::string& type : {kSuccessB, kFailureB}) {
    Frames f = FramesOf({kTagS, type, "svc", Seq(1, 2)});
    auto h = ParseHeader(f);
    ASSERT_TRUE(h.ok()) << h.status();
    EXPECT_EQ(h->payload_index, f.size());
  }
}

TEST(CcpParseTest, WrongTag) {
  EXPECT_THAT(ParseError({"MDPC01", kPingB}).message(),
              HasSubstr("wrong protocol tag \"MDPC01\""));
  EXPECT_THAT(ParseError({"CCp10", kPingB}).message(),
              HasSubstr("wrong protocol tag"));
  EXPECT_THAT(ParseError({std::string("\x01\xff", 2), kPingB}).message(),
              HasSubstr("\\x01\\xff"));
}

TEST(CcpParseTest, EmptyAndMissingType) {
  Frames none;
  EXPECT_THAT(ParseHeader(none).status().message(), HasSubstr("empty message"));
  EXPECT_THAT(ParseError({kTagS}).message(), HasSubstr("missing message type"));
}

TEST(CcpParseTest, BadTypeFrame) {
  EXPECT_THAT(ParseError({kTagS, ""}).message(),
              HasSubstr("message type frame is 0 bytes"));
  EXPECT_THAT(ParseError({kTagS, "\x01\x01"}).message(),
              HasSubstr("message type frame is 2 bytes"));
  EXPECT_THAT(ParseError({kTagS, std::string(1, '\0')}).message(),
              HasSubstr("unknown message type 0x00"));
  EXPECT_THAT(ParseError({kTagS, "\x08"}).message(),
              HasSubstr("unknown message type 0x08"));
  EXPECT_THAT(ParseError({kTagS, "\xff"}).message(),
              HasSubstr("unknown message type 0xff"));
}

TEST(CcpParseTest, TrailingFrames) {
  EXPECT_THAT(ParseError({kTagS, kHeartbeatB, "x"}).message(),
              HasSubstr("HEARTBEAT: 3 frames, expected 2"));
  EXPECT_THAT(ParseError({kTagS, kPingB, ""}).message(),
              HasSubstr("PING: 3 frames, expected 2"));
  EXPECT_THAT(ParseError({kTagS, kDisconnectB, "s", "x"}).message(),
              HasSubstr("DISCONNECT: 4 frames, expected 3"));
  EXPECT_THAT(
      ParseError({kTagS, kReadyB, "s", kInterval1000, "\x01", "x"}).message(),
      HasSubstr("READY: 6 frames, expected 5"));
}

TEST(CcpParseTest, ReadyMissingFrames) {
  EXPECT_THAT(ParseError({kTagS, kReadyB}).message(),
              HasSubstr("READY: missing service"));
  EXPECT_THAT(ParseError({kTagS, kReadyB, "s"}).message(),
              HasSubstr("READY: missing heartbeat interval"));
  EXPECT_THAT(ParseError({kTagS, kReadyB, "s", kInterval1000}).message(),
              HasSubstr("READY: missing heartbeat retries"));
}

TEST(CcpParseTest, ReadyBadHeartbeatFields) {
  EXPECT_THAT(ParseError({kTagS, kReadyB, "s", "\x01\x02", "\x01"}).message(),
              HasSubstr("heartbeat interval is 2 bytes, expected 4"));
  EXPECT_THAT(
      ParseError({kTagS, kReadyB, "s", std::string(4, '\0'), "\x01"}).message(),
      HasSubstr("heartbeat interval is 0 ms"));
  EXPECT_THAT(ParseError({kTagS, kReadyB, "s", kInterval1000, ""}).message(),
              HasSubstr("heartbeat retries is 0 bytes, expected 1"));
  EXPECT_THAT(
      ParseError({kTagS, kReadyB, "s", kInterval1000, "\x01\x01"}).message(),
      HasSubstr("heartbeat retries is 2 bytes"));
  EXPECT_THAT(
      ParseError({kTagS, kReadyB, "s", kInterval1000, std::string(1, '\0')})
          .message(),
      HasSubstr("heartbeat retries is 0"));
}

TEST(CcpParseTest, ServiceNameRules) {
  EXPECT_THAT(ParseError({kTagS, kDisconnectB, ""}).message(),
              HasSubstr("DISCONNECT: empty service name"));
  EXPECT_THAT(ParseError({kTagS, kRequestB, "", Seq(1, 1), ""}).message(),
              HasSubstr("REQUEST: empty service name"));
  EXPECT_THAT(
      ParseError({kTagS, kDisconnectB, std::string(256, 's')}).message(),
      HasSubstr("service name is 256 bytes, limit is 255"));
  ParseLimits limits;
  limits.max_service_size = 1000;
  EXPECT_TRUE(
      ParseError({kTagS, kDisconnectB, std::string(256, 's')}, limits).ok());
}

TEST(CcpParseTest, SequencedMissingFrames) {
  for (const std::string& type : {kRequestB, kSuccessB, kFailureB}) {
    SCOPED_TRACE(static_cast<int>(type[0]));
    EXPECT_THAT(ParseError({kTagS, type}).message(),
                HasSubstr("missing service frame"));
    EXPECT_THAT(ParseError({kTagS, type, "s"}).message(),
                HasSubstr("missing sequence id frame"));
  }
}

// A 2011 client whose message encodes to no frames sends exactly
// [CCp100][0x03][service][sequence id]; the 2011 broker served it.
TEST(CcpParseTest, RequestMayHaveNoPayload) {
  Frames f = FramesOf({kTagS, kRequestB, "svc", Seq(6, 9)});
  auto h = ParseHeader(f);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->type, MessageType::kRequest);
  EXPECT_EQ(h->sequence, (SequenceId{6, 9}));
  EXPECT_EQ(h->payload_index, f.size());  // no payload frame at all
  auto m = Parse(f);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(std::get<Request>(*m).payload.empty());
}

TEST(CcpParseTest, ReadableRequestSequence) {
  auto readable = [](const std::vector<std::string>& parts) {
    Frames f = FramesOf(parts);
    return ReadableRequestSequence(f);
  };
  // Malformed, but the broker can still tell whom to answer and for which
  // sequence id.
  EXPECT_EQ(readable({kTagS, kRequestB, "", Seq(3, 4)}), (SequenceId{3, 4}));
  EXPECT_EQ(readable({kTagS, kRequestB, std::string(300, 's'), Seq(3, 4), "p"}),
            (SequenceId{3, 4}));
  EXPECT_EQ(readable({kTagS, kRequestB, "s", Seq(5, 6), "p", "q"}),
            (SequenceId{5, 6}));
  // Not a REQUEST, or no readable sequence id: nothing to answer.
  EXPECT_EQ(readable({kTagS, kRequestB, "s"}), std::nullopt);
  EXPECT_EQ(readable({kTagS, kRequestB, "s", "short"}), std::nullopt);
  EXPECT_EQ(readable({kTagS, kSuccessB, "s", Seq(1, 1)}), std::nullopt);
  EXPECT_EQ(readable({"CCp101", kRequestB, "s", Seq(1, 1)}), std::nullopt);
  EXPECT_EQ(readable({kTagS, kRequestB + "x", "s", Seq(1, 1)}), std::nullopt);
  EXPECT_EQ(readable({}), std::nullopt);
}

TEST(CcpParseTest, BadSequenceIdLength) {
  for (const std::string& type : {kRequestB, kSuccessB, kFailureB}) {
    EXPECT_THAT(ParseError({kTagS, type, "s", "1234567", "p"}).message(),
                HasSubstr("sequence id is 7 bytes, expected 12"));
    EXPECT_THAT(ParseError({kTagS, type, "s", "", "p"}).message(),
                HasSubstr("sequence id is 0 bytes"));
    EXPECT_THAT(ParseError({kTagS, type, "s", Seq(1, 1) + "x", "p"}).message(),
                HasSubstr("sequence id is 13 bytes"));
  }
}

TEST(CcpParseTest, FrameLimit) {
  std::vector<std::string> parts = {kTagS, kRequestB, "s", Seq(1, 1)};
  for (int i = 0; i < 100; ++i) parts.push_back("p");
  ParseLimits limits;
  limits.max_frames = 64;
  EXPECT_THAT(ParseError(parts, limits).message(),
              HasSubstr("104 frames, limit is 64"));
  EXPECT_TRUE(ParseError(parts).ok());  // no limit by default
}

TEST(CcpParseTest, ErrorsAreInvalidArgument) {
  EXPECT_TRUE(absl::IsInvalidArgument(ParseError({"x"})));
}

TEST(CcpEnvelopeTest, DealerBody) {
  Frames f = FramesOf({"", kTagS, kPingB});
  auto body = DealerBody(f);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(body->size(), 2u);
  EXPECT_EQ(body->data(), f.data() + 1);

  Frames no_delim = FramesOf({kTagS, kPingB});
  EXPECT_THAT(DealerBody(no_delim).status().message(),
              HasSubstr("expected an empty delimiter frame, got 6 bytes"));
  Frames only = FramesOf({""});
  EXPECT_THAT(DealerBody(only).status().message(),
              HasSubstr("nothing after the delimiter"));
  Frames none;
  EXPECT_FALSE(DealerBody(none).ok());
}

TEST(CcpEnvelopeTest, RouterBody) {
  Frames f = FramesOf({"id", "", kTagS, kPingB});
  auto body = RouterBody(f);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(body->data(), f.data() + 2);

  Frames no_delim = FramesOf({"id", kTagS, kPingB});
  EXPECT_FALSE(RouterBody(no_delim).ok());
  Frames short_msg = FramesOf({"id"});
  EXPECT_THAT(RouterBody(short_msg).status().message(),
              HasSubstr("no delimiter"));
  Frames empty_body = FramesOf({"id", ""});
  EXPECT_FALSE(RouterBody(empty_body).ok());
}

TEST(CcpEncodeTest, WireBytes) {
  Frames out;
  AppendReady(out, "echo", 1000, 5);
  EXPECT_THAT(FramesToStrings(out),
              ElementsAre(kTagS, kReadyB, "echo", kInterval1000, "\x05"));

  out.clear();
  AppendHeader(out, MessageType::kHeartbeat);
  EXPECT_THAT(FramesToStrings(out), ElementsAre(kTagS, kHeartbeatB));

  out.clear();
  AppendDisconnect(out, "echo");
  EXPECT_THAT(FramesToStrings(out), ElementsAre(kTagS, kDisconnectB, "echo"));

  out.clear();
  AppendHeader(out, MessageType::kRequest, "echo", {3, 4});
  EXPECT_THAT(FramesToStrings(out),
              ElementsAre(kTagS, kRequestB, "echo", Seq(3, 4)));
}

TEST(CcpEncodeTest, EmptyPayloadBecomesOneEmptyFrame) {
  for (MessageType t : {MessageType::kRequest, MessageType::kReplySuccess,
                        MessageType::kReplyFailure}) {
    Frames out;
    AppendWithPayload(out, t, "s", {1, 1}, {});
    ASSERT_EQ(out.size(), 5u);
    EXPECT_EQ(out[4].size(), 0u);
  }
  Frames encoded = Encode(Request{"s", {1, 1}, {}});
  EXPECT_EQ(encoded.size(), 5u);
}

TEST(CcpEncodeTest, AppendKeepsExistingFramesAndMovesPayload) {
  Frames out = FramesOf({"identity", ""});
  Frames payload = FramesOf({"x", std::string(1000, 'y')});
  const void* big = payload[1].data();
  AppendWithPayload(out, MessageType::kReplySuccess, "s", {5, 6}, payload);
  ASSERT_EQ(out.size(), 2u + 4u + 2u);
  EXPECT_EQ(View(out[0]), "identity");
  EXPECT_EQ(out[7].data(), big);  // moved, not copied
  EXPECT_EQ(payload[1].size(), 0u);
}

// Every message type: Encode -> Parse gives back an equal message.
TEST(CcpRoundTripTest, EveryMessage) {
  std::vector<Message> messages;
  messages.push_back(Ready{"svc", 2500, 3});
  messages.push_back(Heartbeat{});
  messages.push_back(Request{"svc", {1, 0xdeadbeef}, FramesOf({"a", "", "c"})});
  messages.push_back(ReplySuccess{"svc", {~0ull, 1}, FramesOf({"ok"})});
  messages.push_back(ReplyFailure{"svc", {7, 7}, FramesOf({"why", "more"})});
  messages.push_back(Disconnect{"svc"});
  messages.push_back(Ping{});
  for (Message& m : messages) {
    const MessageType type = TypeOf(m);
    SCOPED_TRACE(std::string(TypeName(type)));
    Frames frames = Encode(std::move(m));
    auto parsed = Parse(frames);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(TypeOf(*parsed), type);
    Frames again = Encode(std::move(*parsed));
    // Parse moved the payload out of `frames`; compare against a re-encode
    // of the parsed message instead.
    auto reparsed = ParseHeader(again);
    ASSERT_TRUE(reparsed.ok()) << reparsed.status();
    EXPECT_EQ(reparsed->type, type);
  }
}

TEST(CcpRoundTripTest, FieldsSurvive) {
  Frames frames =
      Encode(ReplyFailure{"svc", {0x100000002ull, 9}, FramesOf({"p1", "p2"})});
  auto parsed = Parse(frames);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto* f = std::get_if<ReplyFailure>(&*parsed);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->service, "svc");
  EXPECT_EQ(f->sequence, (SequenceId{0x100000002ull, 9}));
  EXPECT_THAT(FramesToStrings(f->payload), ElementsAre("p1", "p2"));

  Frames ready = Encode(Ready{"w", 0xfffffffe, 255});
  parsed = Parse(ready);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto* r = std::get_if<Ready>(&*parsed);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->service, "w");
  EXPECT_EQ(r->heartbeat_interval_ms, 0xfffffffeu);
  EXPECT_EQ(r->heartbeat_retries, 255);
}

TEST(CcpParseTest, ParseLeavesBodyAloneOnError) {
  Frames f = FramesOf({kTagS, kRequestB, "s", "bad", "payload"});
  EXPECT_FALSE(Parse(f).ok());
  EXPECT_EQ(View(f[4]), "payload");
}

TEST(CcpReasonTest, BrokerFailuresAreRecognised) {
  Frames broker = FramesOf({std::string(kReasonTimeout), "text"});
  Frames worker = FramesOf({"disk full"});
  Frames none;
  EXPECT_TRUE(IsBrokerFailure(broker));
  EXPECT_FALSE(IsBrokerFailure(worker));
  EXPECT_FALSE(IsBrokerFailure(none));
  for (std::string_view r :
       {kReasonNoWorkers, kReasonTimeout, kReasonWorkerFailed,
        kReasonWorkerLeft, kReasonWorkerBusy, kReasonBadSequence,
        kReasonShutdown}) {
    EXPECT_TRUE(r.starts_with(kReasonPrefix)) << r;
  }
}

TEST(CcpTypeNameTest, Names) {
  EXPECT_EQ(TypeName(MessageType::kReplySuccess), "REPLY_SUCCESS");
  EXPECT_EQ(TypeName(static_cast<MessageType>(0x42)), "UNKNOWN");
}

// Random and mutated frame lists never crash the parser; whatever parses
// re-encodes to the same bytes.
TEST(CcpRandomTest, RandomAndMutatedInputs) {
  std::mt19937 rng(20260101);  // deterministic
  auto rand_bytes = [&](std::size_t max_len) {
    std::string s(std::uniform_int_distribution<std::size_t>(0, max_len)(rng),
                  '\0');
    for (char& c : s) c = static_cast<char>(rng());
    return s;
  };
  // Valid seeds to mutate.
  const std::vector<std::vector<std::string>> seeds = {
      {kTagS, kReadyB, "svc", kInterval1000, "\x03"},
      {kTagS, kHeartbeatB},
      {kTagS, kRequestB, "svc", Seq(1, 2), "payload"},
      {kTagS, kSuccessB, "svc", Seq(3, 4), "a", "b"},
      {kTagS, kFailureB, "svc", Seq(5, 6)},
      {kTagS, kDisconnectB, "svc"},
      {kTagS, kPingB},
  };
  int parsed_ok = 0;
  int parsed_bad = 0;
  for (int iter = 0; iter < 5000; ++iter) {
    std::vector<std::string> parts;
    const int mode = iter % 3;
    if (mode == 0) {
      // Entirely random frames, sometimes with a valid tag and type.
      const int n = std::uniform_int_distribution<int>(0, 8)(rng);
      for (int i = 0; i < n; ++i) parts.push_back(rand_bytes(20));
      if (n >= 2 && rng() % 2) {
        parts[0] = kTagS;
        parts[1] = std::string(1, static_cast<char>(1 + rng() % 8));
      }
    } else {
      parts = seeds[rng() % seeds.size()];
      const int mutations = 1 + static_cast<int>(rng() % 3);
      for (int m = 0; m < mutations; ++m) {
        switch (rng() % 5) {
          case 0:  // drop a frame
            if (!parts.empty())
              parts.erase(parts.begin() + rng() % parts.size());
            break;
          case 1:  // add a frame
            parts.insert(parts.begin() + rng() % (parts.size() + 1),
                         rand_bytes(16));
            break;
          case 2:  // flip a byte
            if (!parts.empty()) {
              std::string& p = parts[rng() % parts.size()];
              if (!p.empty())
                p[rng() % p.size()] ^= static_cast<char>(1 + rng() % 255);
            }
            break;
          case 3:  // truncate a frame
            if (!parts.empty()) {
              std::string& p = parts[rng() % parts.size()];
              p.resize(p.empty() ? 0 : rng() % p.size());
            }
            break;
          default:  // replace a frame
            if (!parts.empty()) parts[rng() % parts.size()] = rand_bytes(13);
            break;
        }
      }
    }
    Frames frames = FramesOf(parts);
    auto header = ParseHeader(frames);
    if (!header.ok()) {
      ++parsed_bad;
      EXPECT_TRUE(absl::IsInvalidArgument(header.status()));
      EXPECT_FALSE(Parse(frames).ok());
      continue;
    }
    ++parsed_ok;
    auto message = Parse(frames);
    ASSERT_TRUE(message.ok()) << message.status();
    Frames encoded = Encode(std::move(*message));
    std::vector<std::string> expected = parts;
    // The only normalisation Encode does: an empty REQUEST/REPLY payload
    // becomes one empty frame.
    if (header->payload_index == kPayloadIndex &&
        expected.size() == kPayloadIndex) {
      expected.emplace_back();
    }
    EXPECT_EQ(FramesToStrings(encoded), expected);
  }
  // The mix exercises both paths.
  EXPECT_GT(parsed_ok, 100);
  EXPECT_GT(parsed_bad, 1000);
}

}  // namespace
}  // namespace zb::ccp
