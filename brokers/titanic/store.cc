// Copyright 2026 The zbrokers Authors.

#include "zbrokers/titanic/store.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace zb {
namespace {

// One row per request.  `seq` gives the arrival order (AUTOINCREMENT: never
// reused, so order holds across deletes); `reply` is NULL while pending;
// `created` is the arrival time (Unix milliseconds) that expiry measures.
// Files made before `created` existed get it in Migrate(); its index is
// made there, after the column surely exists.
constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS requests ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  uuid TEXT NOT NULL UNIQUE,"
    "  service TEXT NOT NULL,"
    "  body BLOB NOT NULL,"
    "  reply BLOB,"
    "  created INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS requests_pending ON requests(seq)"
    "  WHERE reply IS NULL;";

std::int64_t UnixMillis(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             t.time_since_epoch())
      .count();
}

// Frames as one blob: for each frame its length (4 bytes, big-endian), then
// its bytes.  Checked on the way back, so a damaged blob is an error, never
// a read past the end.
std::string EncodeFrames(const Frames& frames) {
  std::size_t n = 0;
  for (const zmq::message_t& f : frames) n += 4 + f.size();
  std::string out;
  out.reserve(n);
  for (const zmq::message_t& f : frames) {
    const auto len = static_cast<std::uint32_t>(f.size());
    const char prefix[4] = {
        static_cast<char>(len >> 24), static_cast<char>(len >> 16),
        static_cast<char>(len >> 8), static_cast<char>(len)};
    out.append(prefix, 4);
    out.append(View(f));
  }
  return out;
}

absl::StatusOr<Frames> DecodeFrames(const void* data, int size) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::size_t left = size > 0 ? static_cast<std::size_t>(size) : 0;
  Frames frames;
  while (left > 0) {
    if (left < 4) return absl::DataLossError("titanic store: truncated frame");
    const std::size_t len = (std::size_t{p[0]} << 24) |
                            (std::size_t{p[1]} << 16) |
                            (std::size_t{p[2]} << 8) | std::size_t{p[3]};
    p += 4;
    left -= 4;
    if (len > left)
      return absl::DataLossError("titanic store: truncated frame");
    frames.emplace_back(p, len);
    p += len;
    left -= len;
  }
  return frames;
}

// ASCII lower case (UUIDs and SQLite's pragma answers; locale-free).
std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = absl::ascii_tolower(static_cast<unsigned char>(c));
  return out;
}

// 128 bits straight from the kernel for each UUID.  Not a seeded generator
// in memory: a process that forks (a test's writer child, a daemon that
// daemonizes) would give both copies the same state and they would hand out
// the same UUIDs.
absl::StatusOr<std::string> NewUuid() {
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::InternalError(
          absl::StrCat("titanic store: getrandom: ", std::strerror(errno)));
    }
    got += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string uuid(32, '0');
  for (std::size_t i = 0; i < sizeof bytes; ++i) {
    uuid[2 * i] = kHex[bytes[i] >> 4];
    uuid[2 * i + 1] = kHex[bytes[i] & 0xf];
  }
  return uuid;
}

// Resets a prepared statement when the scope ends, whatever path is taken.
class StatementUse {
 public:
  explicit StatementUse(sqlite3_stmt* s) : s_(s) {}
  ~StatementUse() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  StatementUse(const StatementUse&) = delete;
  StatementUse& operator=(const StatementUse&) = delete;

 private:
  sqlite3_stmt* s_;
};

void BindText(sqlite3_stmt* s, int i, std::string_view text) {
  sqlite3_bind_text(s, i, text.data(), static_cast<int>(text.size()),
                    SQLITE_TRANSIENT);
}

void BindBlob(sqlite3_stmt* s, int i, const std::string& blob) {
  sqlite3_bind_blob(s, i, blob.data(), static_cast<int>(blob.size()),
                    SQLITE_TRANSIENT);
}

std::string ColumnText(sqlite3_stmt* s, int i) {
  const auto* text = sqlite3_column_text(s, i);
  return text == nullptr
             ? std::string()
             : std::string(
                   reinterpret_cast<const char*>(text),
                   static_cast<std::size_t>(sqlite3_column_bytes(s, i)));
}

}  // namespace

