// Copyright 2026 The zbrokers Authors.
//
// libFuzzer target: arbitrary frame sequences from several identities fed
// into zb::MajordomoBroker's message handler, with its invariants checked
// after every message.
//
// Each input is one fresh broker.  Its ROUTER is bound to an inproc
// endpoint to which four DEALER sockets with fixed identities are connected
// ("w0", "w1", "c0", "c1"), so that what the broker sends to them can be
// read back; a fifth identity ("x0") has no socket, so every send to it
// fails with EHOSTUNREACH (ZMQ_ROUTER_MANDATORY), the path of a peer that is
// gone.  The input (FuzzedDataProvider) chooses the broker's options
// (liveness, queue limit and expiry, redispatch, service, worker and
// per-client caps, prefetch) and
// then a list of operations: client requests (ordinary, tagged and mmi.*),
// worker commands (READY, REPLY naming a client the worker was really given a
// request for or any other, HEARTBEAT, DISCONNECT, a REQUEST from a
// worker), arbitrary frames, one frame damaged, a sweep after moving the
// broker's clock (MajordomoBroker::SetClockForTesting) by nothing, a
// heartbeat, a worker's lifetime or the queue expiry, and a drain.  Messages
// are handed straight to the handler (MajordomoBroker::HandleForTesting).
//
// Checked after every operation (std::abort() on a breach, so that libFuzzer
// reports it with the input):
//   - every accepted request is in exactly one state: replied, failed,
//     expired, dropped, or open (queued or outstanding at a worker), where a
//     reply that could not be routed to its client counts as unroutable:
//       answered + open <= requests <= answered + open + unroutable;
//   - registered workers == joined - left - expired - disconnected, at most
//     one per identity;
//   - every known service has a worker or a queued request, there are at
//     most max_services of them, and the per-service queued counts add up
//     to no more than open_requests();
//   - everything the broker sends parses (mdp::ParseClient, ParseWorker,
//     ParseTaggedClient for replies to tagged requests);
//     a REQUEST sent to a worker names a client identity that sent
//     requests;
//   - no peer receives more replies than it had requests accepted, and all
//     replies received add up to the broker's `replies` counter.
// At the end the broker is drained with no grace (what is still open is
// counted as expired) and the accounting must then balance with nothing
// open.
//
//   ./build-fuzz/brokers/majordomo/majordomo_broker_fuzz
//   test/fuzz/corpus/majordomo_broker_fuzz

#include <fuzzer/FuzzedDataProvider.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "absl/strings/str_format.h"
#include "test/fuzz/fuzz_util.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/majordomo/broker.h"
#include "zbrokers/majordomo/codec.h"
#include "zbrokers/reactor/reactor.h"

namespace {

using zb::fuzz::Check;
using zb::fuzz::Fail;
using zb::fuzz::kConnected;
using zb::fuzz::kIdentities;
using zb::fuzz::kMaxOps;
using Broker = zb::MajordomoBroker;
using Clock = zb::Reactor::Clock;

constexpr auto kHeartbeat = std::chrono::milliseconds(100);

struct Peer {
  std::string identity;
  std::unique_ptr<zmq::socket_t> dealer;  // null for the unconnected one
  // Client addresses of the REQUESTs the broker gave this peer (as a
  // worker), newest last; REPLYs pick from them.
  std::vector<std::string> given;
  std::uint64_t accepted = 0;  // client requests the broker accepted
  std::uint64_t replies = 0;   // client replies received
};

class Harness {
 public:
  explicit Harness(FuzzedDataProvider& in) : in_(in) {}

