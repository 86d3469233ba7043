// Copyright 2026 The zbrokers Authors.
//
// zb::Titanic is the Titanic service (ZeroMQ RFC 9, TSP) in front of a
// Majordomo broker: persistent requests that are answered even when every
// process (Titanic, the broker, the workers) is killed -9 and restarted.
//
//   zmq::context_t ctx;
//   zb::Reactor reactor;
//   zb::TitanicOptions options;
//   options.broker = "tcp://127.0.0.1:5555";
//   options.store_path = "/var/lib/zb/titanic.db";
//   absl::StatusOr<std::unique_ptr<zb::Titanic>> titanic =
//       zb::Titanic::Create(reactor, ctx, options);
//   if (!titanic.ok()) { ... }
//   reactor.Run();
//
// Titanic connects to the broker as three MDP workers and one MDP client:
//   - titanic.request: [service, body...] -> stores the request (store.h),
//     then answers ["200", uuid].  A request is ACCEPTED when its UUID was
//     sent: it is on disk (per the fsync policy) by then.  The store full
//     (max_requests) -> ["500 ..."] (RFC 9: retry later); fewer than two
//     frames, an empty service or more than max_request_bytes ->
//     ["400 ..."] (do not retry).
//   - titanic.reply: [uuid] -> ["200", reply...] once answered, ["300"]
//     while pending, ["400"] for an unknown (or closed) UUID; the same
//     answer every time until it is closed (RFC 9: idempotent).
//   - titanic.close: [uuid] -> ["200"], also for an unknown UUID (RFC 9);
//     deletes the request and its reply.  ["400"] only for a malformed one
//     (not 32 hexadecimal characters).
//   - a store error on any of them -> ["500 ..."].
// The dispatcher sends every pending request, oldest first and at most
// max_in_flight at once, to its service through the broker (an
// MdpAsyncClient), stores the first reply, and sends a request again after
// retry_delay when it failed or got no reply within request_timeout.
// Create() resumes every request the store holds as pending.
//
// Delivery.  To the client: exactly once -- the store keeps the first reply
// of a request and titanic.reply only ever returns that one.  To the
// workers: at least once -- a request whose reply was not stored before a
// timeout or a crash (of Titanic, the broker or the worker) is sent again,
// so a worker may see it twice; workers must be idempotent (as RFC 7
// already assumes).  A client whose titanic.request got no answer (Titanic
// died between storing and answering) and asks again creates a second
// request; the first is never closed by anyone.  Such orphans, and every
// request whose client never closes it, are purged request_expiry after
// they arrived (answered or not; docs/titanic.md, "Orphans and expiry").
//
// Threading.  Create, use and destroy on the reactor's thread; everything
// (the store included) runs there.  With synchronous = kFull every stored
// request and reply waits for an fsync on that thread.

#ifndef ZBROKERS_TITANIC_TITANIC_H_
#define ZBROKERS_TITANIC_TITANIC_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <zmq.hpp>

#include "absl/status/statusor.h"
#include "zbrokers/common/log.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/titanic/store.h"

namespace zb {

// Defined outside the class so that it can be a default argument.  The
// names are the [titanic] TOML keys and the zb-titanic flags
// (docs/titanic.md).
struct TitanicOptions {
  // The Majordomo broker Titanic serves on and dispatches through.
  std::string broker = "tcp://127.0.0.1:5555";
  // The SQLite file (created when missing; its -wal and -shm files sit
  // beside it).
  std::string store_path = "titanic.db";
  // The store's fsync policy and bounds (store.h).
  TitanicStoreOptions::Synchronous synchronous =
      TitanicStoreOptions::Synchronous::kFull;
  std::size_t max_requests = 100000;
  std::size_t max_request_bytes = 16 << 20;
  // How long one dispatch of a request may wait for its reply.
  std::chrono::milliseconds request_timeout{10000};
  // The wait before a failed or timed-out request is sent again.
  std::chrono::milliseconds retry_delay{1000};
  // Most requests dispatched and not yet answered at once.
  std::size_t max_in_flight = 100;
  // A request (and its reply) is deleted this long after it arrived, closed
  // or not, so that requests nobody closes do not stay forever; counted in
  // Stats::expired.  Checked every min(request_expiry / 4, 1 min), at most
  // Titanic::kExpireBatch rows per transaction.  0 = never.
  std::chrono::milliseconds request_expiry{std::chrono::hours(24)};
  // The three workers' heartbeat; must match the broker's.
  std::chrono::milliseconds heartbeat_interval{2500};
  // Receives Titanic's log lines (what a peer can cause is rate-limited).
  // Empty: lines go to stderr.
  LogHook log;
};

class Titanic {
 public:
  using Options = TitanicOptions;

  // Most rows one expiry transaction deletes; more wait for the next turn
  // of the reactor, so a large backlog never blocks it for long.
  static constexpr std::size_t kExpireBatch = 1000;

  struct Stats {
    // titanic.request
    std::uint64_t accepted = 0;      // stored, "200" + UUID sent
    std::uint64_t refused_full = 0;  // "500": max_requests reached
    std::uint64_t bad_requests = 0;  // "400" from any of the three services
    // titanic.reply
    std::uint64_t replies_served = 0;   // "200" + reply
    std::uint64_t replies_pending = 0;  // "300"
    std::uint64_t replies_unknown = 0;  // "400" for a well-formed UUID
    // titanic.close
    std::uint64_t closed = 0;  // "200"
    // request_expiry
    std::uint64_t expired = 0;          // requests deleted, answered or not
    std::uint64_t expired_pending = 0;  // of which never answered
    // the dispatcher
    std::uint64_t dispatched = 0;  // sends to the broker, resends included
    std::uint64_t answered = 0;    // replies stored
    std::uint64_t retries = 0;     // failed or timed-out sends, sent again
    std::uint64_t duplicate_replies = 0;     // a second reply; the first stays
    std::uint64_t closed_before_answer = 0;  // reply for a closed request
    std::uint64_t store_errors = 0;          // "500" or a dispatch error
    // the store, now
    std::size_t stored = 0;   // requests on disk (pending + answered)
    std::size_t pending = 0;  // of which not answered yet
    std::size_t in_flight = 0;
  };

  // Opens the store, resumes its pending requests and starts the three
  // workers and the dispatcher.  Fails on a bad option, an unusable store
  // or an invalid broker endpoint.
  static absl::StatusOr<std::unique_ptr<Titanic>> Create(
      Reactor& reactor, zmq::context_t& context, Options options);
  // Disconnects the workers; requests in flight stay pending in the store
  // and are resumed by the next Create() on the same file.
  ~Titanic();

  Titanic(const Titanic&) = delete;
  Titanic& operator=(const Titanic&) = delete;

  Stats stats() const;

  class Impl;

 private:
  explicit Titanic(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace zb

#endif  // ZBROKERS_TITANIC_TITANIC_H_
