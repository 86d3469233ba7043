// Copyright 2026 The zbrokers Authors.
//
// zb::BinaryStar is the state machine of a fail-over pair (the zguide's
// "Binary Star" pattern, chapter 4): two brokers, one configured as the
// primary and one as the backup, of which at most one serves clients at a
// time.  It is pure: no sockets, no threads, no clock of its own.  Its owner
// feeds it what happened and when (Feed(event, now)) and acts on the
// outcome; zb::BinaryStarNode (node.h) does that over a reactor, with the
// peer's state arriving on a SUB socket.
//
//   auto star = *zb::BinaryStar::Create({.role = zb::HaRole::kBackup,
//                                        .peer_expiry = 2s}, now);
//   star->Feed(zb::HaEvent::kPeerActive, now);         // -> kPassive
//   zb::BinaryStar::Outcome o =
//       star->Feed(zb::HaEvent::kClientRequest, later);
//   if (o.serve) { /* answer the request */ } else { /* drop it */ }
//
// States.  A broker starts in its role's state, kPrimary or kBackup, and
// goes to kActive (serves clients) or kPassive (drops client requests
// without an answer, keeps its workers).  Events are the peer's state as it
// announced it (kPeerPrimary, kPeerBackup, kPeerActive, kPeerPassive) and
// a client request (kClientRequest).  Every rule, as the table-driven test
// (brokers/ha/binary_star_test.cc) checks it:
//
//   state    event           next      client request
//   PRIMARY  PEER_BACKUP     ACTIVE
//   PRIMARY  PEER_ACTIVE     PASSIVE   (the backup took over while we were
//                                       down: no automatic fail-back)
//   PRIMARY  PEER_PRIMARY,   PRIMARY
//            PEER_PASSIVE              (the passive peer becomes active on
//                                       hearing PEER_PRIMARY)
//   PRIMARY  CLIENT_REQUEST  ACTIVE    served, when the peer is expired
//                            PRIMARY   dropped, otherwise
//   BACKUP   PEER_ACTIVE     PASSIVE
//   BACKUP   other peer      BACKUP
//   BACKUP   CLIENT_REQUEST  BACKUP    dropped, always: a backup that has
//                                       never heard its primary never
//                                       serves (start the primary first)
//   ACTIVE   PEER_ACTIVE     PASSIVE   split brain, counted; only the
//                                       backup steps down, the primary
//                                       stays ACTIVE
//   ACTIVE   other peer      ACTIVE
//   ACTIVE   CLIENT_REQUEST  ACTIVE    served
//   PASSIVE  PEER_PRIMARY,   ACTIVE    the peer restarted: it will hear
//            PEER_BACKUP                ACTIVE and become passive
//   PASSIVE  PEER_PASSIVE    ACTIVE    for the primary (two passives serve
//                            PASSIVE   nobody); the backup waits
//   PASSIVE  PEER_ACTIVE     PASSIVE
//   PASSIVE  CLIENT_REQUEST  ACTIVE    served, when the peer is expired
//                                       (a fail-over, counted)
//                            PASSIVE   dropped, otherwise
//
// The peer is *expired* when nothing was heard from it for peer_expiry: at
// start the clock starts at the `now` given to Create(), and every peer
// event pushes the deadline to now + peer_expiry.  Time alone never changes
// the state: only a client request turns an expired peer into a fail-over,
// so a passive broker that hears nothing and sees no client stays passive
// (its clients are still talking to the active one, which may only be cut
// off from us: no split brain).
//
// A peer that announces our own role (two primaries, or two backups) is a
// configuration error: FeedPeer() keeps the peer alive (so we never take
// over from it) but feeds no state event, and counts it (role_conflicts).
//
// Threading: none.  A BinaryStar belongs to one thread at a time; the node
// guards it with a mutex.  `now` must not go backwards.

#ifndef ZBROKERS_HA_BINARY_STAR_H_
#define ZBROKERS_HA_BINARY_STAR_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/statusor.h"

