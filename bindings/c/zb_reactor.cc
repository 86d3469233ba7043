// Copyright 2026 The zbrokers Authors.
//
// zb_reactor_* (zb.h): a reactor's lifetime, running it (its own loop or a
// host's, through zb_reactor_fd), posts and timers.

#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"
#include "bindings/c/zb.h"
#include "bindings/c/zb_internal.h"

namespace zb::capi {
namespace {

// Marks the reactor as running for the lifetime of the object.
class Running {
 public:
  explicit Running(zb_reactor_t* r) : r_(r) { ++r_->depth; }
  ~Running() { --r_->depth; }
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;

 private:
  zb_reactor_t* r_;
};

int CheckRunnable(zb_reactor_t* r, absl::string_view where) {
  if (r == nullptr) return Fail(ZB_ERR_INVALID, absl::StrCat(where, ": NULL"));
  if (int rc = CheckThread(r, where)) return rc;
  if (r->depth > 0) {
    return Fail(ZB_ERR_STATE,
                absl::StrCat(where,
                             ": the reactor is already running (called from "
                             "one of its callbacks?)"));
  }
  return ZB_OK;
}

// zb_reactor_after/every/at: `invalid` says what is wrong with the time
// argument (NULL when nothing is), `schedule(loop, callback)` adds the timer.
// C code names its timers by id (zb_reactor_cancel), so the handle is
// released: the timer lives until it fires, is cancelled, or the loop goes.
template <typename Schedule>
int AddTimer(zb_reactor_t* r, absl::string_view where, const char* invalid,
             zb_callback_fn fn, void* user, zb_free_fn free_user,
             zb_timer_id* id, Schedule schedule) {
  return Guard(where, [&]() -> int {
    if (invalid != nullptr) {
      return Fail(ZB_ERR_INVALID, absl::StrCat(where, ": ", invalid));
    }
    if (r == nullptr || fn == nullptr) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(where, ": reactor and callback are required"));
    }
    if (int rc = CheckOwner(r, where)) return rc;
    absl::StatusOr<zb::Reactor::Timer> timer = schedule(
        *r->loop, [fn, ref = UserRef(user, free_user)]() { fn(ref.get()); });
    if (!timer.ok()) return FromStatus(timer.status(), where);
    const zb::TimerId tid = timer->Release();
    if (id != nullptr) *id = tid;
    return ZB_OK;
  });
}

}  // namespace

// ---- Reactor ----------------------------------------------------------------

extern "C" int zb_reactor_new(zb_reactor_t** out) {
  return Guard("zb_reactor_new", [&]() -> int {
    if (out == nullptr)
      return Fail(ZB_ERR_INVALID, "zb_reactor_new: out is NULL");
    auto r = std::make_unique<zb_reactor_t>();
    r->context = SharedContext();
    r->loop = std::make_unique<zb::Reactor>();
    *out = r.release();
    return ZB_OK;
  });
}

extern "C" int zb_reactor_destroy(zb_reactor_t* r) {
  return Guard("zb_reactor_destroy", [&]() -> int {
    if (r == nullptr) return ZB_OK;
    if (int rc = CheckRunnable(r, "zb_reactor_destroy")) return rc;
    r->destroying = true;
    // Every handle first (clients, workers, brokers, sockets: Handle::Kind
    // says why in that order), then the loop, which drops pending timers and
    // tasks and so releases their users.
    // Destroying the workers closes their reply channels: from now on reply
    // tokens on other threads drop their answers instead of posting to the
    // loop that is about to go.
    Handle::DestroyAll(r);
    r->loop.reset();
    if (r->epoll_fd >= 0) ::close(r->epoll_fd);
    delete r;  // releases this reactor's share of the context last
    return ZB_OK;
  });
}

extern "C" int zb_reactor_run(zb_reactor_t* r) {
  return Guard("zb_reactor_run", [&]() -> int {
    if (int rc = CheckRunnable(r, "zb_reactor_run")) return rc;
    Running running(r);
    while (!r->stop_requested.exchange(false, std::memory_order_acq_rel)) {
      absl::StatusOr<int> n = r->loop->RunOnce(Clock::duration::max());
      if (!n.ok()) return FromStatus(n.status(), "zb_reactor_run");
    }
    return ZB_OK;
  });
}

