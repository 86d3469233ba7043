// Copyright 2026 The zbrokers Authors.

#include "zbrokers/ha/codec.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "zbrokers/frames/frames.h"

namespace zb::hap {
namespace {

TEST(HaCodecTest, RoundTripsEveryStateAndRole) {
  for (HaState s : {HaState::kPrimary, HaState::kBackup, HaState::kActive,
                    HaState::kPassive}) {
    for (HaRole r : {HaRole::kPrimary, HaRole::kBackup}) {
      std::vector<zmq::message_t> frames = Encode({.state = s, .role = r});
      ASSERT_EQ(frames.size(), 3u);
      absl::StatusOr<StateMessage> m = Parse(frames);
      ASSERT_TRUE(m.ok()) << m.status();
      EXPECT_EQ(m->state, s);
      EXPECT_EQ(m->role, r);
    }
  }
}

TEST(HaCodecTest, TheWireIsTheDocumentedBytes) {
  std::vector<zmq::message_t> frames =
      Encode({.state = HaState::kPassive, .role = HaRole::kBackup});
  EXPECT_EQ(FramesToStrings(frames),
            (std::vector<std::string>{"ZBHA01", "\x04", "\x02"}));
}

TEST(HaCodecTest, RefusesWhatIsNotAStateMessage) {
  struct Case {
    std::vector<std::string> frames;
    std::string error;  // a part of the message
  };
  const std::vector<Case> cases = {
      {{}, "0 frame(s)"},
      {{"ZBHA01", "\x03"}, "2 frame(s)"},
      {{"ZBHA01", "\x03", "\x01", ""}, "4 frame(s)"},
      {{"MDPC01", "\x03", "\x01"}, "not a ZBHA"},
      {{"ZBHA02", "\x03", "\x01"}, "version \"02\""},
      {{"ZBHA01", "", "\x01"}, "state frame has 0 bytes"},
      {{"ZBHA01", "\x03\x03", "\x01"}, "state frame has 2 bytes"},
      {{"ZBHA01", std::string(1, '\0'), "\x01"}, "unknown state code 0"},
      {{"ZBHA01", "\x05", "\x01"}, "unknown state code 5"},
      {{"ZBHA01", "\x03", "\x03"}, "unknown role code 3"},
      {{"ZBHA01", "\x03", ""}, "role frame has 0 bytes"},
  };
  for (const Case& c : cases) {
    std::vector<zmq::message_t> frames;
    for (const std::string& f : c.frames) frames.push_back(Frame(f));
    absl::StatusOr<StateMessage> m = Parse(frames);
    ASSERT_FALSE(m.ok()) << c.error;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find(c.error), std::string::npos)
        << m.status().message() << " lacks " << c.error;
  }
}

}  // namespace
}  // namespace zb::hap
