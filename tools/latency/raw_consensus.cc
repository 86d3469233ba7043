// Copyright 2026 The zbrokers Authors.
//
// Hand-written CCp100 fan-out; see raw_consensus.h.  Nothing here uses
// zbrokers code: the frames are built and checked inline, as a programmer
// writing this against libzmq would.

#include "tools/latency/raw_consensus.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <functional>
#include <future>
#include <random>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"

namespace zb::latency {
namespace {

// CCp100 (docs/protocols/ccp.md).
constexpr std::string_view kTag = "CCp100";
constexpr char kReady = 0x01;
constexpr char kHeartbeat = 0x02;
constexpr char kRequest = 0x03;
constexpr char kReplySuccess = 0x04;
constexpr char kReplyFailure = 0x05;
constexpr char kPing = 0x07;
constexpr std::size_t kSequenceBytes = 12;

std::string_view View(const zmq::message_t& m) {
  return {static_cast<const char*>(m.data()), m.size()};
}

// The same bytes as a key for heterogeneous lookup in an absl hash map (this
// abseil's string_view is its own type, not std::string_view).
absl::string_view Key(const zmq::message_t& m) {
  return {static_cast<const char*>(m.data()), m.size()};
}

// Sends one frame of a multipart message; false on failure (e.g. a ROUTER
// peer that is gone).  The message is emptied.
bool Send(void* socket, zmq::message_t& m, bool more) {
  return zmq_msg_send(m.handle(), socket,
                      ZMQ_DONTWAIT | (more ? ZMQ_SNDMORE : 0)) >= 0;
}

bool SendBytes(void* socket, std::string_view bytes, bool more) {
  zmq::message_t m(bytes.data(), bytes.size());
  return Send(socket, m, more);
}

// A copy of `m` (zmq_msg_copy shares large buffers instead of copying).
zmq::message_t Copy(zmq::message_t& m) {
  zmq::message_t c;
  c.copy(m);
  return c;
}

// Receives one multipart message into `frames` (grown as needed, reused).
// Returns the number of frames, 0 when nothing is waiting (EAGAIN) or on
// error.
std::size_t RecvMultipart(void* socket, std::vector<zmq::message_t>& frames,
                          int flags) {
  std::size_t n = 0;
  for (;;) {
    if (n == frames.size()) frames.emplace_back();
    if (zmq_msg_recv(frames[n].handle(), socket, flags) < 0) return 0;
    ++n;
    if (!zmq_msg_more(frames[n - 1].handle())) return n;
  }
}

std::uint32_t LoadBe32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) |
         (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

void StoreBe32(std::uint32_t v, unsigned char* p) {
  p[0] = static_cast<unsigned char>(v >> 24);
  p[1] = static_cast<unsigned char>(v >> 16);
  p[2] = static_cast<unsigned char>(v >> 8);
  p[3] = static_cast<unsigned char>(v);
}

void SignalFd(int fd) {
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(fd, &one, sizeof one);
}

void DrainFd(int fd) {
  std::uint64_t v;
  [[maybe_unused]] ssize_t n = ::read(fd, &v, sizeof v);
}

using SequenceKey = std::array<unsigned char, kSequenceBytes>;

}  // namespace

// --- Broker ------------------------------------------------------------------

class RawBroker::Loop {
 public:
  explicit Loop(zmq::socket_t router) : router_(std::move(router)) {}

