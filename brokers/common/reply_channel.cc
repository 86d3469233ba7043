// Copyright 2026 The zbrokers Authors.

#include "zbrokers/common/reply_channel.h"

#include <cassert>

namespace zb::internal {

ReplyChannelCore::ReplyChannelCore(Reactor& reactor, void* target)
    : reactor_(&reactor), thread_(std::this_thread::get_id()), target_(target) {
  // The channel learns the target's thread from this call: opened anywhere
  // else, every answer would take the wrong path.
  assert(reactor.on_owner_thread() &&
         "ReplyChannel::Open must be called on the reactor's thread");
}

bool ReplyChannelCore::open() const {
  if (on_target_thread()) return target_ != nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  return target_ != nullptr;
}

bool ReplyChannelCore::PostWhileOpen(Reactor::Task task) {
  std::unique_lock<std::mutex> lock(mu_);
  if (target_ == nullptr) {
    lock.unlock();
    task = nullptr;  // counts itself dropped
    return false;
  }
  // Under the lock: the target cannot close the channel, so it (and, by the
  // contract, its reactor) exists until the task is queued.  A refused task
  // is destroyed inside Post(), which counts it.
  return reactor_->Post(std::move(task));
}

void ReplyChannelCore::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  target_ = nullptr;
}

}  // namespace zb::internal
