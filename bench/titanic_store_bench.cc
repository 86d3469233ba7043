// Copyright 2026 The zbrokers Authors.
//
// titanic_store_bench: what Titanic's durability costs (docs/titanic.md,
// "Numbers"; docs/performance.md, "Titanic").
//
//   titanic_store_bench [--dir DIR] [--rounds 5] [--requests 300]
//                       [--trips 100]
//
// 1. The store alone: one request's whole life, Store() + StoreReply() +
//    Close() (three transactions, as Titanic makes them), with the file in
//    WAL mode and synchronous=FULL (each transaction fsynced, the default)
//    or NORMAL (the WAL fsynced at checkpoints only), and, as the baseline
//    WAL is chosen against, the same three statements on a rollback-journal
//    file (journal_mode=DELETE, synchronous=FULL) through raw SQLite.
// 2. End to end: a Majordomo broker, Titanic and an echo worker in this
//    process (tcp loopback), a blocking MDP client: titanic.request until
//    its "200" (the accept, which waits for the store), then titanic.reply
//    until "200", then titanic.close; FULL against NORMAL.
//
// The variants alternate round by round (so they share the machine's
// noise); the medians over rounds are printed with their ratios.  The file
// lives in --dir (default: the current directory): a tmpfs makes fsync
// free and FULL look like NORMAL, so the program prints the file system.

#include <sqlite3.h>
#include <stdlib.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "absl/strings/str_cat.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/majordomo/broker.h"
#include "zbrokers/majordomo/client.h"
#include "zbrokers/majordomo/worker.h"
#include "zbrokers/reactor/reactor_thread.h"
#include "zbrokers/titanic/store.h"
#include "zbrokers/titanic/titanic.h"

namespace {

using Clock = std::chrono::steady_clock;
using Sync = zb::TitanicStoreOptions::Synchronous;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "titanic_store_bench: %s\n", what.c_str());
  std::exit(1);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// A fresh directory under `parent`, removed at the end.
