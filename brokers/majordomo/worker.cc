// Copyright 2026 The zbrokers Authors.

#include "zbrokers/majordomo/worker.h"

#include <string>
#include <utility>
#include <vector>

#include "brokers/common/dealer.h"
#include "zbrokers/majordomo/codec.h"

namespace zb {

class MdpWorker::Core {
 public:
  Core(Reactor& reactor, zmq::context_t& context, std::string endpoint,
       std::string service, Handler handler, Options options)
      : reactor_(reactor),
        context_(context),
        endpoint_(std::move(endpoint)),
        service_(std::move(service)),
        handler_(std::move(handler)),
        options_(options),
        channel_(ReplyChannel<Core>::Open(reactor_, *this)) {
    if (options_.heartbeat_interval.count() <= 0) {
      options_.heartbeat_interval = std::chrono::milliseconds(1);
    }
    if (options_.heartbeat_liveness < 1) options_.heartbeat_liveness = 1;
  }

  // Repliers answering from now on find no worker (as their answers to a
  // stopped one would be dropped anyway).
  ~Core() {
    channel_.Close();
    Shutdown();
  }

  // Connects, sends READY and starts heartbeating (MdpWorker::Create).
  absl::Status Start() {
    absl::Status s = Connect();
    if (!s.ok()) return s;
    tick_timer_ =
        *reactor_.Every(options_.heartbeat_interval, [this] { Tick(); });
    return absl::OkStatus();
  }

  void Shutdown() {
    if (stopped_) return;
    stopped_ = true;
    tick_timer_.Reset();
    reconnect_timer_.Reset();
    if (socket_) {
      Frames f;
      mdp::AppendDisconnect(&f);
      SendFrames(socket_, f).IgnoreError();
      Close();
    }
  }

  Stats stats() const { return stats_; }

  // A reply made by a Replier, on the reactor thread: sent now, or held
  // until the earlier requests of the same client are answered.
  void SendReply(zmq::message_t address, std::uint64_t epoch, std::uint64_t seq,
                 Frames body) {
    if (epoch != epoch_ || !socket_ || stopped_) {
      ++stats_.dropped_replies;
      return;
    }
    if (body.empty()) body.emplace_back();
    std::size_t i = 0;
    while (i < inflight_.size() && inflight_[i].seq != seq) ++i;
    if (i == inflight_.size()) {
      ++stats_.dropped_replies;  // not a request of this connection
      return;
    }
    InFlight& mine = inflight_[i];
    mine.answered = true;
    mine.reply = std::move(body);
    mine.address = std::move(address);
    // Send what is now first for its client: this reply, unless an earlier
    // request of the same client is unanswered, and after it the answered
    // ones of that client that waited for it.
    const std::string_view client = mine.client;
    bool blocked = false;
    for (std::size_t j = 0; j < inflight_.size(); ++j) {
      InFlight& f = inflight_[j];
      if (f.sent || f.client != client) continue;
      if (!f.answered) {
        blocked = true;
        continue;
      }
      if (blocked) break;
      Send(f);
    }
    std::erase_if(inflight_, [](const InFlight& f) { return f.sent; });
  }

  // A Replier of connection `epoch` was dropped without a reply: give the
  // request back (DISCONNECT, then a new connection), so that the broker
  // redispatches what this worker held.
  void Abandon(std::uint64_t epoch) {
    if (epoch != epoch_ || !socket_ || stopped_) return;  // already gone
    ++stats_.abandoned;
    out_.clear();
    mdp::AppendDisconnect(&out_);
    SendFrames(socket_, out_).IgnoreError();
    Reconnect();
  }

  Reactor& reactor() { return reactor_; }

 private:
  absl::Status Connect() {
    absl::StatusOr<zmq::socket_t> socket =
        OpenDealer(context_, endpoint_,
                   {.max_message_size = options_.max_message_size,
                    .curve = options_.curve},
                   "MdpWorker");
    if (!socket.ok()) return socket.status();
    socket_ = *std::move(socket);
    ++epoch_;
    absl::StatusOr<Reactor::SocketWatch> watch = reactor_.Add(
        socket_, [this](std::span<zmq::message_t> f) { OnMessage(f); });
    if (!watch.ok()) return watch.status();
    socket_watch_ = *std::move(watch);
    missed_ticks_ = 0;
    heard_since_tick_ = false;
    out_.clear();
    mdp::AppendReady(service_, &out_);
    SendFrames(socket_, out_).IgnoreError();  // queued until connected
    sent_since_tick_ = true;
    return absl::OkStatus();
  }

  void Close() {
    socket_watch_.Reset();
    socket_.close();
    inflight_.clear();
  }

  // A request of the current connection, in arrival order, until its reply
  // is sent.
  struct InFlight {
    std::uint64_t seq = 0;
    std::string client;  // its client address (REPLYs are settled per client)
    bool answered = false;
    bool sent = false;
    zmq::message_t address;
    Frames reply;
  };

  void Send(InFlight& f) {
    f.sent = true;
    out_.clear();
    mdp::AppendReply(std::move(f.address), f.reply, &out_);
    if (SendFrames(socket_, out_).ok()) {
      ++stats_.replies;
      sent_since_tick_ = true;
    } else {
      ++stats_.dropped_replies;
    }
  }

