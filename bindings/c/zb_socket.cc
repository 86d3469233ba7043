// Copyright 2026 The zbrokers Authors.
//
// zb_socket_* (zb.h): ZeroMQ sockets watched by a reactor.

#include <cerrno>
#include <climits>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "bindings/c/zb.h"
#include "bindings/c/zb_internal.h"

// A socket runs its readable callback with only the reactor below it, so a
// close from inside the callback closes the ZeroMQ socket at once and frees
// the handle when the callback returns (Deferral::kCallbackReturn).
struct zb_socket_t : zb::capi::Handle {
  explicit zb_socket_t(zb_reactor_t* r)
      : Handle(r, Kind::kSocket, Deferral::kCallbackReturn) {}

  void Shutdown() override {
    // The reactor must stop watching before the socket closes.
    watch.Reset();
    socket.close();
  }

  zmq::socket_t socket;
  // Set while a readable callback is installed; declared after the socket
  // so that it goes first.
  zb::Reactor::SocketWatch watch;
  zb_frames_fn fn = nullptr;
  zb::capi::UserRef user;
  // Callbacks replaced while the callback runs: the running one may still
  // use its user, so they are released after it returns.
  std::vector<zb::capi::UserRef> retired;
  // Reused for every message handed to the callback.
  std::vector<const void*> data;
  std::vector<size_t> sizes;
};

namespace zb::capi {
namespace {

int CheckSocket(const zb_socket_t* s, absl::string_view where) {
  return Handle::Check(s, "socket", where);
}

void Dispatch(zb_socket_t* s, std::span<zmq::message_t> frames) {
  s->data.resize(frames.size());
  s->sizes.resize(frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i) {
    s->data[i] = frames[i].data();
    s->sizes[i] = frames[i].size();
  }
  if (!s->RunCallback([s, n = frames.size()] {
        s->fn(s->user.get(), n, s->data.data(), s->sizes.data());
      })) {
    return;  // closed by its callback, and freed
  }
  s->retired.clear();
}

// ZeroMQ options whose value is 64 bits wide.
bool IsInt64Option(int option) {
  switch (option) {
    case ZMQ_AFFINITY:
    case ZMQ_MAXMSGSIZE:
    case ZMQ_VMCI_BUFFER_SIZE:
    case ZMQ_VMCI_BUFFER_MIN_SIZE:
    case ZMQ_VMCI_BUFFER_MAX_SIZE:
      return true;
    default:
      return false;
  }
}

int SocketTypeFromName(const char* name) {
  static constexpr struct {
    const char* name;
    int type;
  } kTypes[] = {
      {"pair", ZB_PAIR},     {"pub", ZB_PUB},   {"sub", ZB_SUB},
      {"req", ZB_REQ},       {"rep", ZB_REP},   {"dealer", ZB_DEALER},
      {"router", ZB_ROUTER}, {"pull", ZB_PULL}, {"push", ZB_PUSH},
      {"xpub", ZB_XPUB},     {"xsub", ZB_XSUB}, {"stream", ZB_STREAM},
  };
  const std::string lower = absl::AsciiStrToLower(name);
  for (const auto& t : kTypes) {
    if (lower == t.name) return t.type;
  }
  return -1;
}

template <typename Op>
int EndpointCall(zb_socket_t* s, const char* endpoint, const char* where,
                 Op op) {
  return Guard(where, [&]() -> int {
    if (int rc = CheckSocket(s, where)) return rc;
    if (endpoint == nullptr) {
      return Fail(ZB_ERR_INVALID, absl::StrCat(where, ": endpoint is NULL"));
    }
    if (op(s->socket.handle(), endpoint) != 0) {
      const int err = errno;
      return Fail(ZB_ERR_ZMQ, absl::StrCat(where, "(\"", endpoint,
                                           "\"): ", zmq_strerror(err)));
    }
    return ZB_OK;
  });
}

}  // namespace

extern "C" int zb_socket_new(zb_reactor_t* r, int type, zb_socket_t** out) {
  return Guard("zb_socket_new", [&]() -> int {
    if (r == nullptr || out == nullptr) {
      return Fail(ZB_ERR_INVALID,
                  "zb_socket_new: reactor and out are required");
    }
    if (int rc = CheckOwner(r, "zb_socket_new")) return rc;
    if (type < ZB_PAIR || type > ZB_STREAM) {
      return Fail(
          ZB_ERR_INVALID,
          absl::StrFormat("zb_socket_new: unknown socket type %d", type));
    }
    auto s = std::make_unique<zb_socket_t>(r);
    s->socket = zmq::socket_t(*r->context, type);
    s->socket.set(zmq::sockopt::linger, 0);
    *out = Handle::Adopt(std::move(s));
    return ZB_OK;
  });
}

extern "C" int zb_socket_new_named(zb_reactor_t* r, const char* type_name,
                                   zb_socket_t** out) {
  return Guard("zb_socket_new_named", [&]() -> int {
    if (type_name == nullptr) {
      return Fail(ZB_ERR_INVALID, "zb_socket_new_named: type name is NULL");
    }
    const int type = SocketTypeFromName(type_name);
    if (type < 0) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat("zb_socket_new_named: unknown socket type \"",
                               type_name, "\""));
    }
    return zb_socket_new(r, type, out);
  });
}

