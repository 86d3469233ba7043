// Copyright 2026 The zbrokers Authors.

#include "zbrokers/titanic/titanic.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <string>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "zbrokers/common/log_limiter.h"
#include "zbrokers/majordomo/client.h"
#include "zbrokers/majordomo/worker.h"

namespace zb {

namespace {

constexpr std::string_view kRequestService = "titanic.request";
constexpr std::string_view kReplyService = "titanic.reply";
constexpr std::string_view kCloseService = "titanic.close";

// A status frame, optionally with its text (RFC 9: "three digits,
// optionally followed by a space and descriptive text").
Frames Status(std::string_view code, std::string_view text = {}) {
  Frames f;
  f.push_back(text.empty() ? Frame(code)
                           : Frame(absl::StrCat(std::string(code), " ",
                                                std::string(text))));
  return f;
}

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

}  // namespace

class Titanic::Impl {
 public:
  Impl(Reactor& reactor, zmq::context_t& context, Options options,
       std::unique_ptr<TitanicStore> store)
      : reactor_(reactor),
        context_(context),
        options_(std::move(options)),
        store_(std::move(store)) {
    if (!options_.log) {
      options_.log = [](LogLevel level, std::string_view line) {
        std::fprintf(stderr, "zb-titanic %s: %.*s\n",
                     std::string(LogLevelName(level)).c_str(),
                     static_cast<int>(line.size()), line.data());
      };
    }
  }

  // The workers and the client go first, while everything their callbacks
  // touch is still here (the client completes what is in flight with
  // Cancelled; those requests stay pending in the store).
  ~Impl() {
    close_worker_.reset();
    reply_worker_.reset();
    request_worker_.reset();
    client_.reset();
  }

  absl::Status Start();
  Stats stats() const;

 private:
  void OnRequest(Frames body, MdpWorker::Replier replier);
  void OnReply(Frames body, MdpWorker::Replier replier);
  void OnClose(Frames body, MdpWorker::Replier replier);
  // The UUID of a titanic.reply / titanic.close body, or a "400" sent.
  bool TakeUuid(std::string_view service, const Frames& body,
                MdpWorker::Replier& replier, std::string* uuid);

  // Sends queued requests while fewer than max_in_flight are out.
  void Pump();
  void OnDispatchDone(const std::string& uuid, absl::StatusOr<Frames> reply);
  void RetryLater(std::string uuid);
  void SweepRetries();
  // Deletes one batch of requests older than request_expiry; schedules the
  // next batch at once when this one was full.
  void ExpireOld();

  void Log(LogLevel level, const std::string& line) {
    options_.log(level, line);
  }
  // For lines a peer can cause: rate-limited.
  void LogPeer(const std::string& line) {
    if (peer_log_.Admit(LogLimiter::Clock::now())) {
      Log(LogLevel::kWarning, absl::StrCat(line, peer_log_.SuppressedNote()));
    }
  }

  Reactor& reactor_;
  zmq::context_t& context_;
  Options options_;
  std::unique_ptr<TitanicStore> store_;
  std::unique_ptr<MdpAsyncClient> client_;
  std::unique_ptr<MdpWorker> request_worker_;
  std::unique_ptr<MdpWorker> reply_worker_;
  std::unique_ptr<MdpWorker> close_worker_;

  // Every pending request is in exactly one of: queue_ (waiting to be
  // sent), in_flight_ (sent, no outcome yet), retries_ (failed, waiting for
  // its retry time).  Only UUIDs are held in memory; bodies are read from
  // the store when sent.
  std::deque<std::string> queue_;
  absl::flat_hash_set<std::string> in_flight_;
  // Failed sends per pending request (absent: none); sets its timeout.
  absl::flat_hash_map<std::string, int> attempts_;
  static constexpr int kMaxBackoffShift = 4;  // at most 16 x request_timeout
  // retry_delay is the same for all, so due times are in order.
  std::deque<std::pair<Reactor::Clock::time_point, std::string>> retries_;
  Reactor::Timer retry_sweep_;
  Reactor::Timer expire_sweep_;  // request_expiry > 0 only
  Reactor::Timer expire_more_;   // the next batch of a large backlog