  void Run(int stop_fd) {
    void* router = router_.handle();
    zmq_pollitem_t items[2] = {{router, 0, ZMQ_POLLIN, 0},
                               {nullptr, stop_fd, ZMQ_POLLIN, 0}};
    for (;;) {
      if (zmq_poll(items, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (items[1].revents & ZMQ_POLLIN) return;
      // Drain the ROUTER: one poll serves every message already queued.
      while (std::size_t n = RecvMultipart(router, frames_, ZMQ_DONTWAIT)) {
        Handle(n);
      }
    }
  }

 private:
  struct Worker {
    zmq::message_t identity;
  };
  struct Service {
    std::vector<Worker> workers;  // registration order
  };
  struct WorkerRef {
    Service* service;
    std::uint32_t index;  // in service->workers
  };
  struct Client {
    std::string identity;
    std::uint64_t next = 1;
  };
  // An open request.  Reused through `free_` so that steady state allocates
  // nothing but what libzmq does.
  struct Open {
    zmq::message_t client;
    zmq::message_t service;
    zmq::message_t sequence;
    Service* to = nullptr;
    std::uint32_t quorum = 0;
    std::uint32_t remaining = 0;
    std::vector<std::uint8_t> answered;                // per worker index
    std::vector<std::vector<zmq::message_t>> payload;  // per worker index
  };

  void Handle(std::size_t n) {
    // [identity][""][CCp100][type]...
    if (n < 4 || frames_[1].size() != 0 || View(frames_[2]) != kTag ||
        frames_[3].size() != 1) {
      return;  // malformed: dropped
    }
    switch (*static_cast<const char*>(frames_[3].data())) {
      case kRequest:
        if (n >= 7) OnRequest(n);
        break;
      case kReplySuccess:
      case kReplyFailure:
        if (n >= 7) OnReply(n);
        break;
      case kReady:
        if (n == 7) OnReady();
        break;
      case kPing: {
        void* r = router_.handle();
        Send(r, frames_[0], true) && Send(r, frames_[1], true) &&
            Send(r, frames_[2], true) && Send(r, frames_[3], false);
        break;
      }
      case kHeartbeat:
      default:
        break;
    }
  }

  void OnReady() {
    auto [it, added] = services_.try_emplace(std::string(View(frames_[4])));
    Service& s = it->second;
    const std::string id(View(frames_[0]));
    if (workers_.contains(id)) return;
    workers_.emplace(
        id, WorkerRef{&s, static_cast<std::uint32_t>(s.workers.size())});
    s.workers.push_back(Worker{std::move(frames_[0])});
  }

  void Fail(zmq::message_t& client, zmq::message_t& service,
            zmq::message_t& sequence, std::string_view reason) {
    void* r = router_.handle();
    const char type = kReplyFailure;
    Send(r, client, true) && SendBytes(r, {}, true) &&
        SendBytes(r, kTag, true) && SendBytes(r, {&type, 1}, true) &&
        Send(r, service, true) && Send(r, sequence, true) &&
        SendBytes(r, reason, false);
  }

  void OnRequest(std::size_t n) {
    zmq::message_t& seq = frames_[5];
    if (seq.size() != kSequenceBytes) return;
    const auto* sb = static_cast<const unsigned char*>(seq.data());
    const std::uint64_t number =
        (std::uint64_t{LoadBe32(sb)} << 32) | LoadBe32(sb + 4);
    const std::uint32_t client_id = LoadBe32(sb + 8);

    // Per-client sequence rule: first 1, then exactly one more, always from
    // the same socket identity.
    auto [cit, is_new] = clients_.try_emplace(client_id);
    Client& c = cit->second;
    if (is_new) c.identity.assign(View(frames_[0]));
    if (c.identity != View(frames_[0]) || number != c.next) {
      if (is_new) clients_.erase(cit);
      Fail(frames_[0], frames_[4], seq, "zb:bad-sequence");
      return;
    }
    ++c.next;

    auto sit = services_.find(Key(frames_[4]));
    if (sit == services_.end() || sit->second.workers.empty()) {
      Fail(frames_[0], frames_[4], seq, "zb:no-workers");
      return;
    }
    Service& s = sit->second;
    SequenceKey key;
    std::memcpy(key.data(), sb, kSequenceBytes);
    auto [oit, fresh] = open_.try_emplace(key, nullptr);
    if (!fresh) return;  // duplicate of an open request: ignored
    Open* o = Acquire();
    oit->second = o;
    const auto quorum = static_cast<std::uint32_t>(s.workers.size());
    o->to = &s;
    o->quorum = quorum;
    o->remaining = quorum;
    o->answered.assign(quorum, 0);
    if (o->payload.size() < quorum) o->payload.resize(quorum);

    // Fan out: [worker][""][CCp100][0x03][service][sequence][payload...].
    void* r = router_.handle();
    for (std::uint32_t w = 0; w < quorum; ++w) {
      zmq::message_t id = Copy(s.workers[w].identity);
      bool ok = Send(r, id, true);
      for (std::size_t f = 1; ok && f < n; ++f) {
        zmq::message_t part = Copy(frames_[f]);
        ok = Send(r, part, f + 1 < n);
      }
      if (!ok) {
        // The worker is gone (EHOSTUNREACH): it cannot answer, so it leaves
        // this request's quorum.
        o->answered[w] = 1;
        --o->remaining;
      }
    }
    o->client = std::move(frames_[0]);
    o->service = std::move(frames_[4]);
    o->sequence = std::move(seq);
    if (o->remaining == 0) {
      Fail(o->client, o->service, o->sequence, "zb:worker-left");
      Release(oit);
    }
  }

  void OnReply(std::size_t n) {
    zmq::message_t& seq = frames_[5];
    if (seq.size() != kSequenceBytes) return;
    SequenceKey key;
    std::memcpy(key.data(), seq.data(), kSequenceBytes);
    auto oit = open_.find(key);
    if (oit == open_.end()) return;  // request already ended
    Open* o = oit->second;
    auto wit = workers_.find(Key(frames_[0]));
    if (wit == workers_.end() || wit->second.service != o->to) return;
    const std::uint32_t w = wit->second.index;
    if (w >= o->quorum || o->answered[w]) return;  // not asked, or again
    o->answered[w] = 1;

    void* r = router_.handle();
    if (*static_cast<const char*>(frames_[3].data()) == kReplyFailure) {
      // The worker's own failure payload goes to the client as it is.
      const char type = kReplyFailure;
      bool ok = Send(r, o->client, true) && SendBytes(r, {}, true) &&
                SendBytes(r, kTag, true) && SendBytes(r, {&type, 1}, true) &&
                Send(r, o->service, true) && Send(r, o->sequence, true);
      for (std::size_t f = 6; ok && f < n; ++f) {
        ok = Send(r, frames_[f], f + 1 < n);
      }
      Release(oit);
      return;
    }
    std::vector<zmq::message_t>& keep = o->payload[w];
    keep.clear();
    for (std::size_t f = 6; f < n; ++f) keep.push_back(std::move(frames_[f]));
    if (--o->remaining > 0) return;

    // Everyone answered: [client][""][CCp100][0x04][service][seq][all...].
    const char type = kReplySuccess;
    bool ok = Send(r, o->client, true) && SendBytes(r, {}, true) &&
              SendBytes(r, kTag, true) && SendBytes(r, {&type, 1}, true) &&
              Send(r, o->service, true);
    // The sequence frame goes last before the payloads; find the last
    // payload to clear the "more" flag on it.
    std::uint32_t last = o->quorum;
    while (last > 0 && o->payload[last - 1].empty()) --last;
    ok = ok && Send(r, o->sequence, last > 0);
    for (std::uint32_t w2 = 0; ok && w2 < last; ++w2) {
      auto& frames = o->payload[w2];
      for (std::size_t f = 0; ok && f < frames.size(); ++f) {
        ok = Send(r, frames[f], !(w2 + 1 == last && f + 1 == frames.size()));
      }
    }
    Release(oit);
  }

  Open* Acquire() {
    if (free_.empty()) {
      pool_.push_back(std::make_unique<Open>());
      return pool_.back().get();
    }
    Open* o = free_.back();
    free_.pop_back();
    return o;
  }

  void Release(absl::flat_hash_map<SequenceKey, Open*>::iterator it) {
    Open* o = it->second;
    for (std::uint32_t w = 0; w < o->quorum; ++w) o->payload[w].clear();
    free_.push_back(o);
    open_.erase(it);
  }

  zmq::socket_t router_;
  std::vector<zmq::message_t> frames_ = std::vector<zmq::message_t>(16);
  absl::flat_hash_map<std::string, Service> services_;
  absl::flat_hash_map<std::string, WorkerRef> workers_;
  absl::flat_hash_map<std::uint32_t, Client> clients_;
  absl::flat_hash_map<SequenceKey, Open*> open_;
  std::vector<std::unique_ptr<Open>> pool_;
  std::vector<Open*> free_;
};

absl::StatusOr<std::unique_ptr<RawBroker>> RawBroker::Start(
    zmq::context_t& context, const std::string& endpoint) {
  std::unique_ptr<RawBroker> b(new RawBroker());
  try {
    zmq::socket_t router(context, zmq::socket_type::router);
    router.set(zmq::sockopt::router_mandatory, 1);
    router.set(zmq::sockopt::linger, 0);
    router.bind(endpoint);
    b->endpoint_ = router.get(zmq::sockopt::last_endpoint);
    b->loop_ = std::make_unique<Loop>(std::move(router));
  } catch (const zmq::error_t& e) {
    return absl::InternalError(
        absl::StrFormat("raw broker: cannot bind %s: %s", endpoint, e.what()));
  }
  b->stop_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (b->stop_fd_ < 0) return absl::InternalError("raw broker: eventfd");
  // The socket moves to the broker thread; thread creation is the full
  // memory barrier libzmq asks for when a socket changes threads.
  b->thread_ =
      std::thread([loop = b->loop_.get(), fd = b->stop_fd_] { loop->Run(fd); });
  return b;
}

RawBroker::~RawBroker() {
  if (thread_.joinable()) {
    SignalFd(stop_fd_);
    thread_.join();
  }
  loop_.reset();  // closes the ROUTER
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

// --- Workers -----------------------------------------------------------------

class RawWorkers::Loop {
 public:
  Loop(zmq::context_t& context, std::string endpoint, std::string service)
      : context_(context),
        endpoint_(std::move(endpoint)),
        service_(std::move(service)) {}

  // Queues a command for the worker thread (any thread).
  void Post(std::function<void()> fn, int wake_fd) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      commands_.push_back(std::move(fn));
    }
    SignalFd(wake_fd);
  }

  void Run(int wake_fd) {
    items_.push_back({nullptr, wake_fd, ZMQ_POLLIN, 0});
    while (!stop_) {
      if (zmq_poll(items_.data(), static_cast<int>(items_.size()), -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (items_[0].revents & ZMQ_POLLIN) {
        DrainFd(wake_fd);
        std::vector<std::function<void()>> run;
        {
          std::lock_guard<std::mutex> lock(mu_);
          run.swap(commands_);
        }
        for (auto& fn : run) fn();
        continue;  // items_ may have grown: poll again
      }
      for (std::size_t i = 1; i < items_.size(); ++i) {
        if (items_[i].revents & ZMQ_POLLIN) Serve(items_[i].socket);
      }
    }
  }

  // Worker-thread commands.
  void AddSockets(int n) {
    for (int i = 0; i < n; ++i) {
      zmq::socket_t s(context_, zmq::socket_type::dealer);
      s.set(zmq::sockopt::linger, 0);
      s.connect(endpoint_);
      // READY: [""][CCp100][0x01][service][interval ms BE32][retries].
      void* h = s.handle();
      const char type = kReady;
      unsigned char interval[4];
      StoreBe32(1000, interval);
      const char retries = 3;
      SendBytes(h, {}, true) && SendBytes(h, kTag, true) &&
          SendBytes(h, {&type, 1}, true) && SendBytes(h, service_, true) &&
          SendBytes(h, {reinterpret_cast<char*>(interval), 4}, true) &&
          SendBytes(h, {&retries, 1}, false);
      items_.push_back({h, 0, ZMQ_POLLIN, 0});
      sockets_.push_back(std::move(s));
    }
  }
  void Stop() { stop_ = true; }

 private:
  // Answers every request waiting on one worker socket: the frames go back
  // as they came, with the type byte turned into REPLY_SUCCESS.
  void Serve(void* socket) {
    while (std::size_t n = RecvMultipart(socket, frames_, ZMQ_DONTWAIT)) {
      // [""][CCp100][0x03][service][sequence][payload...]
      if (n < 6 || frames_[0].size() != 0 || View(frames_[1]) != kTag ||
          frames_[2].size() != 1 ||
          *static_cast<const char*>(frames_[2].data()) != kRequest ||
          frames_[4].size() != kSequenceBytes) {
        continue;  // heartbeats and anything unexpected
      }
      *static_cast<char*>(frames_[2].data()) = kReplySuccess;
      bool ok = true;
      for (std::size_t f = 0; ok && f < n; ++f) {
        ok = Send(socket, frames_[f], f + 1 < n);
      }
    }
  }

  zmq::context_t& context_;
  const std::string endpoint_;
  const std::string service_;
  std::mutex mu_;
  std::vector<std::function<void()>> commands_;  // guarded by mu_
  std::vector<zmq_pollitem_t> items_;            // [0] is the wake-up eventfd
  std::vector<zmq::socket_t> sockets_;
  std::vector<zmq::message_t> frames_ = std::vector<zmq::message_t>(16);
  bool stop_ = false;
};

absl::StatusOr<std::unique_ptr<RawWorkers>> RawWorkers::Start(
    zmq::context_t& context, std::string endpoint, std::string service) {
  std::unique_ptr<RawWorkers> w(new RawWorkers());
  w->wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (w->wake_fd_ < 0) return absl::InternalError("raw workers: eventfd");
  w->loop_ =
      std::make_unique<Loop>(context, std::move(endpoint), std::move(service));
  w->thread_ =
      std::thread([loop = w->loop_.get(), fd = w->wake_fd_] { loop->Run(fd); });
  return w;
}

absl::Status RawWorkers::Add(int n) {
  std::promise<absl::Status> done;
  std::future<absl::Status> result = done.get_future();
  loop_->Post(
      [this, n, &done] {
        try {
          loop_->AddSockets(n);
          done.set_value(absl::OkStatus());
        } catch (const zmq::error_t& e) {
          done.set_value(absl::InternalError(
              absl::StrFormat("raw workers: cannot connect: %s", e.what())));
        }
      },
      wake_fd_);
  absl::Status st = result.get();
  if (st.ok()) size_ += n;
  return st;
}

RawWorkers::~RawWorkers() {
  if (thread_.joinable()) {
    loop_->Post([loop = loop_.get()] { loop->Stop(); }, wake_fd_);
    thread_.join();
  }
  loop_.reset();  // closes the sockets
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

// --- Client ------------------------------------------------------------------

RawClient::RawClient(zmq::context_t& context, const std::string& endpoint,
                     std::string service, int payload_bytes,
                     std::chrono::milliseconds timeout)
    : socket_(context, zmq::socket_type::dealer),
      service_(std::move(service)),
      payload_(static_cast<std::size_t>(payload_bytes), 'p'),
      client_id_(std::random_device{}()),
      frames_(16) {
  socket_.set(zmq::sockopt::linger, 0);
  socket_.set(zmq::sockopt::rcvtimeo, static_cast<int>(timeout.count()));
  socket_.connect(endpoint);
}

bool RawClient::RoundTrip(int expected_workers) {
  return Exchange(expected_workers) == expected_workers;
}

int RawClient::Probe() { return Exchange(-1); }

int RawClient::Exchange(int expected_workers) {
  void* s = socket_.handle();
  // [""][CCp100][0x03][service][sequence][payload]
  unsigned char seq[kSequenceBytes];
  ++sequence_;
  StoreBe32(static_cast<std::uint32_t>(sequence_ >> 32), seq);
  StoreBe32(static_cast<std::uint32_t>(sequence_), seq + 4);
  StoreBe32(client_id_, seq + 8);
  const std::string_view seq_view(reinterpret_cast<char*>(seq), sizeof seq);
  const char type = kRequest;
  if (!(SendBytes(s, {}, true) && SendBytes(s, kTag, true) &&
        SendBytes(s, {&type, 1}, true) && SendBytes(s, service_, true) &&
        SendBytes(s, seq_view, true) && SendBytes(s, payload_, false))) {
    return -1;
  }
  for (;;) {
    // Blocks for at most the receive timeout (ZMQ_RCVTIMEO).
    const std::size_t n = RecvMultipart(s, frames_, 0);
    if (n == 0) return -1;  // timeout
    // [""][CCp100][type][service][sequence][payload per worker...]
    if (n < 6 || frames_[0].size() != 0 || View(frames_[1]) != kTag ||
        frames_[2].size() != 1 || View(frames_[4]) != seq_view) {
      continue;  // not the reply to this request (a late one): skip
    }
    if (*static_cast<const char*>(frames_[2].data()) != kReplySuccess) {
      return -1;
    }
    const int payloads = static_cast<int>(n - 5);
    if (expected_workers >= 0 && payloads != expected_workers) return -1;
    for (std::size_t f = 5; f < n; ++f) {
      if (View(frames_[f]) != payload_) return -1;
    }
    return payloads;
  }
}

}  // namespace zb::latency
