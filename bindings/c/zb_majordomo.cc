// Copyright 2026 The zbrokers Authors.
//
// The Majordomo protocol (zb.h): zb_mdp_client_*, zb_mdp_worker_* with
// zb_mdp_reply and zb_mdp_replier_discard, and zb_mdp_broker_*.

#include <cstring>
#include <string>

#include "absl/strings/str_format.h"
#include "bindings/c/zb.h"
#include "bindings/c/zb_internal.h"
#include "zbrokers/majordomo/broker.h"
#include "zbrokers/majordomo/client.h"
#include "zbrokers/majordomo/worker.h"

struct zb_mdp_client_t : zb::capi::ClientHandle<zb::MdpAsyncClient> {
  using ClientHandle::ClientHandle;
};

struct zb_mdp_worker_t
    : zb::capi::WorkerHandle<zb::MdpWorker, zb_mdp_handler_fn> {
  using WorkerHandle::WorkerHandle;
};

// A Replier is safe on any thread, also after its worker and reactor are
// gone (zb::ReplyChannel), so the token needs nothing else.
struct zb_mdp_replier_t {
  zb::MdpWorker::Replier replier;
};

struct zb_mdp_broker_t : zb::capi::BrokerHandle<zb::MajordomoBroker> {
  explicit zb_mdp_broker_t(zb_reactor_t* r) : BrokerHandle(r, "majordomo") {}
};

namespace zb::capi {
namespace {

// Destroys a reply token without a reply.  The worker then gives the
// request back (DISCONNECT and reconnect, so the broker redispatches it);
// from another thread that is posted to the worker's loop, and dropped once
// the worker is gone.
void DiscardMdpReplier(zb_mdp_replier_t* replier) { delete replier; }

int CheckMdpClient(const zb_mdp_client_t* c, absl::string_view where) {
  return Handle::Check(c, "client", where);
}

int CheckMdpBroker(const zb_mdp_broker_t* b, absl::string_view where) {
  return Handle::Check(b, "broker", where);
}

}  // namespace

extern "C" int zb_mdp_client_new(zb_reactor_t* r, const char* endpoint,
                                 int64_t timeout_us, int retries,
                                 zb_mdp_client_t** out) {
  return zb_mdp_client_new_curve(r, endpoint, timeout_us, retries, nullptr,
                                 out);
}

extern "C" int zb_mdp_client_new_curve(zb_reactor_t* r, const char* endpoint,
                                       int64_t timeout_us, int retries,
                                       const zb_curve_keys_t* curve,
                                       zb_mdp_client_t** out) {
  zb_client_options_t options;
  zb_client_options_init(&options);
  options.curve = curve;
  return zb_mdp_client_new_ex(r, endpoint, timeout_us, retries, &options, out);
}

extern "C" int zb_mdp_client_new_ex(zb_reactor_t* r, const char* endpoint,
                                    int64_t timeout_us, int retries,
                                    const zb_client_options_t* c_options,
                                    zb_mdp_client_t** out) {
  constexpr absl::string_view kWhere = "zb_mdp_client_new";
  return Guard(kWhere, [&]() -> int {
    if (r == nullptr || endpoint == nullptr || out == nullptr) {
      return Fail(
          ZB_ERR_INVALID,
          absl::StrCat(kWhere, ": reactor, endpoint and out are required"));
    }
    if (int rc = CheckOwner(r, kWhere)) return rc;
    zb::MdpAsyncClient::Options options;
    if (timeout_us > 0) options.timeout = MillisUp(timeout_us);
    if (retries > 0) options.retries = retries;
    if (int rc = ClientOptionsFromC(kWhere, c_options, options.endpoint_policy,
                                    options.curve)) {
      return rc;
    }
    absl::StatusOr<std::unique_ptr<zb::MdpAsyncClient>> client =
        zb::MdpAsyncClient::Create(*r->loop, *r->context, endpoint, options);
    if (!client.ok()) {
      return Fail(ZB_ERR_ZMQ, absl::StrCat(kWhere, "(\"", endpoint,
                                           "\"): ", client.status().message()));
    }
    auto c = std::make_unique<zb_mdp_client_t>(r);
    c->client = *std::move(client);
    *out = Handle::Adopt(std::move(c));
    return ZB_OK;
  });
}

extern "C" int zb_mdp_client_destroy(zb_mdp_client_t* c) {
  return DestroyCall(c, "client", "zb_mdp_client_destroy");
}

extern "C" int zb_mdp_client_request(zb_mdp_client_t* c, const void* service,
                                     size_t service_size, size_t count,
                                     const void* const* data,
                                     const size_t* sizes, int64_t timeout_us,
                                     zb_mdp_reply_fn fn, void* user,
                                     zb_free_fn free_user) {
  constexpr absl::string_view kWhere = "zb_mdp_client_request";
  return Guard(kWhere, [&]() -> int {
    if (int rc = CheckMdpClient(c, kWhere)) return rc;
    if (fn == nullptr || (service == nullptr && service_size > 0)) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere, ": callback and service are required"));
    }
    zb::Frames body;
    if (!CopyFrames(kWhere, count, data, sizes, body)) return ZB_ERR_INVALID;
    std::optional<std::chrono::milliseconds> timeout;
    if (timeout_us > 0) timeout = MillisUp(timeout_us);
    // Request() either calls `done` exactly once (later) or refuses and
    // drops it uncalled.  The user is released after the call, so a refusal
    // leaves it with the C caller, as zb.h promises.
    const absl::Status sent = c->client->Request(
        ServiceView(service, service_size), std::move(body),
        [c, fn, user, free_user](absl::StatusOr<zb::Frames> reply) {
          const int code = CodeForStatus(reply.status());
          const std::string message(reply.status().message());
          static const zb::Frames kNone;
          const zb::Frames& frames = reply.ok() ? *reply : kNone;
          const FrameArrays arrays(frames);
          c->RunCallback([&] {
            fn(user, code, message.c_str(), frames.size(), arrays.data.data(),
               arrays.sizes.data());
          });
          if (free_user != nullptr) free_user(user);
        },
        timeout);
    if (!sent.ok()) {
      return Fail(
          CodeForStatus(sent) == ZB_ERR_INVALID ? ZB_ERR_INVALID : ZB_ERR_STATE,
          absl::StrCat(kWhere, ": ", sent.message()));
    }
    return ZB_OK;
  });
}