extern "C" int zb_reactor_run_once(zb_reactor_t* r, int64_t max_wait_us,
                                   int* handled) {
  return Guard("zb_reactor_run_once", [&]() -> int {
    if (int rc = CheckRunnable(r, "zb_reactor_run_once")) return rc;
    r->kicked = false;  // this step consumes the kick's post
    Running running(r);
    absl::StatusOr<int> n = r->loop->RunOnce(
        max_wait_us < 0 ? Clock::duration::max() : Micros(max_wait_us));
    if (!n.ok()) return FromStatus(n.status(), "zb_reactor_run_once");
    if (handled != nullptr) *handled = *n;
    return ZB_OK;
  });
}

extern "C" int zb_reactor_run_for(zb_reactor_t* r, int64_t max_us,
                                  int* stopped) {
  return Guard("zb_reactor_run_for", [&]() -> int {
    if (int rc = CheckRunnable(r, "zb_reactor_run_for")) return rc;
    Running running(r);
    const Clock::time_point deadline = Clock::now() + Micros(max_us);
    for (;;) {
      if (r->stop_requested.exchange(false, std::memory_order_acq_rel)) {
        if (stopped != nullptr) *stopped = 1;
        return ZB_OK;
      }
      const Clock::time_point now = Clock::now();
      if (now >= deadline) break;
      absl::StatusOr<int> n = r->loop->RunOnce(deadline - now);
      if (!n.ok()) return FromStatus(n.status(), "zb_reactor_run_for");
    }
    if (stopped != nullptr) *stopped = 0;
    return ZB_OK;
  });
}

extern "C" int zb_reactor_stop(zb_reactor_t* r) {
  return Guard("zb_reactor_stop", [&]() -> int {
    if (r == nullptr) return Fail(ZB_ERR_INVALID, "zb_reactor_stop: NULL");
    r->stop_requested.store(true, std::memory_order_release);
    // zb::Reactor::run() is never used here, so its own stop flag is
    // irrelevant; stop() is the cheapest way to wake a blocked poll.
    r->loop->Stop();
    return ZB_OK;
  });
}

extern "C" int zb_reactor_post(zb_reactor_t* r, zb_callback_fn fn, void* user,
                               zb_free_fn free_user) {
  return Guard("zb_reactor_post", [&]() -> int {
    if (r == nullptr || fn == nullptr) {
      return Fail(ZB_ERR_INVALID,
                  "zb_reactor_post: reactor and callback are required");
    }
    r->loop->Post(
        [fn, ref = UserRef(user, free_user)]() mutable { fn(ref.get()); });
    return ZB_OK;
  });
}

// ---- External event loops ---------------------------------------------------

namespace {

// Brings the epoll set up to date with the loop's PollFds() after its
// registrations changed.  Everything is removed and added again: a closed
// descriptor's number may have come back for another socket.
int SyncEpoll(zb_reactor_t* r, absl::string_view where) {
  if (r->epoll_generation == r->loop->poll_generation() &&
      !r->epoll_members.empty()) {
    return ZB_OK;
  }
  for (int fd : r->epoll_members) {
    ::epoll_ctl(r->epoll_fd, EPOLL_CTL_DEL, fd, nullptr);  // may be closed
  }
  r->epoll_members.clear();
  for (const pollfd& p : r->loop->PollFds()) {
    epoll_event ev{};
    ev.events = ((p.events & POLLIN) ? EPOLLIN : 0u) |
                ((p.events & POLLOUT) ? EPOLLOUT : 0u);
    ev.data.fd = p.fd;
    if (::epoll_ctl(r->epoll_fd, EPOLL_CTL_ADD, p.fd, &ev) != 0 &&
        (errno != EEXIST ||
         ::epoll_ctl(r->epoll_fd, EPOLL_CTL_MOD, p.fd, &ev) != 0)) {
      return Fail(ZB_ERR_INTERNAL, absl::StrCat(where, ": epoll_ctl(", p.fd,
                                                "): ", std::strerror(errno)));
    }
    r->epoll_members.push_back(p.fd);
  }
  r->epoll_generation = r->loop->poll_generation();
  return ZB_OK;
}

}  // namespace