extern "C" int zb_socket_close(zb_socket_t* s) {
  return Guard("zb_socket_close", [&]() -> int {
    if (s == nullptr) return ZB_OK;
    if (int rc = CheckSocket(s, "zb_socket_close")) return rc;
    Handle::Destroy(s);
    return ZB_OK;
  });
}

extern "C" int zb_socket_set_int(zb_socket_t* s, int option, int64_t value) {
  return Guard("zb_socket_set_int", [&]() -> int {
    if (int rc = CheckSocket(s, "zb_socket_set_int")) return rc;
    int zrc;
    if (IsInt64Option(option)) {
      zrc = zmq_setsockopt(s->socket.handle(), option, &value, sizeof value);
    } else {
      if (value < INT_MIN || value > INT_MAX) {
        return Fail(ZB_ERR_INVALID,
                    absl::StrFormat("zb_socket_set_int: option %d: value %d "
                                    "does not fit an int",
                                    option, value));
      }
      const int v = static_cast<int>(value);
      zrc = zmq_setsockopt(s->socket.handle(), option, &v, sizeof v);
    }
    if (zrc != 0) {
      return ZmqFail(absl::StrFormat("zb_socket_set_int(option %d)", option),
                     errno);
    }
    return ZB_OK;
  });
}

extern "C" int zb_socket_set_bytes(zb_socket_t* s, int option,
                                   const void* value, size_t size) {
  return Guard("zb_socket_set_bytes", [&]() -> int {
    if (int rc = CheckSocket(s, "zb_socket_set_bytes")) return rc;
    if (value == nullptr && size > 0) {
      return Fail(ZB_ERR_INVALID, "zb_socket_set_bytes: value is NULL");
    }
    if (zmq_setsockopt(s->socket.handle(), option, value, size) != 0) {
      return ZmqFail(absl::StrFormat("zb_socket_set_bytes(option %d)", option),
                     errno);
    }
    return ZB_OK;
  });
}

extern "C" int zb_socket_get_int(zb_socket_t* s, int option, int64_t* value) {
  return Guard("zb_socket_get_int", [&]() -> int {
    if (int rc = CheckSocket(s, "zb_socket_get_int")) return rc;
    if (value == nullptr) {
      return Fail(ZB_ERR_INVALID, "zb_socket_get_int: value is NULL");
    }
    if (IsInt64Option(option)) {
      std::int64_t v = 0;
      size_t size = sizeof v;
      if (zmq_getsockopt(s->socket.handle(), option, &v, &size) != 0) {
        return ZmqFail(absl::StrFormat("zb_socket_get_int(option %d)", option),
                       errno);
      }
      *value = v;
    } else {
      int v = 0;
      size_t size = sizeof v;
      if (zmq_getsockopt(s->socket.handle(), option, &v, &size) != 0) {
        return ZmqFail(absl::StrFormat("zb_socket_get_int(option %d)", option),
                       errno);
      }
      *value = v;
    }
    return ZB_OK;
  });
}

