// Copyright 2026 The zbrokers Authors.

#include "zbrokers/ha/node.h"

#include <cstdio>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "zbrokers/common/endpoint.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/ha/codec.h"

namespace zb {
namespace {

absl::Status Invalid(std::string_view member, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(member), ": ", std::string(why)));
}

std::string FormatMs(std::chrono::milliseconds d) {
  return absl::StrFormat("%d ms", d.count());
}

}  // namespace

absl::StatusOr<std::unique_ptr<BinaryStarNode>> BinaryStarNode::Create(
    Reactor& reactor, zmq::context_t& context, Options options) {
  if (options.state_endpoint.empty()) {
    return Invalid("state_endpoint", "is empty");
  }
  if (options.peer_state_endpoint.empty()) {
    return Invalid("peer_state_endpoint", "is empty");
  }
  if (absl::Status s = CheckEndpoint(options.state_endpoint); !s.ok()) {
    return Invalid("state_endpoint", std::string(s.message()));
  }
  if (absl::Status s = CheckEndpoint(options.peer_state_endpoint); !s.ok()) {
    return Invalid("peer_state_endpoint", std::string(s.message()));
  }
  if (options.state_endpoint == options.peer_state_endpoint) {
    return Invalid("peer_state_endpoint",
                   "is our own state_endpoint: a node would hear itself");
  }
  if (options.heartbeat_interval.count() <= 0) {
    return Invalid("heartbeat_interval",
                   absl::StrCat("must be positive, got ",
                                FormatMs(options.heartbeat_interval)));
  }
  if (options.peer_expiry <= options.heartbeat_interval) {
    return Invalid("peer_expiry",
                   absl::StrCat("must be longer than heartbeat_interval (",
                                FormatMs(options.heartbeat_interval), "), got ",
                                FormatMs(options.peer_expiry)));
  }
  absl::StatusOr<std::unique_ptr<BinaryStar>> star = BinaryStar::Create(
      {.role = options.role, .peer_expiry = options.peer_expiry}, Clock::now());
  if (!star.ok()) return star.status();
  std::unique_ptr<BinaryStarNode> node(
      new BinaryStarNode(reactor, std::move(options), *std::move(star)));
  if (absl::Status s = node->Init(context); !s.ok()) return s;
  return node;
}

BinaryStarNode::BinaryStarNode(Reactor& reactor, Options options,
                               std::unique_ptr<BinaryStar> star)
    : reactor_(reactor),
      options_(std::move(options)),
      star_(std::move(star)),
      state_(star_->state()) {}

absl::Status BinaryStarNode::Init(zmq::context_t& context) {
  try {
    pub_ = zmq::socket_t(context, zmq::socket_type::pub);
    pub_.set(zmq::sockopt::linger, 0);
    // A peer that is not reading needs only the newest state; a few
    // messages of slack are plenty.
    pub_.set(zmq::sockopt::sndhwm, 16);
    SetIpv6For(pub_, options_.state_endpoint);
    try {
      pub_.bind(options_.state_endpoint);
    } catch (const zmq::error_t& e) {
      return absl::UnavailableError(
          absl::StrFormat("cannot bind state_endpoint %s: %s",
                          options_.state_endpoint, e.what()));
    }
    bound_endpoint_ = pub_.get(zmq::sockopt::last_endpoint);

  } catch (const zmq::error_t& e) {
    return absl::InternalError(absl::StrCat("ha sockets: ", e.what()));
  }
  context_ = &context;
  if (absl::Status s = OpenSub(); !s.ok()) return s;
  heartbeat_ =
      *reactor_.Every(options_.heartbeat_interval, [this] { OnHeartbeat(); });
  channel_ = ReplyChannel<BinaryStarNode>::Open(reactor_, *this);
  channel_ref_ = channel_.channel();
  Publish();  // the peer learns of us at once, not one interval later
  return absl::OkStatus();
}

absl::Status BinaryStarNode::OpenSub() {
  sub_watch_.Reset();
  try {
    sub_ = zmq::socket_t(*context_, zmq::socket_type::sub);
    sub_.set(zmq::sockopt::linger, 0);
    sub_.set(zmq::sockopt::rcvhwm, 16);
    sub_.set(zmq::sockopt::maxmsgsize,
             static_cast<std::int64_t>(hap::kMaxFrameSize));
    sub_.set(zmq::sockopt::subscribe, "");
    SetIpv6For(sub_, options_.peer_state_endpoint);
    try {
      sub_.connect(options_.peer_state_endpoint);
    } catch (const zmq::error_t& e) {
      return absl::InvalidArgumentError(
          absl::StrFormat("cannot connect to peer_state_endpoint %s: %s",
                          options_.peer_state_endpoint, e.what()));
    }
  } catch (const zmq::error_t& e) {
    return absl::InternalError(absl::StrCat("ha SUB socket: ", e.what()));
  }
  absl::StatusOr<Reactor::SocketWatch> watch = reactor_.Add(
      sub_,
      [this](std::span<zmq::message_t> frames) { OnPeerMessage(frames); });
  if (!watch.ok()) return watch.status();
  sub_watch_ = *std::move(watch);
  last_heard_ = Clock::now();
  return absl::OkStatus();
}