  LogLimiter peer_log_;
  Stats stats_;
};

absl::Status Titanic::Impl::Start() {
  MdpAsyncClientOptions client_options;
  client_options.timeout = options_.request_timeout;
  client_options.retries = 0;  // the dispatcher retries, after retry_delay
  absl::StatusOr<std::unique_ptr<MdpAsyncClient>> client =
      MdpAsyncClient::Create(reactor_, context_, options_.broker,
                             client_options);
  if (!client.ok()) return client.status();
  client_ = *std::move(client);

  MdpWorkerOptions worker_options;
  worker_options.heartbeat_interval = options_.heartbeat_interval;
  const std::pair<std::unique_ptr<MdpWorker>*, std::string_view> workers[] = {
      {&request_worker_, kRequestService},
      {&reply_worker_, kReplyService},
      {&close_worker_, kCloseService},
  };
  for (const auto& [slot, service] : workers) {
    MdpWorker::Handler handler;
    if (service == kRequestService) {
      handler = [this](Frames b, MdpWorker::Replier r) {
        OnRequest(std::move(b), std::move(r));
      };
    } else if (service == kReplyService) {
      handler = [this](Frames b, MdpWorker::Replier r) {
        OnReply(std::move(b), std::move(r));
      };
    } else {
      handler = [this](Frames b, MdpWorker::Replier r) {
        OnClose(std::move(b), std::move(r));
      };
    }
    absl::StatusOr<std::unique_ptr<MdpWorker>> worker = MdpWorker::Create(
        reactor_, context_, options_.broker, std::string(service),
        std::move(handler), worker_options);
    if (!worker.ok()) return worker.status();
    *slot = *std::move(worker);
  }

  const auto period = std::min<Reactor::Clock::duration>(
      options_.retry_delay, std::chrono::milliseconds(100));
  absl::StatusOr<Reactor::Timer> sweep = reactor_.Every(
      std::max<Reactor::Clock::duration>(period, std::chrono::milliseconds(1)),
      [this] { SweepRetries(); });
  if (!sweep.ok()) return sweep.status();
  retry_sweep_ = *std::move(sweep);

  if (options_.request_expiry.count() > 0) {
    // A quarter of the expiry keeps a request at most 25 % past its time;
    // once a minute is enough for the default day.
    const auto period = std::clamp<Reactor::Clock::duration>(
        options_.request_expiry / 4, std::chrono::milliseconds(1),
        std::chrono::minutes(1));
    absl::StatusOr<Reactor::Timer> expire =
        reactor_.Every(period, [this] { ExpireOld(); });
    if (!expire.ok()) return expire.status();
    expire_sweep_ = *std::move(expire);
  }

  // Resume what a previous run left pending, oldest first.
  absl::StatusOr<std::vector<std::string>> pending = store_->ListPending();
  if (!pending.ok()) return pending.status();
  for (std::string& uuid : *pending) queue_.push_back(std::move(uuid));
  if (!queue_.empty()) {
    Log(LogLevel::kInfo,
        absl::StrCat("resuming ", queue_.size(), " pending requests from ",
                     options_.store_path));
  }
  Pump();
  return absl::OkStatus();
}

void Titanic::Impl::OnRequest(Frames body, MdpWorker::Replier replier) {
  if (body.size() < 2 || body[0].size() == 0) {
    ++stats_.bad_requests;
    LogPeer("titanic.request without a service and a body: answered 400");
    replier.Reply(Status("400", "expected a service name and a body"));
    return;
  }
  const std::string service(View(body[0]));
  Frames request_body;
  request_body.reserve(body.size() - 1);
  for (std::size_t i = 1; i < body.size(); ++i) {
    request_body.push_back(std::move(body[i]));
  }
  absl::StatusOr<std::string> uuid = store_->Store(service, request_body);
  if (!uuid.ok()) {
    switch (uuid.status().code()) {
      case absl::StatusCode::kResourceExhausted:
        ++stats_.refused_full;
        LogPeer(Msg(uuid.status()));
        replier.Reply(Status("500", "store full, retry later"));
        return;
      case absl::StatusCode::kInvalidArgument:
        ++stats_.bad_requests;
        LogPeer(Msg(uuid.status()));
        replier.Reply(Status("400", Msg(uuid.status())));
        return;
      default:
        ++stats_.store_errors;
        LogPeer(Msg(uuid.status()));
        replier.Reply(Status("500", "store error"));
        return;
    }
  }
  ++stats_.accepted;
  // Stored (and fsynced, per the policy) before the client learns the UUID.
  Frames reply = Status("200");
  reply.push_back(Frame(*uuid));
  replier.Reply(std::move(reply));
  queue_.push_back(*std::move(uuid));
  Pump();
}

bool Titanic::Impl::TakeUuid(std::string_view service, const Frames& body,
                             MdpWorker::Replier& replier, std::string* uuid) {
  if (body.size() != 1 || !TitanicStore::ValidUuid(View(body[0]))) {
    ++stats_.bad_requests;
    LogPeer(absl::StrCat(std::string(service),
                         " without one 32-hex-digit UUID: answered 400"));
    replier.Reply(Status("400", "expected one UUID of 32 hex digits"));
    return false;
  }
  *uuid = std::string(View(body[0]));
  return true;
}

void Titanic::Impl::OnReply(Frames body, MdpWorker::Replier replier) {
  std::string uuid;
  if (!TakeUuid(kReplyService, body, replier, &uuid)) return;
  absl::StatusOr<TitanicStore::Lookup> found = store_->FetchReply(uuid);
  if (found.status().code() == absl::StatusCode::kNotFound) {
    ++stats_.replies_unknown;
    replier.Reply(Status("400", "unknown request"));
    return;
  }
  if (!found.ok()) {
    ++stats_.store_errors;
    LogPeer(Msg(found.status()));
    replier.Reply(Status("500", "store error"));
    return;
  }
  if (!found->answered) {
    ++stats_.replies_pending;
    replier.Reply(Status("300"));
    return;
  }
  ++stats_.replies_served;
  Frames reply = Status("200");
  for (zmq::message_t& f : found->reply) reply.push_back(std::move(f));
  replier.Reply(std::move(reply));
}

void Titanic::Impl::OnClose(Frames body, MdpWorker::Replier replier) {
  std::string uuid;
  if (!TakeUuid(kCloseService, body, replier, &uuid)) return;
  if (absl::Status s = store_->Close(uuid); !s.ok()) {
    ++stats_.store_errors;
    LogPeer(Msg(s));
    replier.Reply(Status("500", "store error"));
    return;
  }
  // A request closed while pending is dropped from the queue lazily: Pump()
  // finds it gone from the store and skips it.
  ++stats_.closed;
  replier.Reply(Status("200"));
}

void Titanic::Impl::Pump() {
  while (in_flight_.size() < options_.max_in_flight && !queue_.empty()) {
    std::string uuid = std::move(queue_.front());
    queue_.pop_front();
    absl::StatusOr<TitanicStore::Request> request = store_->Get(uuid);
    if (request.status().code() == absl::StatusCode::kNotFound) {
      attempts_.erase(uuid);  // closed while it waited
      continue;
    }
    if (!request.ok()) {
      ++stats_.store_errors;
      Log(LogLevel::kError, Msg(request.status()));
      RetryLater(std::move(uuid));
      continue;
    }
    ++stats_.dispatched;
    // Each resend waits twice as long as the one before (up to
    // kMaxBackoffShift doublings): when the workers are slower than
    // request_timeout, the copies of timed-out sends still queue in the
    // broker ahead of the resends, and resending at the same timeout would
    // never get an answer in time (a retry storm).
    const auto found = attempts_.find(uuid);
    const int attempt = found == attempts_.end() ? 0 : found->second;
    const auto timeout =
        options_.request_timeout * (1 << std::min(attempt, kMaxBackoffShift));
    absl::Status sent = client_->Request(
        request->service, std::move(request->body),
        [this, uuid](absl::StatusOr<Frames> reply) {
          OnDispatchDone(uuid, std::move(reply));
        },
        timeout);
    if (!sent.ok()) {
      ++stats_.store_errors;
      Log(LogLevel::kError,
          absl::StrCat("dispatching ", uuid, ": ", sent.ToString()));
      RetryLater(std::move(uuid));
      continue;
    }
    in_flight_.insert(std::move(uuid));
  }
}

void Titanic::Impl::OnDispatchDone(const std::string& uuid,
                                   absl::StatusOr<Frames> reply) {
  if (reply.status().code() == absl::StatusCode::kCancelled) {
    return;  // the client is being destroyed: stays pending in the store
  }
  in_flight_.erase(uuid);
  if (!reply.ok()) {
    ++stats_.retries;
    ++attempts_[uuid];
    RetryLater(uuid);
    Pump();
    return;
  }
  absl::Status stored = store_->StoreReply(uuid, *reply);
  if (stored.code() != absl::StatusCode::kInternal) attempts_.erase(uuid);
  switch (stored.code()) {
    case absl::StatusCode::kOk:
      ++stats_.answered;
      break;
    case absl::StatusCode::kAlreadyExists:
      ++stats_.duplicate_replies;
      break;
    case absl::StatusCode::kNotFound:
      ++stats_.closed_before_answer;
      break;
    default:
      ++stats_.store_errors;
      Log(LogLevel::kError, Msg(stored));
      RetryLater(uuid);
      break;
  }
  Pump();
}

void Titanic::Impl::RetryLater(std::string uuid) {
  retries_.emplace_back(Reactor::Clock::now() + options_.retry_delay,
                        std::move(uuid));
}

void Titanic::Impl::SweepRetries() {
  const auto now = Reactor::Clock::now();
  bool moved = false;
  while (!retries_.empty() && retries_.front().first <= now) {
    queue_.push_back(std::move(retries_.front().second));
    retries_.pop_front();
    moved = true;
  }
  if (moved) Pump();
  if (std::uint64_t n = peer_log_.Flush(now)) {
    Log(LogLevel::kWarning,
        absl::StrCat(n, " more lines about bad requests suppressed"));
  }
}

void Titanic::Impl::ExpireOld() {
  // The wall clock, as the arrival times in the file: they must mean the
  // same after a restart.
  const auto cutoff =
      std::chrono::system_clock::now() - options_.request_expiry;
  absl::StatusOr<TitanicStore::Expired> expired =
      store_->Expire(cutoff, kExpireBatch);
  if (!expired.ok()) {
    ++stats_.store_errors;
    Log(LogLevel::kError, Msg(expired.status()));
    return;  // the next turn of expire_sweep_ tries again
  }
  if (expired->rows == 0) return;
  stats_.expired += expired->rows;
  stats_.expired_pending += expired->pending;
  // At most one line per batch, and batches are bounded by the timer.
  Log(LogLevel::kInfo,
      absl::StrCat("expired ", expired->rows, " request(s) older than ",
                   options_.request_expiry.count(), "ms (", expired->pending,
                   " never answered)"));
  // Expired requests still queued or in flight are dropped lazily: Pump()
  // and OnDispatchDone() find them gone from the store.
  if (expired->rows == kExpireBatch) {
    absl::StatusOr<Reactor::Timer> more =
        reactor_.After(std::chrono::milliseconds(0), [this] { ExpireOld(); });
    if (more.ok()) expire_more_ = *std::move(more);
  }
}

Titanic::Stats Titanic::Impl::stats() const {
  Stats s = stats_;
  const TitanicStore::Counts counts = store_->counts();
  s.stored = counts.stored;
  s.pending = counts.pending;
  s.in_flight = in_flight_.size();
  return s;
}

absl::StatusOr<std::unique_ptr<Titanic>> Titanic::Create(
    Reactor& reactor, zmq::context_t& context, Options options) {
  if (options.max_in_flight == 0) {
    return absl::InvalidArgumentError("titanic: max_in_flight is 0");
  }
  if (options.request_timeout <= std::chrono::milliseconds::zero() ||
      options.retry_delay < std::chrono::milliseconds::zero() ||
      options.heartbeat_interval <= std::chrono::milliseconds::zero()) {
    return absl::InvalidArgumentError(
        "titanic: request_timeout and heartbeat_interval must be > 0, "
        "retry_delay >= 0");
  }
  if (options.request_expiry < std::chrono::milliseconds::zero()) {
    return absl::InvalidArgumentError(
        "titanic: request_expiry must be >= 0 (0 = never)");
  }
  TitanicStoreOptions store_options;
  store_options.synchronous = options.synchronous;
  store_options.max_requests = options.max_requests;
  store_options.max_request_bytes = options.max_request_bytes;
  absl::StatusOr<std::unique_ptr<TitanicStore>> store =
      TitanicStore::Open(options.store_path, store_options);
  if (!store.ok()) return store.status();
  auto impl = std::make_unique<Impl>(reactor, context, std::move(options),
                                     *std::move(store));
  if (absl::Status s = impl->Start(); !s.ok()) return s;
  return std::unique_ptr<Titanic>(new Titanic(std::move(impl)));
}

Titanic::Titanic(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Titanic::~Titanic() = default;

Titanic::Stats Titanic::stats() const { return impl_->stats(); }

}  // namespace zb