extern "C" int zb_socket_get_bytes(zb_socket_t* s, int option, void* buf,
                                   size_t capacity, size_t* size) {
  return Guard("zb_socket_get_bytes", [&]() -> int {
    if (int rc = CheckSocket(s, "zb_socket_get_bytes")) return rc;
    if (size == nullptr || (buf == nullptr && capacity > 0)) {
      return Fail(ZB_ERR_INVALID, "zb_socket_get_bytes: NULL buffer or size");
    }
    // Every byte-string option of ZeroMQ 4.3 fits in 1 KiB; reading into a
    // local buffer first lets us report the needed size.
    char local[1024];
    size_t n = sizeof local;
    if (zmq_getsockopt(s->socket.handle(), option, local, &n) != 0) {
      return ZmqFail(absl::StrFormat("zb_socket_get_bytes(option %d)", option),
                     errno);
    }
    *size = n;
    if (n > capacity) {
      return Fail(ZB_ERR_RANGE,
                  absl::StrFormat("zb_socket_get_bytes: needs %d bytes, "
                                  "buffer has %d",
                                  n, capacity));
    }
    if (n > 0) std::memcpy(buf, local, n);
    return ZB_OK;
  });
}

extern "C" int zb_socket_bind(zb_socket_t* s, const char* endpoint) {
  return EndpointCall(s, endpoint, "zb_socket_bind", zmq_bind);
}

extern "C" int zb_socket_connect(zb_socket_t* s, const char* endpoint) {
  return EndpointCall(s, endpoint, "zb_socket_connect", zmq_connect);
}

extern "C" int zb_socket_unbind(zb_socket_t* s, const char* endpoint) {
  return EndpointCall(s, endpoint, "zb_socket_unbind", zmq_unbind);
}

extern "C" int zb_socket_disconnect(zb_socket_t* s, const char* endpoint) {
  return EndpointCall(s, endpoint, "zb_socket_disconnect", zmq_disconnect);
}

extern "C" int zb_socket_last_endpoint(zb_socket_t* s, char* buf,
                                       size_t capacity) {
  return Guard("zb_socket_last_endpoint", [&]() -> int {
    if (int rc = CheckSocket(s, "zb_socket_last_endpoint")) return rc;
    if (buf == nullptr) {
      return Fail(ZB_ERR_INVALID, "zb_socket_last_endpoint: buf is NULL");
    }
    return CopyOut(s->socket.get(zmq::sockopt::last_endpoint), buf, capacity,
                   "zb_socket_last_endpoint", "");
  });
}

extern "C" int zb_socket_send(zb_socket_t* s, size_t count,
                              const void* const* data, const size_t* sizes) {
  return Guard("zb_socket_send", [&]() -> int {
    if (int rc = CheckSocket(s, "zb_socket_send")) return rc;
    if (count == 0 || data == nullptr || sizes == nullptr) {
      return Fail(ZB_ERR_INVALID,
                  "zb_socket_send: needs at least one frame (data and sizes)");
    }
    absl::InlinedVector<zmq::message_t, 8> frames;
    frames.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      if (data[i] == nullptr && sizes[i] > 0) {
        return Fail(ZB_ERR_INVALID,
                    absl::StrFormat("zb_socket_send: frame %d is NULL", i));
      }
      frames.emplace_back(data[i], sizes[i]);
    }
    return FromStatus(
        zb::SendFrames(s->socket,
                       std::span<zmq::message_t>(frames.data(), frames.size())),
        "zb_socket_send");
  });
}

extern "C" int zb_socket_on_readable(zb_socket_t* s, zb_frames_fn fn,
                                     void* user, zb_free_fn free_user) {
  return Guard("zb_socket_on_readable", [&]() -> int {
    if (int rc = CheckSocket(s, "zb_socket_on_readable")) return rc;
    UserRef old = std::move(s->user);
    if (fn == nullptr) {
      s->watch.Reset();
      s->fn = nullptr;
    } else {
      if (!s->watch) {
        absl::StatusOr<zb::Reactor::SocketWatch> watch =
            s->reactor()->loop->Add(
                s->socket,
                [s](std::span<zmq::message_t> frames) { Dispatch(s, frames); });
        if (!watch.ok()) {
          return FromStatus(watch.status(), "zb_socket_on_readable");
        }
        s->watch = *std::move(watch);
      }
      s->fn = fn;
      s->user = UserRef(user, free_user);
    }
    // The old callback may be the one running right now: release it after.
    if (s->in_callback()) s->retired.push_back(std::move(old));
    return ZB_OK;
  });
}

}  // namespace zb::capi
