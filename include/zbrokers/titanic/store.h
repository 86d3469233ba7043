// Copyright 2026 The zbrokers Authors.
//
// zb::TitanicStore keeps Titanic's (RFC 9) requests and replies in one
// SQLite file, so that a request accepted by Titanic survives a kill -9 of
// every process (docs/titanic.md).
//
//   absl::StatusOr<std::unique_ptr<zb::TitanicStore>> store =
//       zb::TitanicStore::Open("/var/lib/zb/titanic.db", {});
//   absl::StatusOr<std::string> uuid =
//       (*store)->Store("echo", zb::MakeFrames({"hello"}));
//   ...                                  // the dispatcher gets an answer
//   (*store)->StoreReply(*uuid, zb::MakeFrames({"hello"})).IgnoreError();
//   absl::StatusOr<zb::TitanicStore::Lookup> r = (*store)->FetchReply(*uuid);
//   (*store)->Close(*uuid).IgnoreError();  // purges request and reply
//
// What is stored.  One row per request: its UUID (32 lower-case hex
// characters, 128 random bits), the target service, the request body and,
// once answered, the reply body.  Frames are kept exactly (each frame's
// length, then its bytes).  A request is *pending* until its reply is
// stored, *answered* after; Close() deletes the row, and so does Expire()
// once the row is older than the caller's cutoff (orphans nobody will ever
// close).  Rows keep their arrival order (ListPending()) and their arrival
// time (the wall clock, milliseconds, kept in the file so that it holds
// across restarts).
//
// Durability.  The file is in WAL mode.  Options::synchronous chooses the
// fsync policy:
//   - kFull (the default): every Store(), StoreReply() and Close() is one
//     transaction that is fsynced before the call returns.  When Store()
//     returns a UUID the request survives a crash of the process AND of the
//     machine (power loss), as far as the disk honours fsync.
//   - kNormal: the WAL is fsynced only at checkpoints.  A committed
//     transaction survives a crash of the process (kill -9: the WAL is in
//     the OS page cache), but the last transactions before a power loss may
//     be lost.
//
// Exactly once.  StoreReply() keeps the FIRST reply of a request: a later
// one (a request dispatched twice after a crash) is refused with
// AlreadyExists and the stored reply never changes, so every reader sees
// the same one reply.
//
// Bounds.  At most Options::max_requests rows (pending + answered, not yet
// closed) and request bodies of at most Options::max_request_bytes bytes
// (all frames together, plus the service name).  Beyond them Store() fails
// (ResourceExhausted, InvalidArgument) and stores nothing.
//
// Errors.  NotFound (no such UUID), AlreadyExists (a second reply),
// ResourceExhausted (full), InvalidArgument (bad UUID, empty service, too
// big), Internal (SQLite; the message carries SQLite's text).
//
// Threading.  Not thread-safe: one thread at a time (Titanic uses it from
// its reactor thread only).  One process per file: two stores on one file
// are not supported (SQLite would serialize them, but their counts would
// drift).

#ifndef ZBROKERS_TITANIC_STORE_H_
#define ZBROKERS_TITANIC_STORE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "zbrokers/frames/frames.h"

struct sqlite3;
struct sqlite3_stmt;

namespace zb {

// Defined outside the class so that it can be a default argument.
struct TitanicStoreOptions {
  // The fsync policy (see "Durability" above).
  enum class Synchronous { kFull, kNormal };
  Synchronous synchronous = Synchronous::kFull;
  // The most requests stored at once (pending or answered, not yet closed).
  std::size_t max_requests = 100000;
  // The largest request accepted: service name plus every body frame.
  std::size_t max_request_bytes = 16 << 20;
};

class TitanicStore {
 public:
  using Options = TitanicStoreOptions;

  // A stored request, as the dispatcher sends it on.
  struct Request {
    std::string uuid;
    std::string service;
    Frames body;
  };

  // What FetchReply() found.
  struct Lookup {
    bool answered = false;  // false: still pending (RFC 9's "300")
    Frames reply;           // the stored reply when answered
  };

  struct Counts {
    std::size_t stored = 0;   // rows: pending + answered
    std::size_t pending = 0;  // rows without a reply yet
  };

  // What one Expire() deleted.
  struct Expired {
    std::size_t rows = 0;     // requests deleted, answered or not
    std::size_t pending = 0;  // of which had no reply yet
  };

  // Opens (creating when missing) the store at `path`, turns WAL on and
  // applies the fsync policy.  A file written by a process that died is
  // opened as it was at its last committed transaction.  One store per
  // file at a time: the store holds an exclusive flock() on `path`-lock
  // (created beside it, never removed) until it is destroyed, and a
  // second Open() of the same path, in this process or another, fails
  // with FailedPrecondition ("... is in use by another Titanic ...").
  // Other readers of the database (sqlite3, a backup) are not affected.
  static absl::StatusOr<std::unique_ptr<TitanicStore>> Open(
      const std::string& path, Options options = {});
  ~TitanicStore();

  TitanicStore(const TitanicStore&) = delete;
  TitanicStore& operator=(const TitanicStore&) = delete;

  // Stores a new pending request and returns its UUID; durable (per the
  // policy) when this returns.
  absl::StatusOr<std::string> Store(std::string_view service,
                                    const Frames& body);
  // The stored request `uuid`, answered or not.
  absl::StatusOr<Request> Get(std::string_view uuid);
  // Stores the reply to pending request `uuid`: it is answered from now on.
  absl::Status StoreReply(std::string_view uuid, const Frames& reply);
  // Whether `uuid` is answered, and its reply.
  absl::StatusOr<Lookup> FetchReply(std::string_view uuid);
  // Deletes request `uuid` and its reply.  OK also when `uuid` is unknown
  // (RFC 9: titanic.close is idempotent).
  absl::Status Close(std::string_view uuid);
  // Deletes at most `limit` requests (with their replies) that arrived
  // before `cutoff`, oldest first, in one transaction.  A caller that gets
  // `limit` rows back calls again for the rest: each call is bounded.
  // Requests stored by a version without arrival times count as arrived
  // when the file was first opened by this one.
  absl::StatusOr<Expired> Expire(std::chrono::system_clock::time_point cutoff,
                                 std::size_t limit);
  // The UUIDs of every pending request, oldest first.
  absl::StatusOr<std::vector<std::string>> ListPending();

  Counts counts() const { return counts_; }
  const Options& options() const { return options_; }

  // True for 32 hexadecimal characters (RFC 9's UUID form).
  static bool ValidUuid(std::string_view uuid);

 private:
  TitanicStore(sqlite3* db, int lock_fd, Options options);
  absl::Status Migrate();
  absl::Status Prepare();
  absl::Status LoadCounts();
  absl::Status Error(std::string_view what) const;

  sqlite3* db_;
  const int lock_fd_;  // flock()ed on `path`-lock, closed after db_
  const Options options_;
  Counts counts_;
  // Prepared once; reset after each use.
  sqlite3_stmt* insert_ = nullptr;
  sqlite3_stmt* get_ = nullptr;
  sqlite3_stmt* set_reply_ = nullptr;
  sqlite3_stmt* fetch_ = nullptr;
  sqlite3_stmt* delete_ = nullptr;
  sqlite3_stmt* pending_ = nullptr;
  sqlite3_stmt* expire_ = nullptr;
};

}  // namespace zb

#endif  // ZBROKERS_TITANIC_STORE_H_
