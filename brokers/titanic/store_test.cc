// Copyright 2026 The zbrokers Authors.
//
// TitanicStore: what it keeps, in which order, its bounds, and what is left
// of the file after a writer was killed -9 in the middle of its work.

#include "zbrokers/titanic/store.h"

#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace zb {
namespace {

using Sync = TitanicStoreOptions::Synchronous;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::system_clock;

class TitanicStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/zb_titanic_store_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/titanic.db";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<TitanicStore> OpenOrDie(TitanicStoreOptions options = {}) {
    absl::StatusOr<std::unique_ptr<TitanicStore>> store =
        TitanicStore::Open(path_, options);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  std::string dir_;
  std::string path_;
};

TEST_F(TitanicStoreTest, StoresFramesExactlyAndAnswersOnce) {
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  const std::string binary("a\0b\xff", 4);
  absl::StatusOr<std::string> uuid =
      store->Store("echo", MakeFrames({"", binary, "last"}));
  ASSERT_TRUE(uuid.ok()) << uuid.status();
  EXPECT_TRUE(TitanicStore::ValidUuid(*uuid)) << *uuid;

  absl::StatusOr<TitanicStore::Request> req = store->Get(*uuid);
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->service, "echo");
  EXPECT_EQ(FramesToStrings(req->body),
            (std::vector<std::string>{"", binary, "last"}));

  absl::StatusOr<TitanicStore::Lookup> lookup = store->FetchReply(*uuid);
  ASSERT_TRUE(lookup.ok());
  EXPECT_FALSE(lookup->answered);
  EXPECT_EQ(store->counts().pending, 1u);

  ASSERT_TRUE(store->StoreReply(*uuid, MakeFrames({"first", ""})).ok());
  // A second reply (the request ran twice) never replaces the first.
  EXPECT_EQ(store->StoreReply(*uuid, MakeFrames({"second"})).code(),
            absl::StatusCode::kAlreadyExists);
  lookup = store->FetchReply(*uuid);
  ASSERT_TRUE(lookup.ok());
  EXPECT_TRUE(lookup->answered);
  EXPECT_EQ(FramesToStrings(lookup->reply),
            (std::vector<std::string>{"first", ""}));
  // Upper-case is the same UUID (RFC 9 allows either).
  std::string upper = *uuid;
  for (char& c : upper) c = static_cast<char>(toupper(c));
  EXPECT_TRUE(store->FetchReply(upper).ok());
  EXPECT_EQ(store->counts().stored, 1u);
  EXPECT_EQ(store->counts().pending, 0u);
}

TEST_F(TitanicStoreTest, UnknownRequests) {
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  const std::string nobody(32, 'a');
  EXPECT_EQ(store->FetchReply(nobody).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store->Get(nobody).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->StoreReply(nobody, MakeFrames({"x"})).code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(store->Close(nobody).ok());  // idempotent
  EXPECT_EQ(store->Store("", MakeFrames({"x"})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(TitanicStore::ValidUuid("abc"));
  EXPECT_FALSE(TitanicStore::ValidUuid(std::string(32, 'g')));
  EXPECT_EQ(store->counts().stored, 0u);
}

TEST_F(TitanicStoreTest, ListsPendingInArrivalOrderAndClosepurges) {
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  std::vector<std::string> uuids;
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<std::string> u =
        store->Store("svc", MakeFrames({absl::StrCat(i)}));
    ASSERT_TRUE(u.ok());
    uuids.push_back(*u);
  }
  ASSERT_TRUE(store->StoreReply(uuids[3], MakeFrames({"r"})).ok());
  ASSERT_TRUE(store->Close(uuids[5]).ok());
  ASSERT_TRUE(store->Close(uuids[3]).ok());
  ASSERT_TRUE(store->Close(uuids[3]).ok());  // twice: still fine
  absl::StatusOr<std::vector<std::string>> pending = store->ListPending();
  ASSERT_TRUE(pending.ok());
  std::vector<std::string> want;
  for (int i = 0; i < 20; ++i) {
    if (i != 3 && i != 5) want.push_back(uuids[i]);
  }
  EXPECT_EQ(*pending, want);
  EXPECT_EQ(store->counts().stored, 18u);
  EXPECT_EQ(store->counts().pending, 18u);
  EXPECT_EQ(store->Get(uuids[3]).status().code(), absl::StatusCode::kNotFound);

  for (const std::string& u : want) ASSERT_TRUE(store->Close(u).ok());
  EXPECT_EQ(store->counts().stored, 0u);
  // Closed rows are really gone from the file, not just hidden.
  store.reset();
  store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->counts().stored, 0u);
}

// A request nobody closes (its client died, or never learnt its UUID) must
// not stay forever: Expire() deletes what arrived before the cutoff, oldest
// first, at most `limit` rows per call, pending or answered, and the file
// keeps the deletion.
TEST_F(TitanicStoreTest, ExpireDeletesRequestsOlderThanTheCutoff) {
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  std::vector<std::string> uuids;
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<std::string> u =
        store->Store("svc", MakeFrames({absl::StrCat(i)}));
    ASSERT_TRUE(u.ok());
    uuids.push_back(*u);
  }
  ASSERT_TRUE(store->StoreReply(uuids[0], MakeFrames({"r"})).ok());
  ASSERT_TRUE(store->StoreReply(uuids[1], MakeFrames({"r"})).ok());

  // Nothing arrived an hour ago.
  absl::StatusOr<TitanicStore::Expired> e =
      store->Expire(system_clock::now() - hours(1), 100);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->rows, 0u);
  EXPECT_EQ(store->counts().stored, 5u);

  // Everything arrived before a minute from now; two rows per call, oldest
  // first.
  const auto later = system_clock::now() + minutes(1);
  e = store->Expire(later, 2);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->rows, 2u);
  EXPECT_EQ(e->pending, 0u);  // the two answered ones are the oldest
  EXPECT_EQ(store->Get(uuids[0]).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->Get(uuids[1]).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store->Get(uuids[2]).ok());
  EXPECT_EQ(store->counts().stored, 3u);
  EXPECT_EQ(store->counts().pending, 3u);

  e = store->Expire(later, 100);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->rows, 3u);
  EXPECT_EQ(e->pending, 3u);
  EXPECT_EQ(store->counts().stored, 0u);
  EXPECT_EQ(store->counts().pending, 0u);
  absl::StatusOr<std::vector<std::string>> pending = store->ListPending();
  ASSERT_TRUE(pending.ok());
  EXPECT_TRUE(pending->empty());

  store.reset();
  store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->counts().stored, 0u);
}