extern "C" int zb_mdp_client_outstanding(zb_mdp_client_t* c, size_t* count) {
  return Guard("zb_mdp_client_outstanding", [&]() -> int {
    if (int rc = CheckMdpClient(c, "zb_mdp_client_outstanding")) return rc;
    if (count == nullptr) {
      return Fail(ZB_ERR_INVALID, "zb_mdp_client_outstanding: count is NULL");
    }
    *count = c->client->outstanding();
    return ZB_OK;
  });
}

extern "C" int zb_mdp_client_failovers(zb_mdp_client_t* c, uint64_t* count) {
  return Guard("zb_mdp_client_failovers", [&]() -> int {
    if (int rc = CheckMdpClient(c, "zb_mdp_client_failovers")) return rc;
    if (count == nullptr) {
      return Fail(ZB_ERR_INVALID, "zb_mdp_client_failovers: count is NULL");
    }
    *count = c->client->failovers();
    return ZB_OK;
  });
}

extern "C" int zb_mdp_worker_new(zb_reactor_t* r, const char* endpoint,
                                 const void* service, size_t service_size,
                                 int64_t heartbeat_interval_us,
                                 int heartbeat_liveness,
                                 int64_t reconnect_delay_us,
                                 zb_mdp_handler_fn handler, void* user,
                                 zb_free_fn free_user, zb_mdp_worker_t** out) {
  return zb_mdp_worker_new_curve(r, endpoint, service, service_size,
                                 heartbeat_interval_us, heartbeat_liveness,
                                 reconnect_delay_us, nullptr, handler, user,
                                 free_user, out);
}

extern "C" int zb_mdp_worker_new_curve(
    zb_reactor_t* r, const char* endpoint, const void* service,
    size_t service_size, int64_t heartbeat_interval_us, int heartbeat_liveness,
    int64_t reconnect_delay_us, const zb_curve_keys_t* curve,
    zb_mdp_handler_fn handler, void* user, zb_free_fn free_user,
    zb_mdp_worker_t** out) {
  constexpr absl::string_view kWhere = "zb_mdp_worker_new";
  return Guard(kWhere, [&]() -> int {
    if (int rc = CheckWorkerArgs(r, endpoint, service, service_size,
                                 handler != nullptr, out != nullptr, kWhere)) {
      return rc;
    }
    if (int rc = CheckOwner(r, kWhere)) return rc;
    zb::MdpWorker::Options options;
    if (heartbeat_interval_us > 0) {
      options.heartbeat_interval = MillisUp(heartbeat_interval_us);
    }
    if (heartbeat_liveness > 0) options.heartbeat_liveness = heartbeat_liveness;
    if (reconnect_delay_us >= 0) {
      options.reconnect_delay = MillisUp(reconnect_delay_us);
    }
    if (int rc = CurveFromC(kWhere, curve, options.curve)) return rc;
    auto w = std::make_unique<zb_mdp_worker_t>(r);
    w->handler = handler;
    zb_mdp_worker_t* wp = w.get();
    absl::StatusOr<std::unique_ptr<zb::MdpWorker>> worker =
        zb::MdpWorker::Create(
            *r->loop, *r->context, endpoint,
            std::string(ServiceView(service, service_size)),
            [wp](zb::Frames body, zb::MdpWorker::Replier replier) {
              auto token = std::make_unique<zb_mdp_replier_t>();
              token->replier = std::move(replier);
              wp->Deliver(body, std::move(token));
            },
            options);
    return AdoptWorker(std::move(w), std::move(worker), endpoint, user,
                       free_user, kWhere, out);
  });
}