void BinaryStarNode::OnHeartbeat() {
  Publish();
  if (Clock::now() - last_heard_ < options_.peer_expiry) return;
  // Silent for an expiry: maybe dead, maybe a connection libzmq gave up on
  // for good (see the header).  A fresh socket costs one connect.
  if (absl::Status s = OpenSub(); !s.ok()) {
    Log(LogLevel::kError,
        absl::StrCat("cannot reopen the peer link: ", s.message()));
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++link_reopens_;
}

BinaryStarNode::~BinaryStarNode() {
  channel_.Close();
  heartbeat_.Reset();
  sub_watch_.Reset();
}

bool BinaryStarNode::AllowClientRequest() {
  if (state_.load(std::memory_order_acquire) == HaState::kActive) return true;
  BinaryStar::Outcome o;
  {
    std::lock_guard<std::mutex> lock(mu_);
    o = star_->Feed(HaEvent::kClientRequest, Clock::now());
    state_.store(star_->state(), std::memory_order_release);
  }
  if (o.changed()) {
    // Logged, hooked and published on the node's own thread.
    channel_ref_->Send([o](BinaryStarNode& n) { n.Report(o); });
  }
  return o.serve;
}

BinaryStarNode::Stats BinaryStarNode::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s;
  static_cast<BinaryStar::Stats&>(s) = star_->stats();
  s.malformed = malformed_;
  s.states_sent = states_sent_;
  s.states_received = states_received_;
  s.link_reopens = link_reopens_;
  return s;
}

void BinaryStarNode::OnPeerMessage(std::span<zmq::message_t> frames) {
  absl::StatusOr<hap::StateMessage> m = hap::Parse(frames);
  const Clock::time_point now = Clock::now();
  if (!m.ok()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++malformed_;
    }
    if (malformed_log_.Admit(now)) {
      Log(LogLevel::kWarning,
          absl::StrCat("dropped a malformed state message from ",
                       options_.peer_state_endpoint, ": ", m.status().message(),
                       malformed_log_.SuppressedNote()));
    }
    return;
  }
  last_heard_ = now;
  BinaryStar::Outcome o;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++states_received_;
    o = star_->FeedPeer(m->state, m->role, now);
    state_.store(star_->state(), std::memory_order_release);
  }
  if (o.role_conflict && conflict_log_.Admit(now)) {
    Log(LogLevel::kError,
        absl::StrCat("the peer at ", options_.peer_state_endpoint,
                     " is configured as ", std::string(HaRoleName(m->role)),
                     " too: one broker of the pair must be the primary and "
                     "the other the backup; neither takes over while this "
                     "lasts",
                     conflict_log_.SuppressedNote()));
  }
  if (o.split_brain || o.changed()) Report(o);
}

void BinaryStarNode::Publish() {
  std::vector<zmq::message_t> frames =
      hap::Encode({.state = state(), .role = options_.role});
  const absl::Status s = SendFrames(pub_, frames);
  if (s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    ++states_sent_;
  }
}

void BinaryStarNode::Report(const BinaryStar::Outcome& o) {
  if (o.split_brain) {
    Log(LogLevel::kError,
        absl::StrCat("split brain: the peer is active too (",
                     std::string(HaRoleName(role())), " here); ",
                     role() == HaRole::kBackup
                         ? "the backup steps down to passive"
                         : "the primary stays active, the backup steps down"));
  }
  if (!o.changed()) return;
  // The hook first: whoever reads the log line and then what the hook
  // published (the daemon's zb_ha_state gauge) must find the new state.
  if (state_hook_) state_hook_(o.before, o.after);
  std::string why;
  if (o.failover) {
    why = " (fail-over: took over from the peer)";
  }
  Log(LogLevel::kInfo,
      absl::StrCat("state ", std::string(HaStateName(o.before)), " -> ",
                   std::string(HaStateName(o.after)), why));
  Publish();
}

void BinaryStarNode::Log(LogLevel level, std::string_view line) {
  if (log_hook_) {
    log_hook_(level, line);
    return;
  }
  if (level >= LogLevel::kWarning) {
    std::fprintf(
        stderr, "ha %.*s: %.*s\n", static_cast<int>(LogLevelName(level).size()),
        LogLevelName(level).data(), static_cast<int>(line.size()), line.data());
  }
}

}  // namespace zb
