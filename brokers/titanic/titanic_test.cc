// Copyright 2026 The zbrokers Authors.
//
// zb::Titanic in one process: a Majordomo broker, Titanic, echo workers and
// an MDP client, all on the test thread's reactor.  Short heartbeats; every
// wait is bounded and nothing asserts on timing.

#include "zbrokers/titanic/titanic.h"

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/testing/must.h"
#include "test/testing/wait.h"
#include "zbrokers/majordomo/broker.h"
#include "zbrokers/majordomo/client.h"
#include "zbrokers/majordomo/worker.h"

namespace zb {
namespace {

using namespace std::chrono_literals;
using Strings = std::vector<std::string>;

class TitanicTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/zb_titanic_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    MajordomoBroker::Options bo;
    bo.heartbeat_interval = 50ms;
    bo.heartbeat_liveness = 10;
    broker_ = test::Must(MajordomoBroker::Create(reactor_, ctx_, bo));
    ASSERT_TRUE(broker_->Bind("tcp://127.0.0.1:*").ok());
    endpoint_ = broker_->endpoints().back();
    client_ = test::Must(MdpAsyncClient::Create(reactor_, ctx_, endpoint_));
  }

  void TearDown() override {
    titanic_.reset();
    workers_.clear();
    client_.reset();
    broker_.reset();
    std::filesystem::remove_all(dir_);
  }

  TitanicOptions Options() {
    TitanicOptions o;
    o.broker = endpoint_;
    o.store_path = dir_ + "/titanic.db";
    o.heartbeat_interval = 50ms;
    o.request_timeout = 1000ms;
    o.retry_delay = 50ms;
    o.log = [](LogLevel, std::string_view) {};
    return o;
  }

  void StartTitanic(TitanicOptions o) {
    absl::StatusOr<std::unique_ptr<Titanic>> t =
        Titanic::Create(reactor_, ctx_, std::move(o));
    ASSERT_TRUE(t.ok()) << t.status();
    titanic_ = *std::move(t);
  }

  // An echo worker for `service` that prefixes every reply, and counts.
  void StartEcho(const std::string& service, int* calls = nullptr) {
    MdpWorker::Options wo;
    wo.heartbeat_interval = 50ms;
    wo.heartbeat_liveness = 10;
    wo.reconnect_delay = 20ms;
    AddWorker(MdpWorker::Create(
        reactor_, ctx_, endpoint_, service,
        [calls](Frames body, MdpWorker::Replier r) {
          if (calls != nullptr) ++*calls;
          Frames reply = MakeFrames({"echo:"});
          for (auto& f : body) reply.push_back(std::move(f));
          r.Reply(std::move(reply));
        },
        wo));
  }

  void AddWorker(absl::StatusOr<std::unique_ptr<MdpWorker>> w) {
    ASSERT_TRUE(w.ok()) << w.status();
    workers_.push_back(*std::move(w));
  }

  // One request through the broker; the reply as strings.
  Strings Call(std::string_view service, Frames body) {
    std::optional<absl::StatusOr<Frames>> got;
    EXPECT_TRUE(client_
                    ->Request(
                        service, std::move(body),
                        [&](absl::StatusOr<Frames> r) { got = std::move(r); },
                        5000ms)
                    .ok());
    EXPECT_TRUE(test::RunUntil(
        reactor_, [&] { return got.has_value(); }, 10s));
    if (!got.has_value() || !got->ok()) {
      ADD_FAILURE() << service << ": no reply: "
                    << (got ? got->status().ToString() : "none");
      return {};
    }
    return FramesToStrings(**got);
  }

  std::string Submit(std::string_view service, std::string_view body) {
    Strings r = Call("titanic.request", MakeFrames({service, body}));
    EXPECT_EQ(r.size(), 2u);
    if (r.size() != 2) return "";
    EXPECT_EQ(r[0], "200");
    EXPECT_TRUE(TitanicStore::ValidUuid(r[1])) << r[1];
    return r[1];
  }

