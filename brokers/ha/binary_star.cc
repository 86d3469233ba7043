// Copyright 2026 The zbrokers Authors.

#include "zbrokers/ha/binary_star.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace zb {

std::string_view HaRoleName(HaRole role) {
  return role == HaRole::kPrimary ? "primary" : "backup";
}

std::string_view HaStateName(HaState state) {
  switch (state) {
    case HaState::kPrimary:
      return "primary";
    case HaState::kBackup:
      return "backup";
    case HaState::kActive:
      return "active";
    case HaState::kPassive:
      return "passive";
  }
  return "unknown";
}

std::string_view HaEventName(HaEvent event) {
  switch (event) {
    case HaEvent::kPeerPrimary:
      return "peer_primary";
    case HaEvent::kPeerBackup:
      return "peer_backup";
    case HaEvent::kPeerActive:
      return "peer_active";
    case HaEvent::kPeerPassive:
      return "peer_passive";
    case HaEvent::kClientRequest:
      return "client_request";
  }
  return "unknown";
}

absl::StatusOr<HaRole> ParseHaRole(std::string_view text) {
  if (text == "primary") return HaRole::kPrimary;
  if (text == "backup") return HaRole::kBackup;
  return absl::InvalidArgumentError(absl::StrCat(
      "expected \"primary\" or \"backup\", got \"", std::string(text), "\""));
}

HaEvent PeerEvent(HaState state) {
  switch (state) {
    case HaState::kPrimary:
      return HaEvent::kPeerPrimary;
    case HaState::kBackup:
      return HaEvent::kPeerBackup;
    case HaState::kActive:
      return HaEvent::kPeerActive;
    case HaState::kPassive:
      return HaEvent::kPeerPassive;
  }
  return HaEvent::kPeerPassive;
}

absl::StatusOr<std::unique_ptr<BinaryStar>> BinaryStar::Create(
    const Options& options, Clock::time_point now) {
  if (options.peer_expiry.count() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("peer_expiry must be positive, got ",
                     options.peer_expiry.count(), " ms"));
  }
  return std::unique_ptr<BinaryStar>(new BinaryStar(options, now));
}

BinaryStar::BinaryStar(const Options& options, Clock::time_point now)
    : options_(options),
      state_(options.role == HaRole::kPrimary ? HaState::kPrimary
                                              : HaState::kBackup),
      // A broker that just started has not heard its peer yet; it must not
      // take it for dead before one expiry has passed (the peer may well be
      // active and serving).
      peer_deadline_(now + options.peer_expiry) {}

HaState BinaryStar::NextOnPeer(HaEvent event) const {
  const bool primary = options_.role == HaRole::kPrimary;
  switch (state_) {
    case HaState::kPrimary:
      if (event == HaEvent::kPeerBackup) return HaState::kActive;
      if (event == HaEvent::kPeerActive) return HaState::kPassive;
      return state_;
    case HaState::kBackup:
      if (event == HaEvent::kPeerActive) return HaState::kPassive;
      return state_;
    case HaState::kActive:
      // Two actives: the backup gives way, so that the pair converges on
      // the primary whichever side noticed first.
      if (event == HaEvent::kPeerActive && !primary) return HaState::kPassive;
      return state_;
    case HaState::kPassive:
      if (event == HaEvent::kPeerPrimary || event == HaEvent::kPeerBackup) {
        return HaState::kActive;
      }
      if (event == HaEvent::kPeerPassive && primary) return HaState::kActive;
      return state_;
  }
  return state_;
}

BinaryStar::Outcome BinaryStar::Feed(HaEvent event, Clock::time_point now) {
  Outcome o;
  o.before = state_;
  if (event == HaEvent::kClientRequest) {
    switch (state_) {
      case HaState::kActive:
        o.serve = true;
        break;
      case HaState::kPrimary:
      case HaState::kPassive:
        if (peer_expired(now)) {
          o.failover = state_ == HaState::kPassive;
          state_ = HaState::kActive;
          o.serve = true;
        }
        break;
      case HaState::kBackup:
        break;
    }
    ++(o.serve ? stats_.requests_served : stats_.requests_refused);
  } else {
    peer_deadline_ = now + options_.peer_expiry;
    o.split_brain = state_ == HaState::kActive && event == HaEvent::kPeerActive;
    const HaState next = NextOnPeer(event);
    o.failover = state_ == HaState::kPassive && next == HaState::kActive;
    state_ = next;
    if (o.split_brain) ++stats_.split_brains;
  }
  o.after = state_;
  if (o.failover) ++stats_.failovers;
  if (o.changed()) ++stats_.transitions;
  return o;
}

BinaryStar::Outcome BinaryStar::FeedPeer(HaState peer_state, HaRole peer_role,
                                         Clock::time_point now) {
  if (peer_role == options_.role) {
    // Both brokers think they are the primary (or the backup).  Hearing the
    // other still proves it is alive, so we never take over from it; but
    // its state says nothing we can act on.
    peer_deadline_ = now + options_.peer_expiry;
    ++stats_.role_conflicts;
    Outcome o;
    o.before = o.after = state_;
    o.role_conflict = true;
    return o;
  }
  return Feed(PeerEvent(peer_state), now);
}

}  // namespace zb
