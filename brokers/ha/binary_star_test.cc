// Copyright 2026 The zbrokers Authors.
//
// Every rule of zb::BinaryStar (the table in binary_star.h), one row each,
// and the scenarios the rules exist for.

#include "zbrokers/ha/binary_star.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace zb {
namespace {

using std::chrono::milliseconds;
using Clock = BinaryStar::Clock;

constexpr milliseconds kExpiry{2000};
const Clock::time_point kT0 = Clock::time_point() + std::chrono::hours(1);

// A machine of `role` brought into `state` by the shortest real history.
std::unique_ptr<BinaryStar> In(HaRole role, HaState state,
                               Clock::time_point now = kT0) {
  std::unique_ptr<BinaryStar> s =
      *BinaryStar::Create({.role = role, .peer_expiry = kExpiry}, now);
  switch (state) {
    case HaState::kPrimary:
    case HaState::kBackup:
      break;
    case HaState::kActive:
      if (role == HaRole::kPrimary) {
        s->Feed(HaEvent::kPeerBackup, now);
      } else {
        s->Feed(HaEvent::kPeerActive, now);   // passive
        s->Feed(HaEvent::kPeerPrimary, now);  // the primary restarted
      }
      break;
    case HaState::kPassive:
      s->Feed(HaEvent::kPeerActive, now);
      break;
  }
  EXPECT_EQ(s->state(), state) << "setting up " << HaRoleName(role);
  return s;
}

struct Rule {
  HaRole role;
  HaState state;
  HaEvent event;
  bool peer_expired;  // for kClientRequest: the peer silent > peer_expiry
  HaState next;
  bool serve;
  bool split_brain;
  bool failover;
};

std::string Name(const Rule& r) {
  return std::string(HaRoleName(r.role)) + "/" +
         std::string(HaStateName(r.state)) + "/" +
         std::string(HaEventName(r.event)) +
         (r.event == HaEvent::kClientRequest
              ? (r.peer_expired ? "/peer-expired" : "/peer-alive")
              : "");
}

constexpr HaRole P = HaRole::kPrimary;
constexpr HaRole B = HaRole::kBackup;
constexpr HaState PRI = HaState::kPrimary;
constexpr HaState BAK = HaState::kBackup;
constexpr HaState ACT = HaState::kActive;
constexpr HaState PAS = HaState::kPassive;
constexpr HaEvent PP = HaEvent::kPeerPrimary;
constexpr HaEvent PB = HaEvent::kPeerBackup;
constexpr HaEvent PA = HaEvent::kPeerActive;
constexpr HaEvent PS = HaEvent::kPeerPassive;
constexpr HaEvent CR = HaEvent::kClientRequest;

// role, state, event, peer expired, next, serve, split brain, fail-over
const Rule kRules[] = {
    // PRIMARY (the primary just started)
    {P, PRI, PB, false, ACT, false, false, false},
    {P, PRI, PA, false, PAS, false, false, false},
    {P, PRI, PP, false, PRI, false, false, false},
    {P, PRI, PS, false, PRI, false, false, false},
    {P, PRI, CR, false, PRI, false, false, false},
    {P, PRI, CR, true, ACT, true, false, false},
    // BACKUP (the backup just started)
    {B, BAK, PA, false, PAS, false, false, false},
    {B, BAK, PP, false, BAK, false, false, false},
    {B, BAK, PB, false, BAK, false, false, false},
    {B, BAK, PS, false, BAK, false, false, false},
    {B, BAK, CR, false, BAK, false, false, false},
    {B, BAK, CR, true, BAK, false, false, false},
    // ACTIVE
    {P, ACT, PA, false, ACT, false, true, false},
    {B, ACT, PA, false, PAS, false, true, false},
    {P, ACT, PP, false, ACT, false, false, false},
    {P, ACT, PB, false, ACT, false, false, false},
    {P, ACT, PS, false, ACT, false, false, false},
    {B, ACT, PP, false, ACT, false, false, false},
    {B, ACT, PS, false, ACT, false, false, false},
    {P, ACT, CR, false, ACT, true, false, false},
    {P, ACT, CR, true, ACT, true, false, false},
    {B, ACT, CR, false, ACT, true, false, false},
    // PASSIVE
    {B, PAS, PP, false, ACT, false, false, true},
    {P, PAS, PB, false, ACT, false, false, true},
    {P, PAS, PS, false, ACT, false, false, true},
    {B, PAS, PS, false, PAS, false, false, false},
    {P, PAS, PA, false, PAS, false, false, false},
    {B, PAS, PA, false, PAS, false, false, false},
    {B, PAS, CR, false, PAS, false, false, false},
    {B, PAS, CR, true, ACT, true, false, true},
    {P, PAS, CR, false, PAS, false, false, false},
    {P, PAS, CR, true, ACT, true, false, true},
};

TEST(BinaryStarTest, EveryRuleOfTheTable) {
  for (const Rule& r : kRules) {
    SCOPED_TRACE(Name(r));
    std::unique_ptr<BinaryStar> s = In(r.role, r.state);
    const Clock::time_point now =
        r.peer_expired ? kT0 + kExpiry : kT0 + kExpiry - milliseconds(1);
    const BinaryStar::Stats before = s->stats();
    const BinaryStar::Outcome o = s->Feed(r.event, now);
    EXPECT_EQ(o.before, r.state);
    EXPECT_EQ(o.after, r.next) << HaStateName(o.after);
    EXPECT_EQ(s->state(), r.next);
    EXPECT_EQ(o.serve, r.serve);
    EXPECT_EQ(o.split_brain, r.split_brain);
    EXPECT_EQ(o.failover, r.failover);
    EXPECT_FALSE(o.role_conflict);
    EXPECT_EQ(s->stats().split_brains - before.split_brains,
              r.split_brain ? 1u : 0u);
    EXPECT_EQ(s->stats().failovers - before.failovers, r.failover ? 1u : 0u);
    EXPECT_EQ(s->stats().transitions - before.transitions,
              r.state != r.next ? 1u : 0u);
    if (r.event == HaEvent::kClientRequest) {
      EXPECT_EQ(s->stats().requests_refused - before.requests_refused,
                r.serve ? 0u : 1u);
    }
  }
}

TEST(BinaryStarTest, TheTableCoversEveryStateAndEvent) {
  // Each (state, event) pair appears for at least one role, and each
  // client request both with the peer alive and expired.
  for (HaState st : {PRI, BAK, ACT, PAS}) {
    for (HaEvent ev : {PP, PB, PA, PS, CR}) {
      for (bool expired : {false, true}) {
        if (ev != CR && expired) continue;
        bool found = false;
        for (const Rule& r : kRules) {
          found |= r.state == st && r.event == ev && r.peer_expired == expired;
        }
        EXPECT_TRUE(found) << HaStateName(st) << "/" << HaEventName(ev)
                           << (expired ? "/expired" : "");
      }
    }
  }
}

TEST(BinaryStarTest, APassiveThatHearsNothingAndSeesNoClientStaysPassive) {
  std::unique_ptr<BinaryStar> s = In(B, PAS);
  // An hour of silence: time alone changes nothing.
  EXPECT_TRUE(s->peer_expired(kT0 + std::chrono::hours(1)));
  EXPECT_EQ(s->state(), PAS);
  EXPECT_EQ(s->stats().transitions, 1u);  // BACKUP -> PASSIVE only
  // And a peer that keeps talking keeps it from ever taking over.
  for (int i = 1; i <= 100; ++i) {
    const Clock::time_point t = kT0 + milliseconds(1000 * i);
    s->Feed(PA, t);
    const BinaryStar::Outcome o = s->Feed(CR, t + milliseconds(1999));
    ASSERT_FALSE(o.serve) << i;
  }
  EXPECT_EQ(s->state(), PAS);
  EXPECT_EQ(s->stats().requests_refused, 100u);
}

TEST(BinaryStarTest, ABackupThatNeverHeardItsPrimaryNeverServes) {
  std::unique_ptr<BinaryStar> s = In(B, BAK);
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(s->Feed(CR, kT0 + std::chrono::minutes(i)).serve);
  }
  EXPECT_EQ(s->state(), BAK);
}

