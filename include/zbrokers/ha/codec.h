// Copyright 2026 The zbrokers Authors.
//
// The peer link's wire format (ZBHA01): what one broker of a fail-over pair
// publishes to the other every heartbeat_interval, and at once whenever its
// state changes (zbrokers/ha/node.h).  It goes from a PUB socket bound on
// the sender's state_endpoint to the receiver's SUB socket (subscribed to
// everything), as one message of three frames:
//
//   frame 0  "ZBHA01"   protocol tag and version ("ZBHA" + two digits); a
//                       later version changes the digits, and a broker
//                       refuses (counts and logs) a version it does not
//                       speak rather than guess
//   frame 1  1 byte     the sender's state: 1 primary, 2 backup, 3 active,
//                       4 passive (zb::HaState)
//   frame 2  1 byte     the sender's configured role: 1 primary, 2 backup
//
// Anything else (other frame counts or sizes, unknown codes, another tag)
// is malformed.  The codec is pure: no sockets, no reactor.
//
// Thread-safety: stateless functions.

#ifndef ZBROKERS_HA_CODEC_H_
#define ZBROKERS_HA_CODEC_H_

#include <span>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "absl/status/statusor.h"
#include "zbrokers/ha/binary_star.h"

namespace zb::hap {

inline constexpr std::string_view kTag = "ZBHA01";
// The longest frame a valid message has; the SUB socket's ZMQ_MAXMSGSIZE,
// so that a stranger on the state endpoint cannot make us hold more.
inline constexpr std::size_t kMaxFrameSize = 64;

struct StateMessage {
  HaState state = HaState::kPrimary;
  HaRole role = HaRole::kPrimary;
};

// The three frames of `m`.
std::vector<zmq::message_t> Encode(const StateMessage& m);
// InvalidArgument saying what is wrong (e.g. `unknown state code 9`,
// `version "ZBHA02" is not spoken here (ZBHA01)`).
absl::StatusOr<StateMessage> Parse(std::span<const zmq::message_t> frames);

}  // namespace zb::hap

#endif  // ZBROKERS_HA_CODEC_H_
