// Copyright 2026 The zbrokers Authors.

#include "zbrokers/ha/codec.h"

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace zb::hap {
namespace {

std::string_view View(const zmq::message_t& frame) {
  return std::string_view(static_cast<const char*>(frame.data()), frame.size());
}

// One byte as a code, or an error naming `what`.
absl::StatusOr<std::uint8_t> Code(const zmq::message_t& frame,
                                  std::string_view what) {
  if (frame.size() != 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s frame has %d bytes, expected 1", what, frame.size()));
  }
  return static_cast<const std::uint8_t*>(frame.data())[0];
}

}  // namespace

std::vector<zmq::message_t> Encode(const StateMessage& m) {
  std::vector<zmq::message_t> frames;
  frames.reserve(3);
  frames.emplace_back(kTag.data(), kTag.size());
  const std::uint8_t state = static_cast<std::uint8_t>(m.state);
  const std::uint8_t role = m.role == HaRole::kPrimary ? 1 : 2;
  frames.emplace_back(&state, 1);
  frames.emplace_back(&role, 1);
  return frames;
}

absl::StatusOr<StateMessage> Parse(std::span<const zmq::message_t> frames) {
  if (frames.size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d frame(s), expected 3", frames.size()));
  }
  const std::string_view tag = View(frames[0]);
  if (tag != kTag) {
    if (tag.size() == kTag.size() && tag.substr(0, 4) == kTag.substr(0, 4)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "version \"", std::string(tag.substr(4)), "\" is not spoken here (",
          std::string(kTag.substr(4)), ")"));
    }
    return absl::InvalidArgumentError("not a ZBHA state message");
  }
  absl::StatusOr<std::uint8_t> state = Code(frames[1], "state");
  if (!state.ok()) return state.status();
  absl::StatusOr<std::uint8_t> role = Code(frames[2], "role");
  if (!role.ok()) return role.status();
  if (*state < 1 || *state > 4) {
    return absl::InvalidArgumentError(
        absl::StrFormat("unknown state code %d", *state));
  }
  if (*role < 1 || *role > 2) {
    return absl::InvalidArgumentError(
        absl::StrFormat("unknown role code %d", *role));
  }
  return StateMessage{static_cast<HaState>(*state),
                      *role == 1 ? HaRole::kPrimary : HaRole::kBackup};
}

}  // namespace zb::hap