extern "C" int zb_reactor_fd(zb_reactor_t* r, int* fd) {
  return Guard("zb_reactor_fd", [&]() -> int {
    if (fd == nullptr) return Fail(ZB_ERR_INVALID, "zb_reactor_fd: fd is NULL");
    if (int rc = CheckRunnable(r, "zb_reactor_fd")) return rc;
    if (r->epoll_fd < 0) {
      r->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
      if (r->epoll_fd < 0) {
        return Fail(ZB_ERR_INTERNAL, absl::StrCat("zb_reactor_fd: epoll: ",
                                                  std::strerror(errno)));
      }
      if (int rc = SyncEpoll(r, "zb_reactor_fd")) {
        ::close(r->epoll_fd);
        r->epoll_fd = -1;
        r->epoll_members.clear();
        return rc;
      }
    }
    *fd = r->epoll_fd;
    return ZB_OK;
  });
}

extern "C" int zb_reactor_next_timeout_us(zb_reactor_t* r,
                                          int64_t* timeout_us) {
  return Guard("zb_reactor_next_timeout_us", [&]() -> int {
    if (timeout_us == nullptr) {
      return Fail(ZB_ERR_INVALID,
                  "zb_reactor_next_timeout_us: timeout_us is NULL");
    }
    if (int rc = CheckRunnable(r, "zb_reactor_next_timeout_us")) return rc;
    if (r->epoll_fd >= 0) {
      if (int rc = SyncEpoll(r, "zb_reactor_next_timeout_us")) return rc;
    }
    const Clock::duration wait = r->loop->NextWait();
    if (wait == Clock::duration::max()) {
      *timeout_us = -1;
    } else {
      *timeout_us = std::chrono::ceil<std::chrono::microseconds>(wait).count();
    }
    return ZB_OK;
  });
}

// ---- Timers -----------------------------------------------------------------

extern "C" int64_t zb_now_us(void) {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             Clock::now().time_since_epoch())
      .count();
}

extern "C" int zb_reactor_after(zb_reactor_t* r, int64_t delay_us,
                                zb_callback_fn fn, void* user,
                                zb_free_fn free_user, zb_timer_id* id) {
  return AddTimer(r, "zb_reactor_after",
                  delay_us < 0 ? "negative delay" : nullptr, fn, user,
                  free_user, id, [delay_us](zb::Reactor& loop, auto cb) {
                    return loop.After(Micros(delay_us), std::move(cb));
                  });
}

extern "C" int zb_reactor_every(zb_reactor_t* r, int64_t period_us,
                                zb_callback_fn fn, void* user,
                                zb_free_fn free_user, zb_timer_id* id) {
  return AddTimer(r, "zb_reactor_every",
                  period_us <= 0 ? "period must be > 0" : nullptr, fn, user,
                  free_user, id, [period_us](zb::Reactor& loop, auto cb) {
                    return loop.Every(Micros(period_us), std::move(cb));
                  });
}

extern "C" int zb_reactor_at(zb_reactor_t* r, int64_t deadline_us,
                             zb_callback_fn fn, void* user,
                             zb_free_fn free_user, zb_timer_id* id) {
  return AddTimer(r, "zb_reactor_at", nullptr, fn, user, free_user, id,
                  [deadline_us](zb::Reactor& loop, auto cb) {
                    return loop.At(Clock::time_point(Micros(deadline_us)),
                                   std::move(cb));
                  });
}

extern "C" int zb_reactor_cancel(zb_reactor_t* r, zb_timer_id id) {
  return Guard("zb_reactor_cancel", [&]() -> int {
    if (r == nullptr) return Fail(ZB_ERR_INVALID, "zb_reactor_cancel: NULL");
    if (int rc = CheckOwner(r, "zb_reactor_cancel")) return rc;
    if (!r->loop->Cancel(id)) {
      return Fail(ZB_ERR_NOT_FOUND,
                  absl::StrFormat("zb_reactor_cancel: no live timer %d", id));
    }
    return ZB_OK;
  });
}

}  // namespace zb::capi
