// Copyright 2026 The zbrokers Authors.
//
// libFuzzer entry point for the CCp100 codec.  The input is split into frames
// at every 0xff 0x00 byte pair (so the fuzzer can grow and shrink frame
// counts easily); the frames are parsed as a message body, and what parses
// must re-encode to the same frames.
//
//   clang++ builds it (meson builds it only with clang):
//   ./build-clang/brokers/consensus/ccp_fuzz -max_total_time=60

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "test/fuzz/fuzz_util.h"
#include "zbrokers/consensus/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  zb::Frames frames = zb::fuzz::SplitFrames(input);

  zb::ccp::ParseLimits limits;
  limits.max_frames = 1024;
  absl::StatusOr<zb::ccp::Header> header = zb::ccp::ParseHeader(frames, limits);
  std::vector<std::string> before = zb::FramesToStrings(frames);
  absl::StatusOr<zb::ccp::Message> message = zb::ccp::Parse(frames, limits);
  if (header.ok() != message.ok()) std::abort();
  if (!message.ok()) {
    // What the broker answers instead of dropping must really be a REQUEST
    // with that sequence id.
    if (std::optional<zb::ccp::SequenceId> id =
            zb::ccp::ReadableRequestSequence(frames)) {
      if (frames.size() <= zb::ccp::kSequenceIndex ||
          zb::View(frames[zb::ccp::kTypeIndex]) != "\x03") {
        std::abort();
      }
      absl::StatusOr<zb::ccp::SequenceId> decoded =
          zb::ccp::DecodeSequenceId(zb::View(frames[zb::ccp::kSequenceIndex]));
      if (!decoded.ok() || *decoded != *id) std::abort();
    }
    return 0;
  }

  zb::Frames encoded = zb::ccp::Encode(std::move(*message));
  if (header->payload_index == zb::ccp::kPayloadIndex &&
      before.size() == zb::ccp::kPayloadIndex) {
    before.emplace_back();  // an empty payload is encoded as one empty frame
  }
  if (zb::FramesToStrings(encoded) != before) std::abort();
  return 0;
}