TEST(BinaryStarTest, APassiveWhosePeerExpiredTakesOverOnAClientRequest) {
  std::unique_ptr<BinaryStar> s = In(B, PAS);
  const Clock::time_point heard = kT0 + milliseconds(500);
  s->Feed(PA, heard);  // last word of the active
  EXPECT_EQ(s->peer_deadline(), heard + kExpiry);
  EXPECT_FALSE(s->Feed(CR, heard + kExpiry - milliseconds(1)).serve);
  const BinaryStar::Outcome o = s->Feed(CR, heard + kExpiry);
  EXPECT_TRUE(o.serve);
  EXPECT_TRUE(o.failover);
  EXPECT_EQ(s->state(), ACT);
  EXPECT_EQ(s->stats().failovers, 1u);
  // Served from then on.
  EXPECT_TRUE(s->Feed(CR, heard + kExpiry + milliseconds(1)).serve);
}

TEST(BinaryStarTest, APrimaryRestartedWhileTheBackupIsActiveBecomesPassive) {
  // The backup took over.
  std::unique_ptr<BinaryStar> backup = In(B, PAS);
  ASSERT_TRUE(backup->Feed(CR, kT0 + kExpiry).serve);
  // The primary comes back: it starts as PRIMARY, hears ACTIVE.
  const Clock::time_point t1 = kT0 + std::chrono::minutes(1);
  std::unique_ptr<BinaryStar> primary = In(P, PRI, t1);
  backup->Feed(PP, t1);  // the backup hears PRIMARY: stays active
  EXPECT_EQ(backup->state(), ACT);
  primary->Feed(PA, t1);
  EXPECT_EQ(primary->state(), PAS);
  // No automatic fail-back: the primary refuses while the backup lives.
  EXPECT_FALSE(primary->Feed(CR, t1 + milliseconds(10)).serve);
  // Killing the backup makes the primary active again on a client request.
  EXPECT_TRUE(primary->Feed(CR, t1 + kExpiry).serve);
  EXPECT_EQ(primary->state(), ACT);
  EXPECT_EQ(primary->stats().failovers, 1u);
}