extern "C" int zb_mdp_worker_destroy(zb_mdp_worker_t* w) {
  return DestroyCall(w, "worker", "zb_mdp_worker_destroy");
}

extern "C" int zb_mdp_reply(zb_mdp_replier_t* replier, size_t count,
                            const void* const* data, const size_t* sizes) {
  constexpr absl::string_view kWhere = "zb_mdp_reply";
  return Guard(kWhere, [&]() -> int {
    if (replier == nullptr) {
      return Fail(ZB_ERR_INVALID, absl::StrCat(kWhere, ": replier is NULL"));
    }
    std::unique_ptr<zb_mdp_replier_t> owned(replier);
    zb::Frames body;
    if (!CopyFrames(kWhere, count, data, sizes, body)) {
      DiscardMdpReplier(owned.release());  // the request is given back
      return ZB_ERR_INVALID;
    }
    owned->replier.Reply(std::move(body));
    return ZB_OK;
  });
}

extern "C" int zb_mdp_replier_discard(zb_mdp_replier_t* replier) {
  return Guard("zb_mdp_replier_discard", [&]() -> int {
    DiscardMdpReplier(replier);
    return ZB_OK;
  });
}

extern "C" int zb_mdp_broker_new(zb_reactor_t* r, int64_t heartbeat_interval_us,
                                 int heartbeat_liveness,
                                 zb_mdp_broker_t** out) {
  constexpr absl::string_view kWhere = "zb_mdp_broker_new";
  return Guard(kWhere, [&]() -> int {
    if (r == nullptr || out == nullptr) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere, ": reactor and out are required"));
    }
    if (int rc = CheckOwner(r, kWhere)) return rc;
    zb::MajordomoBroker::Options options;
    if (heartbeat_interval_us > 0) {
      options.heartbeat_interval = MillisUp(heartbeat_interval_us);
    }
    if (heartbeat_liveness > 0) options.heartbeat_liveness = heartbeat_liveness;
    absl::StatusOr<std::unique_ptr<zb::MajordomoBroker>> broker =
        zb::MajordomoBroker::Create(*r->loop, *r->context, options);
    if (!broker.ok()) {
      return Fail(CodeForStatus(broker.status()),
                  absl::StrCat(kWhere, ": ", broker.status().message()));
    }
    auto b = std::make_unique<zb_mdp_broker_t>(r);
    b->broker = *std::move(broker);
    zb_mdp_broker_t* bp = b.get();
    b->broker->set_log_hook([bp](zb::LogLevel level, std::string_view line) {
      bp->Log(level, line);
    });
    // Worker joins and leaves arrive as INFO lines of the log hook,
    // rate-limited by the broker.
    *out = Handle::Adopt(std::move(b));
    return ZB_OK;
  });
}

extern "C" int zb_mdp_broker_destroy(zb_mdp_broker_t* b) {
  return DestroyCall(b, "broker", "zb_mdp_broker_destroy");
}

extern "C" int zb_mdp_broker_bind(zb_mdp_broker_t* b, const char* endpoint,
                                  char* resolved, size_t capacity) {
  return BrokerBind(b, endpoint, resolved, capacity, "zb_mdp_broker_bind");
}

extern "C" int zb_mdp_broker_set_log(zb_mdp_broker_t* b, zb_log_fn fn,
                                     void* user, zb_free_fn free_user) {
  return BrokerSetLog(b, fn, user, free_user, "zb_mdp_broker_set_log");
}

extern "C" int zb_mdp_broker_worker_count(zb_mdp_broker_t* b,
                                          const void* service,
                                          size_t service_size, size_t* count) {
  constexpr absl::string_view kWhere = "zb_mdp_broker_worker_count";
  return Guard(kWhere, [&]() -> int {
    if (int rc = CheckMdpBroker(b, kWhere)) return rc;
    if (count == nullptr || (service == nullptr && service_size > 0)) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere, ": service and count are required"));
    }
    const zb::MajordomoBroker::Stats stats = b->broker->stats();
    const auto it =
        stats.services.find(std::string(ServiceView(service, service_size)));
    *count = it == stats.services.end() ? 0 : it->second.workers;
    return ZB_OK;
  });
}

}  // namespace zb::capi