bool TitanicStore::ValidUuid(std::string_view uuid) {
  if (uuid.size() != 32) return false;
  for (char c : uuid) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

absl::StatusOr<std::unique_ptr<TitanicStore>> TitanicStore::Open(
    const std::string& path, Options options) {
  if (options.max_requests == 0) {
    return absl::InvalidArgumentError("titanic store: max_requests is 0");
  }
  // One Titanic per file.  Two on one file would both dispatch its pending
  // requests and each miss the other's new ones (the dispatcher reads the
  // file only at start): the two daemons of a fail-over pair on one host
  // with one store_path copied into both configs, or on a shared mount
  // taken for replication.  flock() on a file of its own, not on the
  // database: SQLite's POSIX locks on the database would be released by
  // closing any other descriptor of it, and the lock goes with the process
  // however it ends (kill -9 included).
  const std::string lock_path = path + "-lock";
  const int lock_fd =
      open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0) {
    return absl::InternalError(absl::StrCat(
        "titanic store: cannot open ", lock_path, ": ", std::strerror(errno)));
  }
  if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    close(lock_fd);
    if (err == EWOULDBLOCK) {
      return absl::FailedPreconditionError(absl::StrCat(
          "titanic store: ", path, " is in use by another Titanic (it holds ",
          lock_path,
          "): each Titanic needs a store_path of its own, the two daemons "
          "of a fail-over pair too"));
    }
    return absl::InternalError(absl::StrCat(
        "titanic store: cannot lock ", lock_path, ": ", std::strerror(err)));
  }
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
      nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    close(lock_fd);
    return absl::InternalError(
        absl::StrCat("titanic store: cannot open ", path, ": ", msg));
  }
  std::unique_ptr<TitanicStore> store(new TitanicStore(db, lock_fd, options));
  // Another process holding a write lock (a checkpoint of a process that is
  // being killed) makes us wait a little rather than fail at once.
  sqlite3_busy_timeout(db, 2000);
  const std::string pragmas = absl::StrCat(
      "PRAGMA journal_mode=WAL;"
      "PRAGMA synchronous=",
      options.synchronous == Options::Synchronous::kFull ? "FULL" : "NORMAL",
      ";");
  if (sqlite3_exec(db, pragmas.c_str(), nullptr, nullptr, nullptr) !=
      SQLITE_OK) {
    return store->Error(absl::StrCat("cannot set WAL on ", path));
  }
  // journal_mode answers with the mode it got: a file system without
  // shared memory (some network mounts) cannot do WAL, and we say so
  // rather than silently running with another journal.
  {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA journal_mode;", -1, &s, nullptr) !=
        SQLITE_OK) {
      return store->Error("cannot read journal_mode");
    }
    std::string mode;
    if (sqlite3_step(s) == SQLITE_ROW) mode = ColumnText(s, 0);
    sqlite3_finalize(s);
    if (Lower(mode) != "wal") {
      return absl::FailedPreconditionError(
          absl::StrCat("titanic store: ", path,
                       " cannot use WAL (journal_mode=", mode, ")"));
    }
  }
  if (sqlite3_exec(db, kSchema, nullptr, nullptr, nullptr) != SQLITE_OK) {
    return store->Error(absl::StrCat("cannot create the schema in ", path));
  }
  if (absl::Status s = store->Migrate(); !s.ok()) return s;
  if (absl::Status s = store->Prepare(); !s.ok()) return s;
  if (absl::Status s = store->LoadCounts(); !s.ok()) return s;
  return store;
}

TitanicStore::TitanicStore(sqlite3* db, int lock_fd, Options options)
    : db_(db), lock_fd_(lock_fd), options_(options) {}

TitanicStore::~TitanicStore() {
  for (sqlite3_stmt* s :
       {insert_, get_, set_reply_, fetch_, delete_, pending_, expire_}) {
    sqlite3_finalize(s);  // a no-op on nullptr
  }
  sqlite3_close(db_);
  close(lock_fd_);  // after the database: another Titanic may open it now
}

absl::Status TitanicStore::Error(std::string_view what) const {
  return absl::InternalError(absl::StrCat("titanic store: ", std::string(what),
                                          ": ", sqlite3_errmsg(db_)));
}