  // Polls titanic.reply until it is no longer "300".
  Strings AwaitReply(const std::string& uuid) {
    Strings r;
    test::RunUntil(
        reactor_,
        [&] {
          r = Call("titanic.reply", MakeFrames({uuid}));
          if (!r.empty() && r[0] == "300") {
            test::RunFor(reactor_, 20ms);
            return false;
          }
          return true;
        },
        20s);
    return r;
  }

  zmq::context_t ctx_;
  Reactor reactor_;
  std::string dir_;
  std::unique_ptr<MajordomoBroker> broker_;
  std::string endpoint_;
  std::unique_ptr<MdpAsyncClient> client_;
  std::vector<std::unique_ptr<MdpWorker>> workers_;
  std::unique_ptr<Titanic> titanic_;
};

TEST_F(TitanicTest, RequestReplyClose) {
  StartTitanic(Options());
  StartEcho("echo");
  const std::string uuid = Submit("echo", "hello");
  EXPECT_EQ(AwaitReply(uuid), (Strings{"200", "echo:", "hello"}));
  // Idempotent: the same answer again.
  EXPECT_EQ(Call("titanic.reply", MakeFrames({uuid})),
            (Strings{"200", "echo:", "hello"}));
  EXPECT_EQ(titanic_->stats().stored, 1u);
  EXPECT_EQ(Call("titanic.close", MakeFrames({uuid})), (Strings{"200"}));
  EXPECT_EQ(Call("titanic.close", MakeFrames({uuid})), (Strings{"200"}));
  Strings gone = Call("titanic.reply", MakeFrames({uuid}));
  ASSERT_FALSE(gone.empty());
  EXPECT_EQ(gone[0].substr(0, 3), "400");
  const Titanic::Stats s = titanic_->stats();
  EXPECT_EQ(s.stored, 0u);
  EXPECT_EQ(s.accepted, 1u);
  EXPECT_EQ(s.answered, 1u);
  EXPECT_EQ(s.closed, 2u);
}

TEST_F(TitanicTest, PendingUntilAWorkerComes) {
  StartTitanic(Options());
  const std::string uuid = Submit("later", "x");
  test::RunFor(reactor_, 200ms);
  EXPECT_EQ(Call("titanic.reply", MakeFrames({uuid})), (Strings{"300"}));
  StartEcho("later");
  EXPECT_EQ(AwaitReply(uuid), (Strings{"200", "echo:", "x"}));
}

TEST_F(TitanicTest, BadInputGetsItsOwnAnswer) {
  StartTitanic(Options());
  auto code = [](const Strings& r) {
    return r.empty() ? std::string() : r[0].substr(0, 3);
  };
  EXPECT_EQ(code(Call("titanic.request", MakeFrames({"only-service"}))), "400");
  EXPECT_EQ(code(Call("titanic.request", MakeFrames({"", "body"}))), "400");
  EXPECT_EQ(code(Call("titanic.reply", MakeFrames({"not-a-uuid"}))), "400");
  EXPECT_EQ(
      code(Call("titanic.reply", MakeFrames({std::string(32, 'a'), "x"}))),
      "400");
  EXPECT_EQ(code(Call("titanic.close", MakeFrames({"zz"}))), "400");
  // A well-formed unknown UUID: unknown for reply, fine for close (RFC 9).
  EXPECT_EQ(code(Call("titanic.reply", MakeFrames({std::string(32, 'a')}))),
            "400");
  EXPECT_EQ(Call("titanic.close", MakeFrames({std::string(32, 'a')})),
            (Strings{"200"}));
  EXPECT_EQ(titanic_->stats().bad_requests, 5u);
  EXPECT_EQ(titanic_->stats().stored, 0u);
}

TEST_F(TitanicTest, FullStoreAnswers500AndNothingIsStored) {
  TitanicOptions o = Options();
  o.max_requests = 2;
  StartTitanic(std::move(o));
  Submit("nobody", "1");
  Submit("nobody", "2");
  Strings r = Call("titanic.request", MakeFrames({"nobody", "3"}));
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(r[0].substr(0, 3), "500");
  EXPECT_EQ(r.size(), 1u);
  EXPECT_EQ(titanic_->stats().refused_full, 1u);
  EXPECT_EQ(titanic_->stats().stored, 2u);
}

