// Copyright 2026 The zbrokers Authors.
//
// libFuzzer entry point for the MDP/0.1 codec (codec.h).  The input is split
// into frames at every 0xff 0x00 byte pair, as in ccp_fuzz.cc.  The frames
// are classified and parsed as a client message (with and without the
// leading empty frame) and as a worker message; the checks:
//   - ClassifyMessage, ParseClient and ParseWorker agree (a message that
//     parses as a client message classifies as kClient, ...);
//   - what parses re-encodes (AppendClientRequest / AppendWorker /
//     AppendTaggedClientReply) to exactly the frames it was parsed from;
//   - nothing crashes, reads out of bounds or leaks (ASan/UBSan build).
//
//   ./build-fuzz/brokers/majordomo/mdp_fuzz -max_total_time=60 \
//       test/fuzz/corpus/mdp_fuzz        (scripts/fuzz does this)

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "test/fuzz/fuzz_util.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/majordomo/codec.h"

namespace {

using zb::fuzz::SplitFrames;

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string> before =
      zb::FramesToStrings(SplitFrames(input));

  // Client message, with the delimiter.
  {
    zb::Frames frames = SplitFrames(input);
    absl::StatusOr<zb::mdp::Protocol> protocol =
        zb::mdp::ClassifyMessage(frames);
    absl::StatusOr<zb::mdp::ClientMessage> client =
        zb::mdp::ParseClient(frames);
    if (client.ok()) {
      Check(protocol.ok() && *protocol == zb::mdp::Protocol::kClient);
      Check(!client->service.empty() && !client->body.empty());
      zb::Frames out;
      zb::mdp::AppendClientRequest(client->service, client->body, &out);
      Check(zb::FramesToStrings(out) == before);
    }
    absl::StatusOr<zb::mdp::WorkerMessage> worker =
        zb::mdp::ParseWorker(frames);
    if (worker.ok()) {
      Check(!client.ok());
      Check(protocol.ok() && *protocol == zb::mdp::Protocol::kWorker);
    }
  }
  // Client message with a request tag (the zbrokers extension): never also
  // a plain client or worker message; re-encodes to the same frames.
  {
    zb::Frames frames = SplitFrames(input);
    absl::StatusOr<zb::mdp::ClientMessage> tagged =
        zb::mdp::ParseTaggedClient(frames);
    if (tagged.ok()) {
      absl::StatusOr<zb::mdp::Protocol> protocol =
          zb::mdp::ClassifyMessage(frames);
      Check(protocol.ok() && *protocol == zb::mdp::Protocol::kTaggedClient);
      Check(tagged->tag != nullptr && tagged->tag->size() > 0 &&
            tagged->tag->size() <= zb::mdp::kMaxTagSize);
      Check(!tagged->body.empty());
      zb::Frames out;
      zb::mdp::AppendTaggedClientReply(tagged->service, std::move(*tagged->tag),
                                       tagged->body, &out);
      Check(zb::FramesToStrings(out) == before);
    }
  }
  // Worker message: re-encoded from a fresh copy, since AppendWorker moves
  // the address and body out of the parsed frames.
  {
    zb::Frames frames = SplitFrames(input);
    absl::StatusOr<zb::mdp::WorkerMessage> worker =
        zb::mdp::ParseWorker(frames);
    if (worker.ok()) {
      using zb::mdp::Command;
      const bool routed = worker->command == Command::kRequest ||
                          worker->command == Command::kReply;
      Check(routed == (worker->address != nullptr));
      Check(routed == !worker->body.empty());
      Check((worker->command == Command::kReady) == !worker->service.empty());
      zb::Frames out;
      zb::mdp::AppendWorker(*worker, &out);
      Check(zb::FramesToStrings(out) == before);
    }
  }
  // Client message without the delimiter (what a REQ socket hands over).
  {
    zb::Frames frames = SplitFrames(input);
    absl::StatusOr<zb::mdp::ClientMessage> client =
        zb::mdp::ParseClient(frames, zb::mdp::Delimiter::kNoDelimiter);
    if (client.ok()) {
      zb::Frames out;
      zb::mdp::AppendClientReply(client->service, client->body, &out,
                                 zb::mdp::Delimiter::kNoDelimiter);
      Check(zb::FramesToStrings(out) == before);
    }
  }
  return 0;
}