absl::Status TitanicStore::Migrate() {
  bool has_created = false;
  {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, "PRAGMA table_info(requests);", -1, &s,
                           nullptr) != SQLITE_OK) {
      return Error("cannot read the schema");
    }
    while (sqlite3_step(s) == SQLITE_ROW) {
      if (ColumnText(s, 1) == "created") has_created = true;
    }
    sqlite3_finalize(s);
  }
  if (!has_created) {
    // Rows of an older file have no arrival time: they count as arrived
    // now, so that the upgrade neither purges them at once nor keeps them
    // for ever.
    const std::string sql = absl::StrCat(
        "BEGIN;"
        "ALTER TABLE requests ADD COLUMN created INTEGER NOT NULL DEFAULT 0;"
        "UPDATE requests SET created = ",
        UnixMillis(std::chrono::system_clock::now()),
        ";"
        "COMMIT;");
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) !=
        SQLITE_OK) {
      const absl::Status error = Error("cannot add arrival times");
      sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
      return error;
    }
  }
  if (sqlite3_exec(db_,
                   "CREATE INDEX IF NOT EXISTS requests_created ON "
                   "requests(created);",
                   nullptr, nullptr, nullptr) != SQLITE_OK) {
    return Error("cannot index arrival times");
  }
  return absl::OkStatus();
}

absl::Status TitanicStore::Prepare() {
  const std::pair<sqlite3_stmt**, const char*> statements[] = {
      {&insert_,
       "INSERT INTO requests(uuid, service, body, created) "
       "VALUES(?1, ?2, ?3, ?4);"},
      {&get_, "SELECT service, body FROM requests WHERE uuid = ?1;"},
      {&set_reply_,
       "UPDATE requests SET reply = ?2 WHERE uuid = ?1 AND reply IS NULL;"},
      {&fetch_, "SELECT reply FROM requests WHERE uuid = ?1;"},
      {&delete_,
       "DELETE FROM requests WHERE uuid = ?1 RETURNING reply IS NULL;"},
      {&pending_,
       "SELECT uuid FROM requests WHERE reply IS NULL ORDER BY seq;"},
      {&expire_,
       "DELETE FROM requests WHERE seq IN (SELECT seq FROM requests WHERE "
       "created < ?1 ORDER BY created, seq LIMIT ?2) RETURNING reply IS "
       "NULL;"},
  };
  for (const auto& [slot, sql] : statements) {
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, slot,
                           nullptr) != SQLITE_OK) {
      return Error(absl::StrCat("cannot prepare \"", sql, "\""));
    }
  }
  return absl::OkStatus();
}

absl::Status TitanicStore::LoadCounts() {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_,
                         "SELECT COUNT(*), COUNT(*) FILTER (WHERE reply IS "
                         "NULL) FROM requests;",
                         -1, &s, nullptr) != SQLITE_OK) {
    return Error("cannot count requests");
  }
  const int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    counts_.stored = static_cast<std::size_t>(sqlite3_column_int64(s, 0));
    counts_.pending = static_cast<std::size_t>(sqlite3_column_int64(s, 1));
  }
  sqlite3_finalize(s);
  return rc == SQLITE_ROW ? absl::OkStatus() : Error("cannot count requests");
}

absl::StatusOr<std::string> TitanicStore::Store(std::string_view service,
                                                const Frames& body) {
  if (service.empty()) {
    return absl::InvalidArgumentError("titanic store: empty service name");
  }
  std::size_t bytes = service.size();
  for (const zmq::message_t& f : body) bytes += f.size();
  if (bytes > options_.max_request_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("titanic store: request of ", bytes,
                     " bytes, more than max_request_bytes (",
                     options_.max_request_bytes, ")"));
  }
  if (counts_.stored >= options_.max_requests) {
    return absl::ResourceExhaustedError(
        absl::StrCat("titanic store: full (", counts_.stored,
                     " requests stored, max_requests)"));
  }
  absl::StatusOr<std::string> uuid = NewUuid();
  if (!uuid.ok()) return uuid.status();
  StatementUse use(insert_);
  BindText(insert_, 1, *uuid);
  BindText(insert_, 2, service);
  BindBlob(insert_, 3, EncodeFrames(body));
  sqlite3_bind_int64(insert_, 4, UnixMillis(std::chrono::system_clock::now()));
  if (sqlite3_step(insert_) != SQLITE_DONE) return Error("cannot store");
  ++counts_.stored;
  ++counts_.pending;
  return uuid;
}

