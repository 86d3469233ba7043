// Copyright 2026 The zbrokers Authors.
//
// The Majordomo broker under the failures found by the interop and hostile
// runs (issues 10 and 11): sends refused by a vanished worker, workers that
// heartbeat but never answer, full pipes, floods of joins, caps.  Raw
// DEALER peers play the clients and workers, so what is checked is the
// wire behaviour any RFC 7 peer sees.

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "brokers/client/mdp_client.h"
#include "brokers/majordomo/majordomo_broker.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/integration/mdp_test_util.h"

namespace zb {
namespace {

using ::testing::ElementsAre;
using namespace std::chrono_literals;
using namespace mdp_test;

class MdpHardeningTest : public PrefetchTest {};

// Issue 10 item 7: a request whose send to its worker is refused (the
// worker's connection is gone but it has not expired yet) was never
// delivered, so it goes back to the queue whatever max_redispatch says.
// Before the fix, with max_redispatch = 0 it was dropped as a failure.
TEST_F(MdpHardeningTest, RefusedSendIsRequeuedEvenWithoutRedispatch) {
  for (int max_redispatch : {0, 1}) {
    SCOPED_TRACE(max_redispatch);
    auto o = Prefetch(1);  // slow heartbeats: the dead worker stays known
    o.max_redispatch = max_redispatch;
    StartBroker(o);
    auto gone = RawWorker("svc");
    gone.reset();  // closes its socket, no DISCONNECT
    // Let the broker's ROUTER see the connection close.
    std::this_thread::sleep_for(300ms);
    auto c = RawClient();
    c->Send({"", "MDPC01", "svc", "body"});
    ASSERT_TRUE(WaitFor([&] { return Stats().unroutable == 1; }));
    auto s = Stats();
    EXPECT_EQ(s.failures, 0u);
    EXPECT_EQ(s.services["svc"].queued, 1u);
    auto heir = RawWorker("svc");
    auto [addr, body] = Take(*heir);
    EXPECT_EQ(body, "body");
    heir->Send({"", "MDPW01", kReply, addr, "", "answer"});
    EXPECT_THAT(c->Recv(), ElementsAre("", "MDPC01", "svc", "answer"));
    s = Stats();
    EXPECT_EQ(s.failures, 0u);
    EXPECT_EQ(s.replies, 1u);
    heir.reset();
    c.reset();
    StopBroker();
  }
}

}  // namespace
}  // namespace zb
