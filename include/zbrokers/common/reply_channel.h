// Copyright 2026 The zbrokers Authors.
//
// zb::ReplyChannel<Target> carries answers from any thread to the object that
// owns the requests (its *target*, e.g. a worker) on the target's reactor
// thread, and drops them, counted, once the target is gone.  It is the one
// mechanism behind ConsensusWorker::Responder, MdpWorker::Replier and the C
// binding's reply tokens: a request's answer may be given late, on another
// thread, after the worker was destroyed or even after its reactor was, and
// it must never touch freed memory.
//
//   // The target, on its reactor's thread (a member, declared after what
//   // the answers use, so that it closes first):
//   ReplyChannel<MyWorker>::Binding channel_ =
//       ReplyChannel<MyWorker>::Open(reactor_, *this);
//
//   // Each request's answer object keeps a reference:
//   std::shared_ptr<ReplyChannel<MyWorker>> ref = channel_.channel();
//
//   // Any thread, any time (also after ~MyWorker):
//   ref->Send([reply = std::move(reply)](MyWorker& w) mutable {
//     w.SendReply(std::move(reply));  // on the reactor thread, w alive
//   });
//
// Send(fn) calls fn(target) at once when called on the reactor's thread and
// the target still exists, with nothing allocated or locked, so that an
// answer given inside a handler costs what a direct call costs.  On any other
// thread it posts fn to the reactor (Reactor::Post), and the posted task calls
// fn(target) there if the target still exists when it runs.  An answer that
// does not reach the target (the channel was closed before it was sent or
// before its task ran, the reactor refused the post, or the reactor was
// destroyed with the task still queued) is dropped: fn is destroyed uncalled
// and dropped() counts it.  What an answer that was dropped means for the
// request is the target's policy, not the channel's (docs/reliability.md,
// "Unanswered requests").
//
// Lifetime.  The target holds the Binding; destroying it (or Close()) closes
// the channel, on the reactor thread, before the target goes.  The channel
// itself is reference-counted and lives as long as any answer object holds
// it, so a late Send() is always safe.  Contract: the target closes the
// channel before its reactor is destroyed (a worker must be destroyed before
// its reactor anyway); a Send() that finds the channel open posts while
// holding the channel's lock, so Close() cannot complete, and the reactor
// cannot go, in between.
//
// Thread-safety: Send(), open() and dropped() on any thread; Open(), the
// Binding and whatever fn does, on the reactor's thread.

#ifndef ZBROKERS_COMMON_REPLY_CHANNEL_H_
#define ZBROKERS_COMMON_REPLY_CHANNEL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>

#include "zbrokers/reactor/reactor.h"

namespace zb {

namespace internal {

// The part of ReplyChannel that does not depend on the target's type.
class ReplyChannelCore {
 public:
  ReplyChannelCore(Reactor& reactor, void* target);
  ReplyChannelCore(const ReplyChannelCore&) = delete;
  ReplyChannelCore& operator=(const ReplyChannelCore&) = delete;

  // Whether the target still exists (any thread; only a hint elsewhere, as
  // it may be destroyed right after).
  bool open() const;
  // Answers that did not reach the target.  Any thread.
  std::uint64_t dropped() const {
    return dropped_.load(std::memory_order_relaxed);
  }
  // True on the target's (the reactor's) thread: there Send() delivers
  // before it returns, so fn may capture by reference.
  bool on_target_thread() const {
    return std::this_thread::get_id() == thread_;
  }

 protected:
  // The target, or nullptr once closed.  Reactor thread only (it is written
  // there, so reading it there needs no lock).
  void* target() const { return target_; }
  // Posts `task` to the reactor while the channel is open; otherwise (or
  // when the reactor refuses it) destroys it here and returns false.
  bool PostWhileOpen(Reactor::Task task);
  void Close();
  void CountDropped() { dropped_.fetch_add(1, std::memory_order_relaxed); }

 private:
  mutable std::mutex mu_;
  Reactor* const reactor_;
  const std::thread::id thread_;  // the reactor's (and target's) thread
  // Written on the reactor thread under mu_; read there without it and on
  // other threads under it.
  void* target_;
  std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace internal

template <typename Target>
class ReplyChannel : public internal::ReplyChannelCore,
                     public std::enable_shared_from_this<ReplyChannel<Target>> {
 public:
  // The target's side of the channel.  Move-only; destroying it, or Close(),
  // closes the channel (reactor thread only).
  class Binding {
   public:
    Binding() = default;
    Binding(Binding&& other) noexcept = default;
    Binding& operator=(Binding&& other) noexcept {
      if (this != &other) {
        Close();
        channel_ = std::move(other.channel_);
      }
      return *this;
    }
    ~Binding() { Close(); }

    // From now on every answer is dropped, also those already posted.
    // Idempotent.
    void Close() {
      if (channel_) channel_->Close();
      channel_.reset();
    }
    // What an answer object keeps; null for a closed or empty Binding.
    const std::shared_ptr<ReplyChannel>& channel() const { return channel_; }

   private:
    friend class ReplyChannel;
    explicit Binding(std::shared_ptr<ReplyChannel> channel)
        : channel_(std::move(channel)) {}
    std::shared_ptr<ReplyChannel> channel_;
  };

  // Opens a channel to `target`, which lives on `reactor`'s thread.  Call it
  // on that thread.
  static Binding Open(Reactor& reactor, Target& target) {
    return Binding(std::shared_ptr<ReplyChannel>(
        new ReplyChannel(reactor, static_cast<void*>(&target))));
  }

  // Delivers fn(Target&) on the reactor thread if the target still exists
  // (see the file comment).  `fn` is invoked at most once.  Returns false
  // when the answer was dropped at once; true when it was delivered, or
  // posted (a posted answer may still be dropped, and counted, later).
  template <typename Fn>
  bool Send(Fn&& fn) {
    if (on_target_thread()) {
      if (void* t = target()) {
        std::forward<Fn>(fn)(*static_cast<Target*>(t));
        return true;
      }
      CountDropped();
      return false;
    }
    return PostWhileOpen(Delivery<std::decay_t<Fn>>(this->shared_from_this(),
                                                    std::forward<Fn>(fn)));
  }

 private:
  using internal::ReplyChannelCore::ReplyChannelCore;

  // A posted answer: counts itself dropped unless it reached the target.
  template <typename Fn>
  class Delivery {
   public:
    Delivery(std::shared_ptr<ReplyChannel> channel, Fn fn)
        : channel_(std::move(channel)), fn_(std::move(fn)) {}
    Delivery(Delivery&& other) noexcept
        : channel_(std::move(other.channel_)), fn_(std::move(other.fn_)) {}
    Delivery& operator=(Delivery&&) = delete;
    ~Delivery() {
      if (channel_) channel_->CountDropped();
    }

    void operator()() && {
      std::shared_ptr<ReplyChannel> channel = std::move(channel_);
      if (void* t = channel->target()) {
        std::move(fn_)(*static_cast<Target*>(t));
      } else {
        channel->CountDropped();
      }
    }

   private:
    std::shared_ptr<ReplyChannel> channel_;  // null once run
    Fn fn_;
  };
};

}  // namespace zb

#endif  // ZBROKERS_COMMON_REPLY_CHANNEL_H_