class TempDir {
 public:
  explicit TempDir(const std::string& parent) {
    std::string tmpl = parent + "/titanic_bench_XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr)
      Die("cannot create a dir in " + parent);
    path_ = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// --- 1. The store
// ---------------------------------------------------------------

// Requests per second through Store + StoreReply + Close.
double StoreRound(const std::string& dir, Sync sync, int requests) {
  const std::string path = dir + "/store.db";
  std::filesystem::remove(path);
  zb::TitanicStoreOptions options;
  options.synchronous = sync;
  auto store = zb::TitanicStore::Open(path, options);
  if (!store.ok()) Die(store.status().ToString());
  const zb::Frames body = zb::MakeFrames({std::string(256, 'b')});
  const zb::Frames reply = zb::MakeFrames({std::string(256, 'r')});
  const auto t0 = Clock::now();
  for (int i = 0; i < requests; ++i) {
    absl::StatusOr<std::string> uuid = (*store)->Store("echo", body);
    if (!uuid.ok()) Die(uuid.status().ToString());
    if (absl::Status s = (*store)->StoreReply(*uuid, reply); !s.ok()) {
      Die(s.ToString());
    }
    if (absl::Status s = (*store)->Close(*uuid); !s.ok()) Die(s.ToString());
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  store->reset();
  for (const char* ext : {"", "-wal", "-shm"}) {
    std::filesystem::remove(path + ext);
  }
  return requests / secs;
}

// The same three statements on a rollback-journal file, fsynced (the
// journal mode Titanic does not use).
double RollbackJournalRound(const std::string& dir, int requests) {
  const std::string path = dir + "/journal.db";
  std::filesystem::remove(path);
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) Die("sqlite3_open");
  auto exec = [&](const char* sql) {
    if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
      Die(absl::StrCat(sql, ": ", sqlite3_errmsg(db)));
    }
  };
  exec(
      "PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL;"
      "CREATE TABLE requests (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
      " uuid TEXT NOT NULL UNIQUE, service TEXT NOT NULL,"
      " body BLOB NOT NULL, reply BLOB, created INTEGER NOT NULL);");
  sqlite3_stmt *insert = nullptr, *update = nullptr, *remove = nullptr;
  sqlite3_prepare_v2(db,
                     "INSERT INTO requests(uuid, service, body, created) "
                     "VALUES(?1, 'echo', ?2, 0);",
                     -1, &insert, nullptr);
  sqlite3_prepare_v2(db, "UPDATE requests SET reply = ?2 WHERE uuid = ?1;", -1,
                     &update, nullptr);
  sqlite3_prepare_v2(db, "DELETE FROM requests WHERE uuid = ?1;", -1, &remove,
                     nullptr);
  const std::string blob(260, 'b');
  auto run = [&](sqlite3_stmt* s, const std::string& uuid, bool with_blob) {
    sqlite3_bind_text(s, 1, uuid.data(), static_cast<int>(uuid.size()),
                      SQLITE_STATIC);
    if (with_blob) {
      sqlite3_bind_blob(s, 2, blob.data(), static_cast<int>(blob.size()),
                        SQLITE_STATIC);
    }
    if (sqlite3_step(s) != SQLITE_DONE) Die(sqlite3_errmsg(db));
    sqlite3_reset(s);
  };
  const auto t0 = Clock::now();
  for (int i = 0; i < requests; ++i) {
    const std::string uuid = absl::StrCat("u", i);
    run(insert, uuid, true);
    run(update, uuid, true);
    run(remove, uuid, false);
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  for (sqlite3_stmt* s : {insert, update, remove}) sqlite3_finalize(s);
  sqlite3_close(db);
  std::filesystem::remove(path);
  return requests / secs;
}

// --- 2. End to end
// --------------------------------------------------------------

struct TripTimes {
  double accept_us = 0;  // titanic.request -> "200" + UUID (median)
  double cycle_us = 0;   // request, reply until 200, close (median)
};

TripTimes EndToEndRound(const std::string& dir, Sync sync, int trips) {
  const std::string path = dir + "/e2e.db";
  zmq::context_t ctx;
  zb::ReactorThread thread;
  std::unique_ptr<zb::MajordomoBroker> broker;
  std::unique_ptr<zb::Titanic> titanic;
  std::unique_ptr<zb::MdpWorker> worker;
  std::string endpoint;
  absl::Status started = thread.Invoke([&](zb::Reactor& r) -> absl::Status {
    zb::MajordomoBroker::Options bo;
    bo.heartbeat_interval = std::chrono::milliseconds(500);
    auto b = zb::MajordomoBroker::Create(r, ctx, bo);
    if (!b.ok()) return b.status();
    broker = *std::move(b);
    if (absl::Status s = broker->Bind("tcp://127.0.0.1:*"); !s.ok()) return s;
    endpoint = broker->endpoints().back();
    zb::TitanicOptions o;
    o.broker = endpoint;
    o.store_path = path;
    o.synchronous = sync;
    o.heartbeat_interval = std::chrono::milliseconds(500);
    o.log = [](zb::LogLevel, std::string_view) {};
    auto t = zb::Titanic::Create(r, ctx, std::move(o));
    if (!t.ok()) return t.status();
    titanic = *std::move(t);
    zb::MdpWorker::Options wo;
    wo.heartbeat_interval = std::chrono::milliseconds(500);
    auto w = zb::MdpWorker::Create(
        r, ctx, endpoint, "echo",
        [](zb::Frames body, zb::MdpWorker::Replier rep) {
          rep.Reply(std::move(body));
        },
        wo);
    if (!w.ok()) return w.status();
    worker = *std::move(w);
    return absl::OkStatus();
  });
  if (!started.ok()) Die(started.ToString());

  zb::MdpClientOptions co;
  co.timeout = std::chrono::milliseconds(5000);
  auto client = zb::MdpClient::Create(endpoint, co, &ctx);
  if (!client.ok()) Die(client.status().ToString());
  auto call = [&](std::string_view service, zb::Frames body) {
    absl::StatusOr<zb::Frames> r = (*client)->Request(service, std::move(body));
    if (!r.ok())
      Die(absl::StrCat(std::string(service), ": ", r.status().ToString()));
    return zb::FramesToStrings(*r);
  };
  // One untimed trip: every worker registered, every connection up.
  std::vector<double> accept, cycle;
  for (int i = -1; i < trips; ++i) {
    const auto t0 = Clock::now();
    std::vector<std::string> r =
        call("titanic.request", zb::MakeFrames({"echo", "payload"}));
    const auto t1 = Clock::now();
    if (r.size() != 2 || r[0] != "200") Die("titanic.request refused");
    const std::string uuid = r[1];
    while (true) {
      r = call("titanic.reply", zb::MakeFrames({uuid}));
      if (!r.empty() && r[0] == "200") break;
      if (r.empty() || r[0] != "300") Die("titanic.reply: " + r[0]);
    }
    call("titanic.close", zb::MakeFrames({uuid}));
    const auto t2 = Clock::now();
    if (i < 0) continue;
    accept.push_back(
        std::chrono::duration<double, std::micro>(t1 - t0).count());
    cycle.push_back(std::chrono::duration<double, std::micro>(t2 - t0).count());
  }
  client->reset();
  thread.Invoke([&](zb::Reactor&) {
    worker.reset();
    titanic.reset();
    broker.reset();
  });
  thread.Stop();
  thread.join().IgnoreError();
  for (const char* ext : {"", "-wal", "-shm"}) {
    std::filesystem::remove(path + ext);
  }
  return {Median(accept), Median(cycle)};
}

std::string FileSystem(const std::string& dir) {
  struct statfs fs;
  if (statfs(dir.c_str(), &fs) != 0) return "unknown";
  switch (static_cast<unsigned long>(fs.f_type)) {
    case 0x01021994UL:
      return "tmpfs (fsync is free: FULL will look like NORMAL)";
    case 0xEF53UL:
      return "ext2/3/4";
    case 0x58465342UL:
      return "xfs";
    case 0x9123683EUL:
      return "btrfs";
    case 0x794c7630UL:
      return "overlayfs";
    default:
      return absl::StrCat("type 0x", absl::Hex(fs.f_type));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = ".";
  int rounds = 5, requests = 300, trips = 100;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) Die("missing value for " + flag);
    const char* v = argv[++i];
    if (flag == "--dir") {
      dir = v;
    } else if (flag == "--rounds") {
      rounds = std::max(1, std::atoi(v));
    } else if (flag == "--requests") {
      requests = std::max(1, std::atoi(v));
    } else if (flag == "--trips") {
      trips = std::max(1, std::atoi(v));
    } else {
      Die("unknown flag " + flag + " (--dir, --rounds, --requests, --trips)");
    }
  }
  TempDir tmp(dir);
  std::printf("titanic_store_bench: %s (%s), %d rounds, alternating\n",
              tmp.path().c_str(), FileSystem(tmp.path()).c_str(), rounds);

  std::vector<double> full, normal, journal;
  for (int r = 0; r < rounds; ++r) {
    full.push_back(StoreRound(tmp.path(), Sync::kFull, requests));
    normal.push_back(StoreRound(tmp.path(), Sync::kNormal, requests));
    journal.push_back(RollbackJournalRound(tmp.path(), requests));
  }
  const double f = Median(full), n = Median(normal), j = Median(journal);
  std::printf(
      "\nstore: Store + StoreReply + Close (3 transactions), %d requests per "
      "round, median requests/s\n",
      requests);
  std::printf("  %-34s %10.0f /s   1.00\n", "WAL, synchronous=FULL (default)",
              f);
  std::printf("  %-34s %10.0f /s   %.2f x FULL\n", "WAL, synchronous=NORMAL", n,
              n / f);
  std::printf("  %-34s %10.0f /s   %.2f x FULL\n",
              "rollback journal, FULL (raw)", j, j / f);

  std::vector<double> accept_full, accept_normal, cycle_full, cycle_normal;
  for (int r = 0; r < rounds; ++r) {
    const TripTimes tf = EndToEndRound(tmp.path(), Sync::kFull, trips);
    const TripTimes tn = EndToEndRound(tmp.path(), Sync::kNormal, trips);
    accept_full.push_back(tf.accept_us);
    cycle_full.push_back(tf.cycle_us);
    accept_normal.push_back(tn.accept_us);
    cycle_normal.push_back(tn.cycle_us);
  }
  const double af = Median(accept_full), an = Median(accept_normal);
  const double cf = Median(cycle_full), cn = Median(cycle_normal);
  std::printf(
      "\nend to end over tcp loopback, %d trips per round, median of round "
      "medians, microseconds\n",
      trips);
  std::printf("  %-34s %10s %10s %8s\n", "", "FULL", "NORMAL", "FULL/NORMAL");
  std::printf("  %-34s %10.0f %10.0f %8.2f\n",
              "titanic.request -> 200 (accept)", af, an, af / an);
  std::printf("  %-34s %10.0f %10.0f %8.2f\n", "request, reply, close (cycle)",
              cf, cn, cf / cn);
  return 0;
}
