// Copyright 2026 The zbrokers Authors.
//
// libFuzzer target: arbitrary frame sequences from several identities fed
// into zb::ConsensusBroker's message handler, with its invariants checked
// after every message.
//
// Each input is one fresh broker.  Its ROUTER is bound to an inproc
// endpoint to which four DEALER sockets with fixed identities are connected
// ("w0", "w1", "c0", "c1"), so that what the broker sends to them can be
// read back; a fifth identity ("x0") has no socket, so every send to it
// fails with EHOSTUNREACH (ZMQ_ROUTER_MANDATORY), the path of a peer that is
// gone.  The input (FuzzedDataProvider) chooses the broker's options and
// then a list of operations: a message of any CCp100 type from any identity
// (well formed, with fields from small sets so that sequence numbers and
// services line up, or arbitrary bytes, or one frame damaged), a sweep, or a
// drain.  Messages are handed straight to the handler
// (ConsensusBroker::HandleForTesting); the reactor never runs after the
// set-up.  Timers: there is no clock to move, so the options choose
// deadlines that are either already over (0) or never reached (an hour), and
// READY chooses heartbeat intervals the same way.
//
// Checked after every operation (std::abort() on a breach, so that libFuzzer
// reports it with the input):
//   - requests == replies_success + replies_failure + open_requests();
//   - registered workers (workers_per_service) == joined - left - expired,
//     at most one per identity; a service without workers has open requests;
//   - client records <= distinct client ids presented, and the broker's
//     own bookkeeping (ConsensusBroker::CheckInvariantsForTesting: open
//     requests per client record, the idle list, max_clients and
//     max_requests_per_client, which the options set from 0 to 3);
//   - everything the broker sends parses (ccp::ParseHeader);
//   - every reply a peer receives answers a REQUEST that peer sent with the
//     same sequence id, and no more often than it sent it (nothing lost to a
//     wrong peer, nothing duplicated).
// At the end the broker is destroyed (which fails every open request with
// zb:shutdown) and every well-formed REQUEST must have had exactly one
// reply; every PING its echo.
//
//   ./build-fuzz/brokers/consensus/consensus_broker_fuzz
//   test/fuzz/corpus/consensus_broker_fuzz

#include <fuzzer/FuzzedDataProvider.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "absl/strings/str_format.h"
#include "test/fuzz/fuzz_util.h"
#include "zbrokers/consensus/broker.h"
#include "zbrokers/consensus/codec.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/reactor/reactor.h"

namespace {

using zb::ccp::MessageType;
using zb::fuzz::Check;
using zb::fuzz::Fail;
using zb::fuzz::kConnected;
using zb::fuzz::kIdentities;
using zb::fuzz::kMaxOps;

struct Peer {
  std::string identity;
  std::unique_ptr<zmq::socket_t> dealer;  // null for the unconnected one
  // Sequence frames of the REQUESTs fanned out to this peer (as a worker),
  // newest last; REPLYs pick from them.
  std::vector<std::string> fanned_out;
  // Per sequence frame: REQUEST-shaped messages this peer sent, of which
  // well formed (ParseHeader), and replies it received.
  std::map<std::string, int> sent, well_formed, replies;
  int pings_sent = 0;
  int pings_received = 0;
};

class Harness {
 public:
  explicit Harness(FuzzedDataProvider& in) : in_(in) {}

