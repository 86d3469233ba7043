// Copyright 2026 The zbrokers Authors.
//
// The definitions behind zb_internal.h (the errors are in zb_errors.cc):
// conversions, the shared context, the handle lifetimes, the owner-thread
// checks and the broker logs.

#include "bindings/c/zb_internal.h"

#include <cstdio>
#include <cstring>

#include "absl/strings/str_format.h"

namespace zb::capi {

int CopyOut(const std::string& text, char* buf, size_t capacity,
            absl::string_view where, absl::string_view what) {
  if (text.size() + 1 > capacity) {
    return Fail(ZB_ERR_RANGE,
                absl::StrFormat("%s: %s%sneeds %d bytes", where, what,
                                what.empty() ? "" : " ", text.size() + 1));
  }
  std::memcpy(buf, text.c_str(), text.size() + 1);
  return ZB_OK;
}

// ---- Time and frames --------------------------------------------------------

Clock::duration Micros(std::int64_t us) {
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::microseconds(std::clamp<std::int64_t>(us, 0, kMaxMicros)));
}

std::chrono::milliseconds MillisUp(std::int64_t us) {
  const std::int64_t clamped = std::clamp<std::int64_t>(us, 0, kMaxMicros);
  return std::chrono::milliseconds((clamped + 999) / 1000);
}

bool CopyFrames(absl::string_view where, size_t count, const void* const* data,
                const size_t* sizes, zb::Frames& out) {
  if (count > 0 && (data == nullptr || sizes == nullptr)) {
    Fail(ZB_ERR_INVALID, absl::StrCat(where, ": data or sizes is NULL"));
    return false;
  }
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    if (data[i] == nullptr && sizes[i] > 0) {
      Fail(ZB_ERR_INVALID, absl::StrFormat("%s: frame %d is NULL", where, i));
      return false;
    }
    out.emplace_back(data[i], sizes[i]);
  }
  return true;
}

FrameArrays::FrameArrays(std::span<const zmq::message_t> frames) {
  data.reserve(frames.size());
  sizes.reserve(frames.size());
  for (const zmq::message_t& f : frames) {
    data.push_back(f.data());
    sizes.push_back(f.size());
  }
}

// ---- The shared ZeroMQ context ----------------------------------------------

std::shared_ptr<zmq::context_t> SharedContext() {
  static std::mutex mu;
  static std::weak_ptr<zmq::context_t> shared;
  std::lock_guard<std::mutex> lock(mu);
  std::shared_ptr<zmq::context_t> ctx = shared.lock();
  if (!ctx) {
    ctx = std::make_shared<zmq::context_t>(1);
    shared = ctx;
  }
  return ctx;
}

// ---- Owner-thread checks ----------------------------------------------------

int CheckThread(const zb_reactor_t* r, absl::string_view where) {
  if (r->destroying) {
    return Fail(ZB_ERR_STATE,
                absl::StrCat(where, ": the reactor is being destroyed"));
  }
  if (!r->loop->on_owner_thread()) {
    return Fail(ZB_ERR_WRONG_THREAD,
                absl::StrCat(where,
                             ": called from a thread that does not own the "
                             "reactor; only zb_reactor_post and "
                             "zb_reactor_stop may be called from other "
                             "threads"));
  }
  return ZB_OK;
}

void Kick(zb_reactor_t* r) {
  if (r->epoll_fd < 0 || r->depth > 0 || r->kicked) return;
  r->kicked = true;
  r->loop->Post([] {});
}

int CheckOwner(zb_reactor_t* r, absl::string_view where) {
  if (int rc = CheckThread(r, where)) return rc;
  Kick(r);
  return ZB_OK;
}

// ---- Handles ----------------------------------------------------------------

int Handle::Check(const Handle* h, absl::string_view noun,
                  absl::string_view where) {
  if (h == nullptr) {
    return Fail(ZB_ERR_INVALID, absl::StrCat(where, ": ", noun, " is NULL"));
  }
  if (h->closing_) {
    return Fail(ZB_ERR_STATE, absl::StrCat(where, ": ", noun, " is closed"));
  }
  return CheckOwner(h->reactor_, where);
}

void Handle::Free(Handle* h) {
  h->closing_ = true;
  h->Shutdown();
  delete h;
}

void Handle::Destroy(Handle* h) {
  zb_reactor_t* r = h->reactor_;
  const std::size_t kind = static_cast<std::size_t>(h->kind_);
  if (h->in_callback_ == 0) {
    r->owned[kind].erase(h);
    Free(h);
    return;
  }
  h->closing_ = true;
  switch (h->deferral_) {
    case Deferral::kNextIteration:
      // Still owned: if the reactor goes first, DestroyAll frees it and the
      // loop drops this task.
      r->loop->Post([r, h, kind] {
        if (r->owned[kind].erase(h) > 0) Free(h);
      });
      break;
    case Deferral::kCallbackReturn:
      r->owned[kind].erase(h);
      h->Shutdown();  // RunCallback deletes it when the callback returns
      break;
  }
}

int DestroyCall(Handle* h, absl::string_view noun, absl::string_view where) {
  return Guard(where, [&]() -> int {
    if (h == nullptr) return ZB_OK;
    if (int rc = Handle::Check(h, noun, where)) return rc;
    Handle::Destroy(h);
    return ZB_OK;
  });
}

void Handle::DestroyAll(zb_reactor_t* r) {
  for (absl::flat_hash_set<Handle*>& handles : r->owned) {
    for (Handle* h : std::exchange(handles, {})) Free(h);
  }
}

// ---- Clients, workers and brokers -------------------------------------------

int CheckWorkerArgs(const zb_reactor_t* r, const char* endpoint,
                    const void* service, size_t service_size, bool has_handler,
                    bool has_out, absl::string_view where) {
  if (r == nullptr || endpoint == nullptr || !has_handler || !has_out ||
      (service == nullptr && service_size > 0)) {
    return Fail(ZB_ERR_INVALID,
                absl::StrCat(where,
                             ": reactor, endpoint, service, handler and "
                             "out are required"));
  }
  return ZB_OK;
}

// ---- Broker logs ------------------------------------------------------------

void BrokerLog::Set(zb_log_fn fn, void* user, zb_free_fn free_user) {
  fn_ = fn;
  user_ = fn != nullptr ? UserRef(user, free_user) : UserRef();
}

void BrokerLog::Write(int level, std::string_view line) const {
  if (fn_ != nullptr) {
    const std::string text(line);
    fn_(user_.get(), level, text.c_str());
  } else if (level >= ZB_LOG_WARNING) {
    std::fprintf(stderr, "zbrokers %s broker: %.*s\n", name_.c_str(),
                 static_cast<int>(line.size()), line.data());
  }
}

}  // namespace zb::capi