  void Run() {
    zmq::context_t& context = zb::fuzz::NextContext();
    Broker::Options o;
    o.heartbeat_interval = kHeartbeat;
    o.heartbeat_liveness = in_.ConsumeIntegralInRange(1, 3);
    static constexpr std::size_t kQueueLimits[] = {0, 1, 2, 100'000};
    o.max_queue_per_service = in_.PickValueInArray(kQueueLimits);
    o.queue_expiry =
        in_.ConsumeBool() ? Broker::Duration(0) : Broker::Duration(1000);
    o.max_redispatch = in_.ConsumeIntegralInRange(0, 2);
    static constexpr std::size_t kServiceLimits[] = {1, 3, 10'000};
    o.max_services = in_.PickValueInArray(kServiceLimits);
    o.worker_prefetch = in_.ConsumeIntegralInRange(1, 3);
    static constexpr std::size_t kWorkerLimits[] = {1, 2, 10'000};
    o.max_workers = in_.PickValueInArray(kWorkerLimits);
    o.reply_timeout =
        in_.ConsumeBool() ? Broker::Duration(500) : Broker::Duration(60'000);
    static constexpr std::size_t kClientLimits[] = {1, 3, 10'000};
    o.max_requests_per_client = in_.PickValueInArray(kClientLimits);
    options_ = o;

    zb::Reactor reactor;
    absl::StatusOr<std::unique_ptr<Broker>> created =
        Broker::Create(reactor, context, o);
    Check(created.ok(), "create");
    std::unique_ptr<Broker> broker = *std::move(created);
    broker->set_log_hook([](zb::LogLevel, std::string_view) {});
    Clock::time_point now = Clock::now();
    broker->SetClockForTesting([&now] { return now; });
    static int endpoint_counter = 0;
    const std::string endpoint =
        absl::StrFormat("inproc://majordomo-fuzz-%d", endpoint_counter++);
    Check(broker->Bind(endpoint).ok(), "bind");
    for (std::string_view id : kIdentities) {
      Peer& p = peers_.emplace_back();
      p.identity = std::string(id);
      if (peers_.size() > kConnected) continue;
      p.dealer = zb::fuzz::ConnectPeer(context, p.identity, endpoint);
    }
    // Hand-shake: an mmi request from each socket through the reactor, so
    // that the ROUTER has attached every peer before messages are injected.
    for (std::size_t i = 0; i < kConnected; ++i) {
      zb::Frames request = zb::MakeFrames({"x"});
      zb::Frames out;
      zb::mdp::AppendClientRequest("mmi.handshake", request, &out);
      Check(zb::SendFrames(*peers_[i].dealer, out).ok(), "hand-shake send");
      ++peers_[i].accepted;
    }
    for (int round = 0; broker->stats().replies < kConnected; ++round) {
      Check(round < 10000, "hand-shake: the broker did not see every peer");
      Check(reactor.RunOnce(std::chrono::milliseconds(0)).ok(), "run_once");
    }
    DrainPeers();

    for (std::size_t op = 0; op < kMaxOps && in_.remaining_bytes() > 0; ++op) {
      const int kind = in_.ConsumeIntegralInRange(0, 13);
      if (kind == 12) {
        const Clock::duration steps[] = {Clock::duration(0),
                                         std::chrono::milliseconds(1),
                                         kHeartbeat,
                                         kHeartbeat * o.heartbeat_liveness,
                                         o.queue_expiry + kHeartbeat,
                                         o.reply_timeout + kHeartbeat};
        now += in_.PickValueInArray(steps);
        broker->SweepForTesting();
      } else if (kind == 13) {
        // No grace: the broker then drains at the end, when the harness
        // runs the reactor (which fires the drain timer).
        if (in_.ConsumeIntegralInRange(0, 7) == 0) {
          broker->Drain(Broker::Duration(0), nullptr);
        }
      } else {
        const std::size_t who =
            in_.ConsumeIntegralInRange<std::size_t>(0, peers_.size() - 1);
        Peer& p = peers_[who];
        zb::Frames frames = MakeMessage(kind, p);
        const std::uint64_t before = broker->stats().requests;
        broker->HandleForTesting(frames);
        const std::uint64_t accepted = broker->stats().requests - before;
        Check(accepted <= 1, "one message, several requests accepted");
        p.accepted += accepted;
        if (accepted == 1) clients_.insert(p.identity);
      }
      DrainPeers();
      CheckInvariants(*broker, /*final=*/false);
    }

    // No grace (also for a drain an operation started): the drain timer
    // fires on the next loop iteration.
    broker->Drain(Broker::Duration(0), nullptr);
    for (int round = 0; !broker->drained(); ++round) {
      Check(round < 10000, "the drain did not finish");
      Check(reactor.RunOnce(std::chrono::milliseconds(0)).ok(), "run_once");
    }
    DrainPeers();
    CheckInvariants(*broker, /*final=*/true);
  }

 private:
  std::string Service() { return zb::fuzz::Service(in_); }

  std::string Address(Peer& p) {
    if (!p.given.empty() && in_.ConsumeIntegralInRange(0, 5) != 0) {
      return p.given[in_.ConsumeIntegralInRange<std::size_t>(
          0, p.given.size() - 1)];
    }
    if (in_.ConsumeBool()) {
      return std::string(in_.PickValueInArray(kIdentities));
    }
    return in_.ConsumeRandomLengthString(8);
  }

  // [identity][""][body...] of one operation.
  zb::Frames MakeMessage(int kind, Peer& p) {
    zb::Frames f;
    f.push_back(zb::Frame(p.identity));
    f.emplace_back();
    auto tag = [&](std::string_view t) { f.push_back(zb::Frame(t)); };
    auto command = [&](zb::mdp::Command c) {
      const char byte = static_cast<char>(c);
      f.push_back(zb::Frame(std::string_view(&byte, 1)));
    };
    switch (kind) {
      case 0:
      case 1:  // client REQUEST
        tag(zb::mdp::kClientTag);
        f.push_back(zb::Frame(Service()));
        zb::fuzz::AppendBody(in_, f, 1);
        break;
      case 2:  // client REQUEST with a request tag (zbrokers extension)
        tag(zb::mdp::kTaggedClientTag);
        f.push_back(zb::Frame(Service()));
        f.push_back(zb::Frame(in_.ConsumeRandomLengthString(4)));
        zb::fuzz::AppendBody(in_, f, 1);
        break;
      case 3:  // mmi
        tag(zb::mdp::kClientTag);
        f.push_back(
            zb::Frame(in_.ConsumeBool() ? zb::mdp::kMmiService : "mmi.other"));
        f.push_back(zb::Frame(Service()));
        break;
      case 4:
        tag(zb::mdp::kWorkerTag);
        command(zb::mdp::Command::kReady);
        f.push_back(zb::Frame(Service()));
        break;
      case 5:
      case 6: {
        tag(zb::mdp::kWorkerTag);
        command(zb::mdp::Command::kReply);
        f.push_back(zb::Frame(Address(p)));
        f.emplace_back();
        zb::fuzz::AppendBody(in_, f, 1);
        break;
      }
      case 7:
        tag(zb::mdp::kWorkerTag);
        command(zb::mdp::Command::kHeartbeat);
        break;
      case 8:
        tag(zb::mdp::kWorkerTag);
        command(zb::mdp::Command::kDisconnect);
        break;
      case 9:
        tag(zb::mdp::kWorkerTag);
        command(zb::mdp::Command::kRequest);
        f.push_back(zb::Frame(Address(p)));
        f.emplace_back();
        zb::fuzz::AppendBody(in_, f, 1);
        break;
      default:  // arbitrary frames after the identity
        f.pop_back();
        zb::fuzz::AppendArbitraryFrames(in_, f);
        break;
    }
    zb::fuzz::MaybeDamageOneFrame(in_, f);
    return f;
  }

  void DrainPeers() {
    for (Peer& p : peers_) {
      if (!p.dealer) continue;
      zb::fuzz::ReceiveQueued(
          *p.dealer, [&](zb::Frames& frames) { OnReceived(p, frames); });
    }
  }

  void OnReceived(Peer& p, zb::Frames& frames) {
    absl::StatusOr<zb::mdp::Protocol> protocol =
        zb::mdp::ClassifyMessage(frames);
    if (!protocol.ok()) {
      Fail(absl::StrFormat("the broker sent %s an unclassifiable message: %s",
                           p.identity, protocol.status().ToString()));
    }
    if (*protocol != zb::mdp::Protocol::kWorker) {
      absl::StatusOr<zb::mdp::ClientMessage> m =
          *protocol == zb::mdp::Protocol::kClient
              ? zb::mdp::ParseClient(frames)
              : zb::mdp::ParseTaggedClient(frames);
      Check(m.ok(), "the broker sent a malformed client reply");
      ++p.replies;
      ++replies_received_;
      if (p.replies > p.accepted) {
        Fail(
            absl::StrFormat("%s received reply #%d, had %d request(s) "
                            "accepted",
                            p.identity, p.replies, p.accepted));
      }
      return;
    }
    absl::StatusOr<zb::mdp::WorkerMessage> m = zb::mdp::ParseWorker(frames);
    if (!m.ok()) {
      Fail(absl::StrFormat("the broker sent %s a malformed worker message: %s",
                           p.identity, m.status().ToString()));
    }
    switch (m->command) {
      case zb::mdp::Command::kRequest: {
        std::string address(zb::View(*m->address));
        if (!clients_.contains(address)) {
          Fail("a REQUEST names a client that had no request accepted");
        }
        p.given.push_back(std::move(address));
        if (p.given.size() > 16) p.given.erase(p.given.begin());
        break;
      }
      case zb::mdp::Command::kHeartbeat:
      case zb::mdp::Command::kDisconnect:
        break;
      default:
        Fail("the broker sent a worker READY or REPLY");
    }
  }

  void CheckInvariants(const Broker& broker, bool final) {
    const Broker::Stats s = broker.stats();
    const std::uint64_t open = broker.open_requests();
    const std::uint64_t answered =
        s.replies + s.failures + s.expired + s.dropped_queue_full +
        s.dropped_max_services + s.dropped_max_requests_per_client;
    const std::uint64_t refused = s.unroutable + s.dropped_full_pipe;
    if (answered + open > s.requests ||
        s.requests > answered + open + refused) {
      Fail(absl::StrFormat(
          "requests %d, replies %d + failures %d + expired %d + dropped %d + "
          "%d + open %d, unroutable %d + full pipe %d",
          s.requests, s.replies, s.failures, s.expired, s.dropped_queue_full,
          s.dropped_max_services, open, s.unroutable, s.dropped_full_pipe));
    }
    if (final) Check(open == 0, "requests open after the drain");
    Check(s.clients <= kIdentities.size(), "client records for no client");
    std::size_t workers = 0;
    std::size_t queued = 0;
    for (const auto& [name, svc] : s.services) {
      workers += svc.workers;
      queued += svc.queued;
      Check(svc.idle_workers <= svc.workers, "more idle workers than workers");
      if (svc.workers == 0 && svc.queued == 0) {
        Fail("a service with neither workers nor queued requests is kept");
      }
    }
    Check(s.services.size() <= options_.max_services, "services over the cap");
    Check(queued <= open, "queued requests over open_requests()");
    if (workers != s.workers_joined - s.workers_left - s.workers_expired -
                       s.workers_disconnected) {
      Fail(
          absl::StrFormat("%d workers registered, joined %d - left %d - "
                          "expired %d - disconnected %d",
                          workers, s.workers_joined, s.workers_left,
                          s.workers_expired, s.workers_disconnected));
    }
    Check(workers <= peers_.size(), "more workers than identities");
    Check(workers <= options_.max_workers, "workers over the cap");
    if (replies_received_ != s.replies) {
      Fail(absl::StrFormat("%d replies received, the broker counts %d",
                           replies_received_, s.replies));
    }
  }

  FuzzedDataProvider& in_;
  Broker::Options options_;
  std::vector<Peer> peers_;
  std::set<std::string> clients_;  // identities with a request accepted
  std::uint64_t replies_received_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  FuzzedDataProvider in(data, size);
  Harness(in).Run();
  return 0;
}