  void Run() {
    zmq::context_t& context = zb::fuzz::NextContext();
    zb::ConsensusBroker::Options options;
    options.request_timeout = in_.ConsumeBool() ? std::chrono::milliseconds(0)
                                                : std::chrono::hours(1);
    options.client_idle_timeout = in_.ConsumeBool()
                                      ? std::chrono::milliseconds(0)
                                      : std::chrono::hours(1);
    options.max_frames = in_.ConsumeBool() ? 8 : 4096;
    // Caps small enough for a few operations to reach them (0 = no bound).
    options.max_clients = in_.ConsumeIntegralInRange<std::size_t>(0, 3);
    options.max_requests_per_client =
        in_.ConsumeIntegralInRange<std::size_t>(0, 3);
    options.sweep_interval = std::chrono::hours(1);  // the harness sweeps
    options.linger = std::chrono::milliseconds(0);

    zb::Reactor reactor;
    absl::StatusOr<std::unique_ptr<zb::ConsensusBroker>> created =
        zb::ConsensusBroker::Create(reactor, context, options);
    Check(created.ok(), "create");
    std::unique_ptr<zb::ConsensusBroker> broker = *std::move(created);
    broker->set_log_hook([](zb::LogLevel, std::string_view) {});
    limits_.max_frames = options.max_frames;
    limits_.max_service_size = options.max_service_size;
    static int endpoint_counter = 0;
    const std::string endpoint =
        absl::StrFormat("inproc://consensus-fuzz-%d", endpoint_counter++);
    Check(broker->Bind(endpoint).ok(), "bind");
    for (std::string_view id : kIdentities) {
      Peer& p = peers_.emplace_back();
      p.identity = std::string(id);
      if (peers_.size() > kConnected) continue;
      p.dealer = zb::fuzz::ConnectPeer(context, p.identity, endpoint);
    }
    // Hand-shake: a PING from each socket through the reactor, so that the
    // ROUTER has attached every peer before messages are injected.
    for (std::size_t i = 0; i < kConnected; ++i) {
      zb::Frames ping;
      ping.emplace_back();
      zb::ccp::AppendHeader(ping, MessageType::kPing);
      Check(zb::SendFrames(*peers_[i].dealer, ping).ok(), "hand-shake send");
      ++peers_[i].pings_sent;
    }
    for (int round = 0; broker->stats().pings < kConnected; ++round) {
      Check(round < 10000, "hand-shake: the broker did not see every peer");
      Check(reactor.RunOnce(std::chrono::milliseconds(0)).ok(), "run_once");
    }
    DrainPeers();

    for (std::size_t op = 0; op < kMaxOps && in_.remaining_bytes() > 0; ++op) {
      const int kind = in_.ConsumeIntegralInRange(0, 11);
      if (kind == 10) {
        broker->SweepForTesting();
      } else if (kind == 11) {
        if (in_.ConsumeIntegralInRange(0, 7) == 0)
          broker->Drain(std::chrono::hours(1), nullptr);
      } else {
        const std::size_t who =
            in_.ConsumeIntegralInRange<std::size_t>(0, peers_.size() - 1);
        zb::Frames frames = MakeMessage(kind, peers_[who]);
        Expect(peers_[who], frames);
        broker->HandleForTesting(frames);
      }
      DrainPeers();
      CheckInvariants(*broker);
    }

    broker.reset();  // fails every open request with zb:shutdown
    DrainPeers();
    for (const Peer& p : peers_) {
      if (!p.dealer) continue;
      for (const auto& [seq, n] : p.well_formed) {
        auto it = p.replies.find(seq);
        const int got = it == p.replies.end() ? 0 : it->second;
        if (got < n) {
          Fail(
              absl::StrFormat("%s: %d well-formed REQUEST(s) with one "
                              "sequence id, %d reply(ies)",
                              p.identity, n, got));
        }
      }
      if (p.pings_received != p.pings_sent) {
        Fail(absl::StrFormat("%s: %d PING(s), %d echo(es)", p.identity,
                             p.pings_sent, p.pings_received));
      }
    }
  }

 private:
  std::string Service() { return zb::fuzz::Service(in_); }