namespace zb {

// What a broker was configured as ([ha] role).
enum class HaRole { kPrimary, kBackup };
// Where a broker is in the pair.  The values are the wire codes of the peer
// link (zbrokers/ha/codec.h) and of the zb_ha_state gauge's order.
enum class HaState : std::uint8_t {
  kPrimary = 1,
  kBackup = 2,
  kActive = 3,
  kPassive = 4,
};
enum class HaEvent {
  kPeerPrimary,
  kPeerBackup,
  kPeerActive,
  kPeerPassive,
  kClientRequest,
};

// "primary", "backup".
std::string_view HaRoleName(HaRole role);
// "primary", "backup", "active", "passive".
std::string_view HaStateName(HaState state);
// "peer_primary", ..., "client_request".
std::string_view HaEventName(HaEvent event);
// "primary" or "backup"; InvalidArgument naming the text otherwise.
absl::StatusOr<HaRole> ParseHaRole(std::string_view text);
// The event by which a peer in `state` is fed.
HaEvent PeerEvent(HaState state);

class BinaryStar {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    HaRole role = HaRole::kPrimary;
    // Silence after which the peer counts as gone; > 0.  Make it a few of
    // the peer's heartbeat intervals (the daemon's default is 2) and shorter
    // than the clients' request timeout, so that a client's first resend to
    // this broker after the active died is already served.
    std::chrono::milliseconds peer_expiry{2000};
  };

  // What one event did.
  struct Outcome {
    HaState before = HaState::kPrimary;
    HaState after = HaState::kPrimary;
    // kClientRequest only: serve the request (true) or drop it unanswered.
    bool serve = false;
    // Two actives were seen (ACTIVE and PEER_ACTIVE).
    bool split_brain = false;
    // This event made us ACTIVE from PASSIVE.
    bool failover = false;
    // FeedPeer(): the peer announced our own role.
    bool role_conflict = false;
    bool changed() const { return before != after; }
  };

  // Counters since Create().
  struct Stats {
    std::uint64_t failovers = 0;         // PASSIVE -> ACTIVE
    std::uint64_t split_brains = 0;      // ACTIVE hearing PEER_ACTIVE
    std::uint64_t role_conflicts = 0;    // peer messages with our role
    std::uint64_t requests_served = 0;   // client requests let through
    std::uint64_t requests_refused = 0;  // client requests dropped
    std::uint64_t transitions = 0;       // state changes of any kind
  };

  // InvalidArgument when peer_expiry is not positive.  `now` starts the
  // peer's expiry clock.
  static absl::StatusOr<std::unique_ptr<BinaryStar>> Create(
      const Options& options, Clock::time_point now);

  BinaryStar(const BinaryStar&) = delete;
  BinaryStar& operator=(const BinaryStar&) = delete;

  // Applies one event at `now` (see the table above).
  Outcome Feed(HaEvent event, Clock::time_point now);
  // A state message from the peer: feeds PeerEvent(peer_state), unless the
  // peer announces our own role (see above).
  Outcome FeedPeer(HaState peer_state, HaRole peer_role, Clock::time_point now);

  HaState state() const { return state_; }
  HaRole role() const { return options_.role; }
  const Options& options() const { return options_; }
  const Stats& stats() const { return stats_; }
  // True when nothing was heard from the peer for peer_expiry at `now`.
  bool peer_expired(Clock::time_point now) const {
    return now >= peer_deadline_;
  }
  Clock::time_point peer_deadline() const { return peer_deadline_; }

 private:
  BinaryStar(const Options& options, Clock::time_point now);
  // The next state for a peer event (no counting, no deadline).
  HaState NextOnPeer(HaEvent event) const;

  const Options options_;
  HaState state_;
  Clock::time_point peer_deadline_;
  Stats stats_;
};

}  // namespace zb

#endif  // ZBROKERS_HA_BINARY_STAR_H_
