// Copyright 2026 The zbrokers Authors.

#include "zbrokers/majordomo/worker.h"

#include <string>
#include <utility>
#include <vector>

#include "brokers/common/dealer.h"
#include "zbrokers/common/endpoint.h"
#include "zbrokers/majordomo/codec.h"

namespace zb {

class MdpWorker::Core {
 public:
  Core(Reactor& reactor, zmq::context_t& context, std::string service,
       Handler handler, Options options)
      : reactor_(reactor),
        context_(context),
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

  // Opens one session per endpoint: each connects, sends READY and starts
  // heartbeating (MdpWorker::Create).
  absl::Status Start(std::vector<std::string> endpoints) {
    stats_.brokers = endpoints.size();
    sessions_.reserve(endpoints.size());
    for (std::string& ep : endpoints) {
      const auto index = static_cast<std::uint32_t>(sessions_.size());
      sessions_.push_back(std::make_unique<Session>(*this, index, ep));
      // On an error the worker goes, and every session started so far sends
      // its DISCONNECT.
      if (absl::Status s = sessions_.back()->Start(); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  void Shutdown() {
    if (stopped_) return;
    stopped_ = true;
    for (const std::unique_ptr<Session>& session : sessions_) {
      session->Shutdown();
    }
  }

  Stats stats() const { return stats_; }

  // A reply made by a Replier, on the reactor thread: sent through the
  // session its request came on, now or once the earlier requests of the
  // same client are answered.
  void SendReply(zmq::message_t address, std::uint32_t session,
                 std::uint64_t epoch, std::uint64_t seq, Frames body) {
    sessions_[session]->SendReply(std::move(address), epoch, seq,
                                  std::move(body));
  }

  // A Replier of connection `epoch` of `session` was dropped without a
  // reply: that session gives its requests back.
  void Abandon(std::uint32_t session, std::uint64_t epoch) {
    sessions_[session]->Abandon(epoch);
  }

 private:
  // One broker of the endpoint list: its socket, READY, heartbeats,
  // liveness, reconnects and the requests it handed out.  What every
  // session shares (handler, reply channel, counters, scratch frames) is
  // the Core's.  The Core owns one per endpoint for its whole life, so a
  // session's index in sessions_ names it in Repliers.
  class Session {
   public:
    Session(Core& core, std::uint32_t index, std::string endpoint)
        : core_(core), index_(index), endpoint_(std::move(endpoint)) {}
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    absl::Status Start() {
      absl::Status s = Connect();
      if (!s.ok()) return s;
      tick_timer_ = *core_.reactor_.Every(core_.options_.heartbeat_interval,
                                          [this] { Tick(); });
      return absl::OkStatus();
    }

    void Shutdown() {
      tick_timer_.Reset();
      reconnect_timer_.Reset();
      if (socket_) {
        Frames& out = core_.out_;
        out.clear();
        mdp::AppendDisconnect(&out);
        SendFrames(socket_, out).IgnoreError();
        Close();
      }
    }

    void SendReply(zmq::message_t address, std::uint64_t epoch,
                   std::uint64_t seq, Frames body) {
      Stats& stats = core_.stats_;
      if (epoch != epoch_ || !socket_ || core_.stopped_) {
        ++stats.dropped_replies;
        return;
      }
      if (body.empty()) body.emplace_back();
      std::size_t i = 0;
      while (i < inflight_.size() && inflight_[i].seq != seq) ++i;
      if (i == inflight_.size()) {
        ++stats.dropped_replies;  // not a request of this connection
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
    // redispatches what this session held.
    void Abandon(std::uint64_t epoch) {
      if (epoch != epoch_ || !socket_ || core_.stopped_) return;  // gone
      ++core_.stats_.abandoned;
      Frames& out = core_.out_;
      out.clear();
      mdp::AppendDisconnect(&out);
      SendFrames(socket_, out).IgnoreError();
      Reconnect();
    }

   private:
    absl::Status Connect() {
      const Options& options = core_.options_;
      absl::StatusOr<WatchedDealer> dealer = OpenWatchedDealer(
          core_.reactor_, core_.context_, endpoint_,
          {.max_message_size = options.max_message_size,
           .curve = options.curve},
          "MdpWorker", [this](std::span<zmq::message_t> f) { OnMessage(f); });
      if (!dealer.ok()) return dealer.status();
      socket_ = std::move(dealer->socket);
      socket_watch_ = std::move(dealer->watch);
      ++epoch_;
      missed_ticks_ = 0;
      heard_since_tick_ = false;
      Frames& out = core_.out_;
      out.clear();
      mdp::AppendReady(core_.service_, &out);
      SendFrames(socket_, out).IgnoreError();  // queued until connected
      sent_since_tick_ = true;
      return absl::OkStatus();
    }

    void Close() {
      SetConnected(false);
      socket_watch_.Reset();
      socket_.close();
      inflight_.clear();
    }

    // Counts this broker in Stats::brokers_connected, or no longer.
    void SetConnected(bool connected) {
      if (connected == connected_) return;
      connected_ = connected;
      if (connected) {
        ++core_.stats_.brokers_connected;
      } else {
        --core_.stats_.brokers_connected;
      }
    }

    // A request of the current connection, in arrival order, until its
    // reply is sent.
    struct InFlight {
      std::uint64_t seq = 0;
      std::string client;  // its client address (REPLYs are settled per
                           // client)
      bool answered = false;
      bool sent = false;
      zmq::message_t address;
      Frames reply;
    };

    void Send(InFlight& f) {
      f.sent = true;
      Frames& out = core_.out_;
      out.clear();
      mdp::AppendReply(std::move(f.address), f.reply, &out);
      if (SendFrames(socket_, out).ok()) {
        ++core_.stats_.replies;
        sent_since_tick_ = true;
      } else {
        ++core_.stats_.dropped_replies;
      }
    }

    // Closes the connection and opens a new one after reconnect_delay.
    void Reconnect() {
      if (socket_) Close();
      ++epoch_;  // replies in flight belong to the old connection
      if (reconnect_timer_) return;
      reconnect_timer_ =
          *core_.reactor_.After(core_.options_.reconnect_delay, [this] {
            reconnect_timer_.Release();  // fired: nothing left to cancel
            if (core_.stopped_) return;
            ++core_.stats_.reconnects;
            if (!Connect().ok()) Reconnect();
          });
    }

    void OnMessage(std::span<zmq::message_t> frames) {
      heard_since_tick_ = true;
      Stats& stats = core_.stats_;
      absl::StatusOr<mdp::WorkerMessage> m = mdp::ParseWorker(frames);
      if (!m.ok()) {
        ++stats.malformed;
        return;
      }
      switch (m->command) {
        case mdp::Command::kRequest: {
          SetConnected(true);
          ++stats.requests;
          InFlight& f = inflight_.emplace_back();
          f.seq = ++next_seq_;
          f.client.assign(View(*m->address));
          Replier r;
          r.channel_ = core_.channel_.channel();
          r.address_ = std::move(*m->address);
          r.session_ = index_;
          r.epoch_ = epoch_;
          r.seq_ = f.seq;
          Frames body;
          body.reserve(m->body.size());
          for (auto& f : m->body) body.push_back(std::move(f));
          core_.handler_(std::move(body), std::move(r));
          return;
        }
        case mdp::Command::kHeartbeat:
          SetConnected(true);
          return;
        case mdp::Command::kDisconnect:
          ++stats.disconnects_received;
          Reconnect();
          return;
        case mdp::Command::kReady:
        case mdp::Command::kReply:
          ++stats.malformed;  // not something a broker sends
          return;
      }
    }

    void Tick() {
      if (!socket_) return;  // waiting to reconnect
      if (heard_since_tick_) {
        missed_ticks_ = 0;
      } else if (++missed_ticks_ >= core_.options_.heartbeat_liveness) {
        Reconnect();
        return;
      }
      heard_since_tick_ = false;
      if (!sent_since_tick_) {
        Frames& out = core_.out_;
        out.clear();
        mdp::AppendHeartbeat(&out);
        SendFrames(socket_, out).IgnoreError();
      }
      sent_since_tick_ = false;
    }

    Core& core_;
    const std::uint32_t index_;  // in core_.sessions_
    const std::string endpoint_;
    zmq::socket_t socket_;
    // The socket's registration; declared after it, so it goes first.
    Reactor::SocketWatch socket_watch_;
    std::uint64_t epoch_ = 0;
    std::vector<InFlight> inflight_;  // current connection, arrival order
    std::uint64_t next_seq_ = 0;
    Reactor::Timer tick_timer_;
    Reactor::Timer reconnect_timer_;
    int missed_ticks_ = 0;
    bool heard_since_tick_ = false;
    bool sent_since_tick_ = false;
    bool connected_ = false;  // counted in Stats::brokers_connected
  };

  Reactor& reactor_;
  zmq::context_t& context_;
  const std::string service_;
  Handler handler_;
  Options options_;

  Frames out_;  // the message being sent; reused by every session
  bool stopped_ = false;
  Stats stats_;
  // A session uses everything above, so it is declared after it.
  std::vector<std::unique_ptr<Session>> sessions_;
  // Carries what Repliers answer, from any thread.  Closed first by ~Core.
  ReplyChannel<Core>::Binding channel_;
};

MdpWorker::Replier::Replier(Replier&& other) noexcept
    : channel_(std::move(other.channel_)),
      address_(std::move(other.address_)),
      session_(other.session_),
      epoch_(other.epoch_),
      seq_(other.seq_) {}

MdpWorker::Replier& MdpWorker::Replier::operator=(Replier&& other) noexcept {
  if (this != &other) {
    Abandon();  // the request this one held, if unanswered
    channel_ = std::move(other.channel_);
    address_ = std::move(other.address_);
    session_ = other.session_;
    epoch_ = other.epoch_;
    seq_ = other.seq_;
  }
  return *this;
}

MdpWorker::Replier::~Replier() { Abandon(); }

void MdpWorker::Replier::Abandon() {
  std::shared_ptr<ReplyChannel<Core>> channel = std::move(channel_);
  if (!channel) return;
  channel->Send([session = session_, epoch = epoch_](Core& core) {
    core.Abandon(session, epoch);
  });
}

bool MdpWorker::Replier::Reply(Frames body) {
  std::shared_ptr<ReplyChannel<Core>> channel = std::move(channel_);
  if (!channel) return false;
  // On the reactor thread this runs before Send() returns; elsewhere it is
  // posted with the reply inside, and dropped if the worker is gone by then.
  channel->Send([address = std::move(address_), session = session_,
                 epoch = epoch_, seq = seq_,
                 body = std::move(body)](Core& core) mutable {
    core.SendReply(std::move(address), session, epoch, seq, std::move(body));
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
  absl::StatusOr<std::vector<std::string>> endpoints =
      SplitEndpointList(endpoint);
  if (!endpoints.ok()) {
    return absl::InvalidArgumentError(
        "MdpWorker: " + std::string(endpoints.status().message()));
  }
  auto core = std::make_unique<Core>(reactor, context, std::move(service),
                                     std::move(handler), options);
  if (absl::Status s = core->Start(*std::move(endpoints)); !s.ok()) return s;
  return std::unique_ptr<MdpWorker>(new MdpWorker(std::move(core)));
}

MdpWorker::~MdpWorker() = default;

void MdpWorker::Shutdown() { core_->Shutdown(); }
MdpWorker::Stats MdpWorker::stats() const { return core_->stats(); }

}  // namespace zb