  std::string SequenceFrame() {
    const int how = in_.ConsumeIntegralInRange(0, 7);
    if (how == 0) return in_.ConsumeRandomLengthString(16);
    zb::ccp::SequenceId id;
    id.client_id = in_.ConsumeIntegralInRange<std::uint32_t>(1, 3);
    if (how == 1) id.client_id = in_.ConsumeIntegral<std::uint32_t>();
    std::uint64_t& next = next_sequence_[id.client_id];
    if (how == 2) {
      id.sequence = in_.ConsumeIntegral<std::uint64_t>();
    } else if (how == 3) {
      id.sequence = next;  // a repeat of the last one
    } else {
      id.sequence = ++next;
    }
    const auto bytes = zb::ccp::EncodeSequenceId(id);
    return std::string(bytes.data(), bytes.size());
  }

  std::string Reply(Peer& p) {
    if (!p.fanned_out.empty() && in_.ConsumeIntegralInRange(0, 5) != 0) {
      return p.fanned_out[in_.ConsumeIntegralInRange<std::size_t>(
          0, p.fanned_out.size() - 1)];
    }
    return SequenceFrame();
  }

  // [tag][type][service]; the caller appends the sequence id and payload.
  void TypeAndService(zb::Frames& f, MessageType type) {
    const char byte = static_cast<char>(type);
    f.push_back(zb::Frame(zb::ccp::kTag));
    f.push_back(zb::Frame(std::string_view(&byte, 1)));
    f.push_back(zb::Frame(Service()));
  }

  // [identity][""][body...] of one operation.
  zb::Frames MakeMessage(int kind, Peer& p) {
    zb::Frames f;
    f.push_back(zb::Frame(p.identity));
    f.emplace_back();
    switch (kind) {
      case 0: {  // READY
        static constexpr std::uint32_t kIntervals[] = {0, 1, 100, 3'600'000,
                                                       0xffffffff};
        const std::uint32_t interval =
            in_.ConsumeBool() ? in_.PickValueInArray(kIntervals)
                              : in_.ConsumeIntegral<std::uint32_t>();
        const std::uint8_t retries =
            in_.ConsumeBool() ? 3 : in_.ConsumeIntegral<std::uint8_t>();
        zb::ccp::AppendReady(f, Service(), interval, retries);
        break;
      }
      case 1:
        zb::ccp::AppendHeader(f, MessageType::kHeartbeat);
        break;
      case 2:
      case 3:
      case 4: {  // REQUEST (twice as likely as the others)
        TypeAndService(f, MessageType::kRequest);
        f.push_back(zb::Frame(SequenceFrame()));
        zb::fuzz::AppendBody(in_, f, 0);
        break;
      }
      case 5:
      case 6: {
        const MessageType type =
            kind == 5 ? MessageType::kReplySuccess : MessageType::kReplyFailure;
        TypeAndService(f, type);
        f.push_back(zb::Frame(Reply(p)));
        zb::fuzz::AppendBody(in_, f, 0);
        break;
      }
      case 7:
        zb::ccp::AppendDisconnect(f, Service());
        break;
      case 8:
        zb::ccp::AppendHeader(f, MessageType::kPing);
        break;
      default:  // arbitrary frames after the identity
        f.pop_back();
        zb::fuzz::AppendArbitraryFrames(in_, f);
        break;
    }
    zb::fuzz::MaybeDamageOneFrame(in_, f);
    return f;
  }

  // Records what the broker owes `p` for the message it is about to get.
  void Expect(Peer& p, zb::Frames& frames) {
    if (frames.size() < 2 || !zb::View(frames[1]).empty()) return;
    std::span<const zmq::message_t> body(frames.data() + 2, frames.size() - 2);
    // A REQUEST whose sender and sequence id can be read may be answered
    // even when malformed otherwise.
    if (body.size() > zb::ccp::kSequenceIndex &&
        zb::View(body[0]) == zb::ccp::kTag && zb::View(body[1]) == "\x03" &&
        zb::View(body[zb::ccp::kSequenceIndex]).size() ==
            zb::ccp::kSequenceIdSize) {
      const std::string seq(zb::View(body[zb::ccp::kSequenceIndex]));
      ++p.sent[seq];
      absl::StatusOr<zb::ccp::SequenceId> id = zb::ccp::DecodeSequenceId(seq);
      if (id.ok()) clients_seen_.insert(id->client_id);
      if (zb::ccp::ParseHeader(body, limits_).ok()) ++p.well_formed[seq];
    }
    absl::StatusOr<zb::ccp::Header> h = zb::ccp::ParseHeader(body, limits_);
    if (h.ok() && h->type == MessageType::kPing) ++p.pings_sent;
  }