// A request whose client never closes it, answered or never answered, is
// deleted request_expiry after it arrived: titanic.reply then says it is
// unknown, and the store holds nothing (before request_expiry, both stayed
// in the store for ever).
TEST_F(TitanicTest, UnclosedRequestsExpire) {
  TitanicOptions o = Options();
  o.request_expiry = 300ms;
  StartTitanic(std::move(o));
  StartEcho("echo");
  const std::string answered = Submit("echo", "a");
  EXPECT_EQ(AwaitReply(answered), (Strings{"200", "echo:", "a"}));
  const std::string pending = Submit("nobody", "p");
  EXPECT_TRUE(test::RunUntil(
      reactor_, [&] { return titanic_->stats().stored == 0; }, 10s))
      << "still stored: " << titanic_->stats().stored;
  for (const std::string& uuid : {answered, pending}) {
    Strings r = Call("titanic.reply", MakeFrames({uuid}));
    ASSERT_FALSE(r.empty());
    EXPECT_EQ(r[0].substr(0, 3), "400") << r[0];
  }
  const Titanic::Stats s = titanic_->stats();
  EXPECT_EQ(s.expired, 2u);
  EXPECT_EQ(s.expired_pending, 1u);
  EXPECT_EQ(s.pending, 0u);
}

// A backlog larger than one batch is deleted in transactions of at most
// kExpireBatch rows, one after the other, until none is left.
TEST_F(TitanicTest, ExpiryDeletesABacklogInBoundedBatches) {
  const std::size_t n = 2 * Titanic::kExpireBatch + 500;
  {
    TitanicStoreOptions so;
    so.synchronous = TitanicStoreOptions::Synchronous::kNormal;  // fast seed
    auto store = TitanicStore::Open(Options().store_path, so);
    ASSERT_TRUE(store.ok());
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_TRUE((*store)->Store("nobody", MakeFrames({"x"})).ok());
    }
  }
  std::vector<std::string> lines;
  TitanicOptions o = Options();
  o.synchronous = TitanicStoreOptions::Synchronous::kNormal;
  o.request_expiry = 200ms;
  o.log = [&lines](LogLevel, std::string_view line) {
    if (line.rfind("expired ", 0) == 0) lines.emplace_back(line);
  };
  StartTitanic(std::move(o));
  EXPECT_TRUE(test::RunUntil(
      reactor_, [&] { return titanic_->stats().stored == 0; }, 30s))
      << "still stored: " << titanic_->stats().stored;
  EXPECT_EQ(titanic_->stats().expired, n);
  EXPECT_EQ(titanic_->stats().expired_pending, n);
  // One line per batch: at least three batches, none above the bound.
  ASSERT_GE(lines.size(), 3u);
  for (const std::string& line : lines) {
    const std::size_t rows = std::stoul(line.substr(8));
    EXPECT_LE(rows, Titanic::kExpireBatch) << line;
  }
}

// request_expiry 0 keeps requests (the previous behaviour, for those who
// close everything themselves); a negative one is refused.
TEST_F(TitanicTest, ZeroExpiryKeepsRequestsAndNegativeIsRefused) {
  TitanicOptions bad = Options();
  bad.request_expiry = -1ms;
  EXPECT_EQ(Titanic::Create(reactor_, ctx_, std::move(bad)).status().code(),
            absl::StatusCode::kInvalidArgument);
  TitanicOptions o = Options();
  o.request_expiry = 0ms;
  StartTitanic(std::move(o));
  Submit("nobody", "p");
  test::RunFor(reactor_, 300ms);
  EXPECT_EQ(titanic_->stats().stored, 1u);
  EXPECT_EQ(titanic_->stats().expired, 0u);
}

TEST_F(TitanicTest, ResumesPendingRequestsFromTheStore) {
  std::vector<std::string> uuids;
  {
    // What a Titanic that died left behind: pending requests on disk.
    auto store = TitanicStore::Open(Options().store_path);
    ASSERT_TRUE(store.ok());
    for (int i = 0; i < 5; ++i) {
      auto u = (*store)->Store("echo", MakeFrames({absl::StrCat("r", i)}));
      ASSERT_TRUE(u.ok());
      uuids.push_back(*u);
    }
  }
  int calls = 0;
  StartEcho("echo", &calls);
  StartTitanic(Options());
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(AwaitReply(uuids[i]),
              (Strings{"200", "echo:", absl::StrCat("r", i)}));
  }
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(titanic_->stats().pending, 0u);
}