TEST(BinaryStarTest, TwoActivesAreASplitBrainThatTheBackupResolves) {
  // A partition: the backup took over while the primary lived on.
  std::unique_ptr<BinaryStar> primary = In(P, ACT);
  std::unique_ptr<BinaryStar> backup = In(B, PAS);
  ASSERT_TRUE(backup->Feed(CR, kT0 + kExpiry).serve);
  // The partition heals; each hears the other's ACTIVE.
  const Clock::time_point t = kT0 + std::chrono::seconds(10);
  const BinaryStar::Outcome p = primary->Feed(PA, t);
  const BinaryStar::Outcome b = backup->Feed(PA, t);
  EXPECT_TRUE(p.split_brain);
  EXPECT_TRUE(b.split_brain);
  EXPECT_EQ(primary->state(), ACT);
  EXPECT_EQ(backup->state(), PAS);
  EXPECT_EQ(primary->stats().split_brains, 1u);
  EXPECT_EQ(backup->stats().split_brains, 1u);
  // Afterwards the primary hears PASSIVE: no more split brain.
  EXPECT_FALSE(primary->Feed(PS, t + milliseconds(1)).split_brain);
  EXPECT_EQ(primary->state(), ACT);
}

TEST(BinaryStarTest, ThePairStartsUpInEitherOrder) {
  std::unique_ptr<BinaryStar> primary = In(P, PRI);
  std::unique_ptr<BinaryStar> backup = In(B, BAK);
  // The backup's first message reaches the primary first...
  primary->Feed(PB, kT0);
  backup->Feed(PA, kT0);
  EXPECT_EQ(primary->state(), ACT);
  EXPECT_EQ(backup->state(), PAS);
  // ... or the primary's first message reaches the backup first.
  primary = In(P, PRI);
  backup = In(B, BAK);
  backup->Feed(PP, kT0);
  EXPECT_EQ(backup->state(), BAK);
  primary->Feed(PB, kT0);
  backup->Feed(PA, kT0);
  EXPECT_EQ(primary->state(), ACT);
  EXPECT_EQ(backup->state(), PAS);
}

TEST(BinaryStarTest, APrimaryAloneServesOnlyAfterOneExpiry) {
  std::unique_ptr<BinaryStar> s = In(P, PRI);
  EXPECT_FALSE(s->Feed(CR, kT0).serve);
  EXPECT_FALSE(s->Feed(CR, kT0 + kExpiry - milliseconds(1)).serve);
  EXPECT_TRUE(s->Feed(CR, kT0 + kExpiry).serve);
  EXPECT_EQ(s->stats().failovers, 0u);  // it was never passive
}

TEST(BinaryStarTest, APeerOfTheSameRoleIsAConflictThatKeepsItAlive) {
  std::unique_ptr<BinaryStar> s = In(P, PRI);
  const Clock::time_point t = kT0 + std::chrono::seconds(5);
  const BinaryStar::Outcome o = s->FeedPeer(ACT, P, t);
  EXPECT_TRUE(o.role_conflict);
  EXPECT_FALSE(o.changed());
  EXPECT_EQ(s->stats().role_conflicts, 1u);
  EXPECT_EQ(s->peer_deadline(), t + kExpiry);
  // It never takes over from a peer it hears, conflict or not.
  EXPECT_FALSE(s->Feed(CR, t + milliseconds(10)).serve);
  // A peer of the other role is fed as usual.
  EXPECT_FALSE(s->FeedPeer(ACT, B, t).role_conflict);
  EXPECT_EQ(s->state(), PAS);
}

TEST(BinaryStarTest, CreateRefusesAnExpiryThatIsNotPositive) {
  absl::StatusOr<std::unique_ptr<BinaryStar>> s =
      BinaryStar::Create({.peer_expiry = milliseconds(0)}, kT0);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("peer_expiry"), std::string::npos);
}

TEST(BinaryStarTest, NamesAndParsing) {
  EXPECT_EQ(HaStateName(ACT), "active");
  EXPECT_EQ(HaStateName(PAS), "passive");
  EXPECT_EQ(*ParseHaRole("backup"), B);
  EXPECT_EQ(*ParseHaRole("primary"), P);
  EXPECT_FALSE(ParseHaRole("Primary").ok());
  EXPECT_EQ(PeerEvent(ACT), PA);
  EXPECT_EQ(PeerEvent(PRI), PP);
}

}  // namespace
}  // namespace zb