  void DrainPeers() {
    for (Peer& p : peers_) {
      if (!p.dealer) continue;
      zb::fuzz::ReceiveQueued(
          *p.dealer, [&](zb::Frames& frames) { OnReceived(p, frames); });
    }
  }

  void OnReceived(Peer& p, zb::Frames& frames) {
    absl::StatusOr<std::span<zmq::message_t>> body =
        zb::ccp::DealerBody(frames);
    Check(body.ok(), "the broker sent a message without the delimiter");
    absl::StatusOr<zb::ccp::Header> h = zb::ccp::ParseHeader(*body);
    if (!h.ok()) {
      Fail(absl::StrFormat("the broker sent a malformed message to %s: %s",
                           p.identity, h.status().ToString()));
    }
    switch (h->type) {
      case MessageType::kRequest: {
        p.fanned_out.emplace_back(zb::View((*body)[zb::ccp::kSequenceIndex]));
        if (p.fanned_out.size() > 16) p.fanned_out.erase(p.fanned_out.begin());
        break;
      }
      case MessageType::kReplySuccess:
      case MessageType::kReplyFailure: {
        const std::string seq(zb::View((*body)[zb::ccp::kSequenceIndex]));
        const int got = ++p.replies[seq];
        auto it = p.sent.find(seq);
        const int sent = it == p.sent.end() ? 0 : it->second;
        if (got > sent) {
          Fail(
              absl::StrFormat("%s got reply #%d for a sequence id it sent "
                              "%d time(s)",
                              p.identity, got, sent));
        }
        break;
      }
      case MessageType::kPing:
        ++p.pings_received;
        Check(p.pings_received <= p.pings_sent, "an echo without a PING");
        break;
      case MessageType::kReady:
        Fail("the broker sent READY");
      case MessageType::kHeartbeat:
      case MessageType::kDisconnect:
        break;
    }
  }

  void CheckInvariants(const zb::ConsensusBroker& broker) {
    const zb::ConsensusBroker::Stats& s = broker.stats();
    if (s.requests !=
        s.replies_success + s.replies_failure + broker.open_requests()) {
      Fail(absl::StrFormat("requests %d != success %d + failure %d + open %d",
                           s.requests, s.replies_success, s.replies_failure,
                           broker.open_requests()));
    }
    std::size_t workers = 0;
    for (const auto& [service, n] : broker.workers_per_service()) {
      workers += n;
      if (n == 0 && broker.open_requests() == 0) {
        Fail("a service with neither workers nor open requests is kept");
      }
    }
    if (workers != s.workers_joined - s.workers_left - s.workers_expired) {
      Fail(absl::StrFormat(
          "%d workers registered, joined %d - left %d - "
          "expired %d",
          workers, s.workers_joined, s.workers_left, s.workers_expired));
    }
    Check(workers <= peers_.size(), "more workers than identities");
    Check(broker.client_count() <= clients_seen_.size(),
          "more client records than client ids presented");
    if (absl::Status st = broker.CheckInvariantsForTesting(); !st.ok()) {
      Fail(std::string(st.message()));
    }
  }

  FuzzedDataProvider& in_;
  zb::ccp::ParseLimits limits_;
  std::vector<Peer> peers_;
  std::map<std::uint32_t, std::uint64_t> next_sequence_;
  std::set<std::uint32_t> clients_seen_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  FuzzedDataProvider in(data, size);
  Harness(in).Run();
  return 0;
}