TEST_F(TitanicTest, RetriesAfterATimeoutAndKeepsTheFirstReply) {
  TitanicOptions o = Options();
  o.request_timeout = 200ms;
  StartTitanic(std::move(o));
  // A worker that sits on the first request (never answers it) and answers
  // the second: the first dispatch times out and Titanic sends it again.
  int calls = 0;
  std::vector<MdpWorker::Replier> held;
  MdpWorker::Options wo;
  wo.heartbeat_interval = 50ms;
  wo.heartbeat_liveness = 10;
  wo.reconnect_delay = 20ms;
  AddWorker(MdpWorker::Create(
      reactor_, ctx_, endpoint_, "slow",
      [&](Frames body, MdpWorker::Replier r) {
        if (++calls == 1) {
          held.push_back(std::move(r));
          return;
        }
        Frames reply = MakeFrames({absl::StrCat("answer-", calls)});
        for (auto& f : body) reply.push_back(std::move(f));
        r.Reply(std::move(reply));
      },
      wo));
  const std::string uuid = Submit("slow", "q");
  // Only once the first copy is held, a second worker, so the retry does
  // not wait behind it (and the first copy cannot go to the echo worker).
  ASSERT_TRUE(test::RunUntil(
      reactor_, [&] { return held.size() == 1; }, 10s));
  StartEcho("slow");
  Strings r = AwaitReply(uuid);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], "200");
  EXPECT_GE(titanic_->stats().retries, 1u);
  // The late answer to the first dispatch comes now: it must not replace
  // the stored one.
  ASSERT_EQ(held.size(), 1u);
  held[0].Reply(MakeFrames({"late"}));
  test::RunFor(reactor_, 300ms);
  EXPECT_EQ(Call("titanic.reply", MakeFrames({uuid})), r);
}

// More requests than the workers can finish within request_timeout: the
// first dispatches time out while their copies still wait in the broker's
// queue, and resending them at the same timeout only adds copies ahead of
// the new ones, so nothing is ever answered in time (a retry storm).  Each
// resend of a request waits longer (request_timeout doubled per attempt,
// up to 16 times), so the backlog drains.
TEST_F(TitanicTest, SlowWorkersDoNotCauseARetryStorm) {
  TitanicOptions o = Options();
  o.request_timeout = 300ms;
  o.retry_delay = 20ms;
  StartTitanic(std::move(o));
  MdpWorker::Options wo;
  wo.heartbeat_interval = 50ms;
  wo.heartbeat_liveness = 10;
  std::vector<std::pair<Reactor::Timer, MdpWorker::Replier>> busy;
  // One worker, 80 ms per request, answering from a timer so the reactor
  // keeps running.
  AddWorker(MdpWorker::Create(
      reactor_, ctx_, endpoint_, "slow",
      [&](Frames body, MdpWorker::Replier r) {
        auto shared = std::make_shared<MdpWorker::Replier>(std::move(r));
        auto reply = std::make_shared<Frames>(std::move(body));
        busy.emplace_back(
            *reactor_.After(
                80ms, [shared, reply] { shared->Reply(std::move(*reply)); }),
            MdpWorker::Replier());
      },
      wo));
  std::vector<std::string> uuids;
  for (int i = 0; i < 20; ++i) {
    uuids.push_back(Submit("slow", absl::StrCat("s", i)));
  }
  EXPECT_TRUE(test::RunUntil(
      reactor_, [&] { return titanic_->stats().pending == 0; }, 40s))
      << "still pending: " << titanic_->stats().pending << ", retries "
      << titanic_->stats().retries;
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(Call("titanic.reply", MakeFrames({uuids[i]})),
              (Strings{"200", absl::StrCat("s", i)}));
  }
}

}  // namespace
}  // namespace zb