// A file written before requests had arrival times: its rows are kept and
// count as arrived when this version first opened the file, so an upgrade
// neither loses them at once nor keeps them forever.
TEST_F(TitanicStoreTest, FileWithoutArrivalTimesIsUpgraded) {
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "PRAGMA journal_mode=WAL;"
                           "CREATE TABLE requests ("
                           "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
                           "  uuid TEXT NOT NULL UNIQUE,"
                           "  service TEXT NOT NULL,"
                           "  body BLOB NOT NULL,"
                           "  reply BLOB);"
                           "INSERT INTO requests(uuid, service, body) VALUES("
                           "  'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'svc', x'');",
                           nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  const auto before_open = system_clock::now() - minutes(1);
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->counts().pending, 1u);
  absl::StatusOr<TitanicStore::Expired> e = store->Expire(before_open, 100);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->rows, 0u);
  e = store->Expire(system_clock::now() + minutes(1), 100);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->rows, 1u);
  // And new requests are stored as usual in the upgraded file.
  EXPECT_TRUE(store->Store("svc", MakeFrames({"x"})).ok());
}

TEST_F(TitanicStoreTest, RefusesBeyondItsBounds) {
  TitanicStoreOptions options;
  options.max_requests = 3;
  options.max_request_bytes = 100;
  auto store = OpenOrDie(options);
  ASSERT_NE(store, nullptr);
  std::vector<std::string> uuids;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<std::string> u = store->Store("svc", MakeFrames({"x"}));
    ASSERT_TRUE(u.ok());
    uuids.push_back(*u);
  }
  // Answered but not closed still counts: the client has not read it.
  ASSERT_TRUE(store->StoreReply(uuids[0], MakeFrames({"r"})).ok());
  EXPECT_EQ(store->Store("svc", MakeFrames({"x"})).status().code(),
            absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(store->Close(uuids[0]).ok());
  EXPECT_TRUE(store->Store("svc", MakeFrames({"x"})).ok());

  ASSERT_TRUE(store->Close(uuids[1]).ok());
  EXPECT_EQ(
      store->Store("svc", MakeFrames({std::string(98, 'x')})).status().code(),
      absl::StatusCode::kInvalidArgument);  // 3 + 98 > 100
  EXPECT_TRUE(store->Store("svc", MakeFrames({std::string(97, 'x')})).ok());
  EXPECT_EQ(store->counts().stored, 3u);

  options.max_requests = 0;
  EXPECT_EQ(TitanicStore::Open(path_, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(TitanicStoreTest, OpenFailsClearly) {
  absl::StatusOr<std::unique_ptr<TitanicStore>> store =
      TitanicStore::Open(dir_ + "/no/such/dir/t.db");
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("no/such/dir"), std::string::npos)
      << store.status();
}

// One Titanic per file (its flock on path-lock): a second store on the
// file, in this process or in another (the other daemon of a fail-over
// pair on the same host, given the same store_path), is refused while the
// first is open.  Before, both opened it and both dispatched its pending
// requests.  That the lock goes with a process killed -9 is
// KillWriterAndReopen's reopen, below.
TEST_F(TitanicStoreTest, ASecondStoreOnTheSameFileIsRefused) {
  auto first = OpenOrDie();
  ASSERT_NE(first, nullptr);
  absl::StatusOr<std::unique_ptr<TitanicStore>> second =
      TitanicStore::Open(path_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(
      second.status().message().find(path_ + " is in use by another Titanic"),
      std::string::npos)
      << second.status();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto other = TitanicStore::Open(path_);
    _exit(!other.ok() &&
                  other.status().code() == absl::StatusCode::kFailedPrecondition
              ? 0
              : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "another process opened the store too: " << status;
  // The first goes on; once it is gone, the file opens again.
  EXPECT_TRUE(first->Store("svc", MakeFrames({"1"})).ok());
  first.reset();
  auto again = OpenOrDie();
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->counts().stored, 1u);
}

TEST_F(TitanicStoreTest, UsesWalAndKeepsItAcrossReopen) {
  std::string uuid;
  {
    auto store = OpenOrDie();
    ASSERT_NE(store, nullptr);
    absl::StatusOr<std::string> u = store->Store("svc", MakeFrames({"1"}));
    ASSERT_TRUE(u.ok());
    uuid = *u;
  }
  EXPECT_TRUE(std::filesystem::exists(path_));
  TitanicStoreOptions normal;
  normal.synchronous = Sync::kNormal;
  auto store = OpenOrDie(normal);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->counts().pending, 1u);
  EXPECT_TRUE(store->Get(uuid).ok());
}

// A child stores requests as fast as it can and reports each UUID on a pipe
// once Store() returned; the parent kills it -9 after some of them, at a
// random point of its work.  Reopened, the store must hold every reported
// request (each was committed), with its body, and nothing damaged.
void KillWriterAndReopen(const std::string& path, Sync sync) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    TitanicStoreOptions options;
    options.synchronous = sync;
    auto store = TitanicStore::Open(path, options);
    if (!store.ok()) _exit(2);
    for (int i = 0;; ++i) {
      auto uuid = (*store)->Store(
          "svc", MakeFrames({absl::StrCat("body-", i), std::string(512, 'p')}));
      if (!uuid.ok()) _exit(3);
      // Every third is answered too, so that the kill also lands in
      // StoreReply().
      if (i % 3 == 0 &&
          !(*store)
               ->StoreReply(*uuid, MakeFrames({absl::StrCat("r-", i)}))
               .ok()) {
        _exit(4);
      }
      const std::string line = absl::StrCat(*uuid, i % 3 == 0 ? "A" : "P");
      if (write(fds[1], line.data(), line.size()) !=
          static_cast<ssize_t>(line.size())) {
        _exit(5);
      }
    }
  }
  close(fds[1]);
  // Read until 40 records came, then kill at once: the child is then in
  // the middle of its next transaction (or about to start it).
  std::string got;
  char buf[4096];
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (got.size() < 40 * 33 && std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer exited by itself: " << status;
  // What it wrote between our last read and the kill.
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) {
    got.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  ASSERT_GE(got.size(), 40u * 33);

  auto store = TitanicStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  const std::size_t reported = got.size() / 33;
  // At most the one transaction in flight at the kill is there unreported.
  EXPECT_GE((*store)->counts().stored, reported);
  EXPECT_LE((*store)->counts().stored, reported + 1);
  for (std::size_t i = 0; i < reported; ++i) {
    const std::string uuid = got.substr(i * 33, 32);
    const bool answered = got[i * 33 + 32] == 'A';
    auto req = (*store)->Get(uuid);
    ASSERT_TRUE(req.ok()) << "request " << i << " lost: " << req.status();
    EXPECT_EQ(View(req->body[0]), absl::StrCat("body-", i));
    auto lookup = (*store)->FetchReply(uuid);
    ASSERT_TRUE(lookup.ok());
    EXPECT_EQ(lookup->answered, answered) << i;
    if (answered) {
      EXPECT_EQ(View(lookup->reply[0]), absl::StrCat("r-", i));
    }
  }
  // And the reopened store works as usual.
  absl::StatusOr<std::string> after =
      (*store)->Store("svc", MakeFrames({"after"}));
  EXPECT_TRUE(after.ok()) << after.status();
}

TEST_F(TitanicStoreTest, ReopensAfterWriterKilledSynchronousFull) {
  KillWriterAndReopen(path_, Sync::kFull);
}

TEST_F(TitanicStoreTest, ReopensAfterWriterKilledSynchronousNormal) {
  KillWriterAndReopen(path_, Sync::kNormal);
}

}  // namespace
}  // namespace zb