absl::StatusOr<TitanicStore::Request> TitanicStore::Get(std::string_view uuid) {
  const std::string key = Lower(uuid);
  StatementUse use(get_);
  BindText(get_, 1, key);
  const int rc = sqlite3_step(get_);
  if (rc == SQLITE_DONE) {
    return absl::NotFoundError(absl::StrCat("titanic store: no request ", key));
  }
  if (rc != SQLITE_ROW) return Error("cannot read a request");
  Request r;
  r.uuid = key;
  r.service = ColumnText(get_, 0);
  absl::StatusOr<Frames> body =
      DecodeFrames(sqlite3_column_blob(get_, 1), sqlite3_column_bytes(get_, 1));
  if (!body.ok()) return body.status();
  r.body = *std::move(body);
  return r;
}

absl::Status TitanicStore::StoreReply(std::string_view uuid,
                                      const Frames& reply) {
  const std::string key = Lower(uuid);
  StatementUse use(set_reply_);
  BindText(set_reply_, 1, key);
  BindBlob(set_reply_, 2, EncodeFrames(reply));
  if (sqlite3_step(set_reply_) != SQLITE_DONE) {
    return Error("cannot store a reply");
  }
  if (sqlite3_changes(db_) == 1) {
    --counts_.pending;
    return absl::OkStatus();
  }
  // Nothing changed: the request is closed (or never was), or it already
  // has its one reply, which stays.
  absl::StatusOr<Lookup> found = FetchReply(key);
  if (!found.ok()) return found.status();
  return absl::AlreadyExistsError(
      absl::StrCat("titanic store: request ", key, " is already answered"));
}

absl::StatusOr<TitanicStore::Lookup> TitanicStore::FetchReply(
    std::string_view uuid) {
  const std::string key = Lower(uuid);
  StatementUse use(fetch_);
  BindText(fetch_, 1, key);
  const int rc = sqlite3_step(fetch_);
  if (rc == SQLITE_DONE) {
    return absl::NotFoundError(absl::StrCat("titanic store: no request ", key));
  }
  if (rc != SQLITE_ROW) return Error("cannot read a reply");
  Lookup lookup;
  if (sqlite3_column_type(fetch_, 0) == SQLITE_NULL) return lookup;
  absl::StatusOr<Frames> reply = DecodeFrames(sqlite3_column_blob(fetch_, 0),
                                              sqlite3_column_bytes(fetch_, 0));
  if (!reply.ok()) return reply.status();
  lookup.answered = true;
  lookup.reply = *std::move(reply);
  return lookup;
}

absl::Status TitanicStore::Close(std::string_view uuid) {
  const std::string key = Lower(uuid);
  StatementUse use(delete_);
  BindText(delete_, 1, key);
  int rc = sqlite3_step(delete_);
  if (rc == SQLITE_DONE) return absl::OkStatus();  // unknown: idempotent
  if (rc != SQLITE_ROW) return Error("cannot close a request");
  const bool was_pending = sqlite3_column_int(delete_, 0) != 0;
  rc = sqlite3_step(delete_);  // runs the statement to its end (commits)
  if (rc != SQLITE_DONE) return Error("cannot close a request");
  --counts_.stored;
  if (was_pending) --counts_.pending;
  return absl::OkStatus();
}

absl::StatusOr<TitanicStore::Expired> TitanicStore::Expire(
    std::chrono::system_clock::time_point cutoff, std::size_t limit) {
  Expired expired;
  if (limit == 0) return expired;
  StatementUse use(expire_);
  sqlite3_bind_int64(expire_, 1, UnixMillis(cutoff));
  sqlite3_bind_int64(expire_, 2,
                     static_cast<sqlite3_int64>(std::min<std::size_t>(
                         limit, std::numeric_limits<int>::max())));
  int rc;
  while ((rc = sqlite3_step(expire_)) == SQLITE_ROW) {
    ++expired.rows;
    if (sqlite3_column_int(expire_, 0) != 0) ++expired.pending;
  }
  // RETURNING hands the rows out before the statement commits: only DONE
  // says they are gone.
  if (rc != SQLITE_DONE) return Error("cannot expire requests");
  counts_.stored -= std::min(counts_.stored, expired.rows);
  counts_.pending -= std::min(counts_.pending, expired.pending);
  return expired;
}

absl::StatusOr<std::vector<std::string>> TitanicStore::ListPending() {
  StatementUse use(pending_);
  std::vector<std::string> uuids;
  int rc;
  while ((rc = sqlite3_step(pending_)) == SQLITE_ROW) {
    uuids.push_back(ColumnText(pending_, 0));
  }
  if (rc != SQLITE_DONE) return Error("cannot list pending requests");
  return uuids;
}

}  // namespace zb