  // Closes the connection and opens a new one after reconnect_delay.
  void Reconnect() {
    if (socket_) Close();
    ++epoch_;  // replies in flight belong to the old connection
    if (reconnect_timer_) return;
    reconnect_timer_ = *reactor_.After(options_.reconnect_delay, [this] {
      reconnect_timer_.Release();  // fired: nothing left to cancel
      if (stopped_) return;
      ++stats_.reconnects;
      if (!Connect().ok()) Reconnect();
    });
  }

  void OnMessage(std::span<zmq::message_t> frames) {
    heard_since_tick_ = true;
    absl::StatusOr<mdp::WorkerMessage> m = mdp::ParseWorker(frames);
    if (!m.ok()) {
      ++stats_.malformed;
      return;
    }
    switch (m->command) {
      case mdp::Command::kRequest: {
        ++stats_.requests;
        InFlight& f = inflight_.emplace_back();
        f.seq = ++next_seq_;
        f.client.assign(View(*m->address));
        Replier r;
        r.channel_ = channel_.channel();
        r.address_ = std::move(*m->address);
        r.epoch_ = epoch_;
        r.seq_ = f.seq;
        Frames body;
        body.reserve(m->body.size());
        for (auto& f : m->body) body.push_back(std::move(f));
        handler_(std::move(body), std::move(r));
        return;
      }
      case mdp::Command::kHeartbeat:
        return;
      case mdp::Command::kDisconnect:
        ++stats_.disconnects_received;
        Reconnect();
        return;
      case mdp::Command::kReady:
      case mdp::Command::kReply:
        ++stats_.malformed;  // not something a broker sends
        return;
    }
  }

  void Tick() {
    if (!socket_) return;  // waiting to reconnect
    if (heard_since_tick_) {
      missed_ticks_ = 0;
    } else if (++missed_ticks_ >= options_.heartbeat_liveness) {
      Reconnect();
      return;
    }
    heard_since_tick_ = false;
    if (!sent_since_tick_) {
      out_.clear();
      mdp::AppendHeartbeat(&out_);
      SendFrames(socket_, out_).IgnoreError();
    }
    sent_since_tick_ = false;
  }

  Reactor& reactor_;
  zmq::context_t& context_;
  const std::string endpoint_;
  const std::string service_;
  Handler handler_;
  Options options_;

  zmq::socket_t socket_;
  // The socket's registration; declared after it, so it goes first.
  Reactor::SocketWatch socket_watch_;
  std::uint64_t epoch_ = 0;
  std::vector<InFlight> inflight_;  // current connection, arrival order
  std::uint64_t next_seq_ = 0;
  Frames out_;
  Reactor::Timer tick_timer_;
  Reactor::Timer reconnect_timer_;
  int missed_ticks_ = 0;
  bool heard_since_tick_ = false;
  bool sent_since_tick_ = false;
  bool stopped_ = false;
  Stats stats_;
  // Carries what Repliers answer, from any thread.  Closed first by ~Core.
  ReplyChannel<Core>::Binding channel_;
};

MdpWorker::Replier::Replier(Replier&& other) noexcept
    : channel_(std::move(other.channel_)),
      address_(std::move(other.address_)),
      epoch_(other.epoch_),
      seq_(other.seq_) {}

MdpWorker::Replier& MdpWorker::Replier::operator=(Replier&& other) noexcept {
  if (this != &other) {
    Abandon();  // the request this one held, if unanswered
    channel_ = std::move(other.channel_);
    address_ = std::move(other.address_);
    epoch_ = other.epoch_;
    seq_ = other.seq_;
  }
  return *this;
}

MdpWorker::Replier::~Replier() { Abandon(); }

void MdpWorker::Replier::Abandon() {
  std::shared_ptr<ReplyChannel<Core>> channel = std::move(channel_);
  if (!channel) return;
  channel->Send([epoch = epoch_](Core& core) { core.Abandon(epoch); });
}

bool MdpWorker::Replier::Reply(Frames body) {
  std::shared_ptr<ReplyChannel<Core>> channel = std::move(channel_);
  if (!channel) return false;
  // On the reactor thread this runs before Send() returns; elsewhere it is
  // posted with the reply inside, and dropped if the worker is gone by then.
  channel->Send([address = std::move(address_), epoch = epoch_, seq = seq_,
                 body = std::move(body)](Core& core) mutable {
    core.SendReply(std::move(address), epoch, seq, std::move(body));
  });
  return true;
}

MdpWorker::MdpWorker(std::unique_ptr<Core> core) : core_(std::move(core)) {}

absl::StatusOr<std::unique_ptr<MdpWorker>> MdpWorker::Create(
    Reactor& reactor, zmq::context_t& context, std::string endpoint,
    std::string service, Handler handler, Options options) {
  if (service.empty()) {
    return absl::InvalidArgumentError("MdpWorker: empty service name");
  }
  if (mdp::IsMmiService(service)) {
    return absl::InvalidArgumentError(
        "MdpWorker: \"mmi.*\" services are reserved for the broker");
  }
  if (!handler) return absl::InvalidArgumentError("MdpWorker: no handler");
  auto core =
      std::make_unique<Core>(reactor, context, std::move(endpoint),
                             std::move(service), std::move(handler), options);
  if (absl::Status s = core->Start(); !s.ok()) return s;
  return std::unique_ptr<MdpWorker>(new MdpWorker(std::move(core)));
}

MdpWorker::~MdpWorker() = default;

void MdpWorker::Shutdown() { core_->Shutdown(); }
MdpWorker::Stats MdpWorker::stats() const { return core_->stats(); }

}  // namespace zb
