// Copyright 2026 The zbrokers Authors.
//
// The consensus protocol (zb.h): zb_consensus_client_*, zb_consensus_worker_*
// with its zb_responder_*, and zb_consensus_broker_*.

#include <cstring>
#include <string>

#include "absl/strings/str_format.h"
#include "bindings/c/zb.h"
#include "bindings/c/zb_internal.h"
#include "zbrokers/consensus/broker.h"
#include "zbrokers/consensus/client.h"
#include "zbrokers/consensus/codec.h"
#include "zbrokers/consensus/worker.h"

struct zb_consensus_client_t : zb::capi::ClientHandle<zb::ConsensusClient> {
  using ClientHandle::ClientHandle;
};

struct zb_consensus_worker_t
    : zb::capi::WorkerHandle<zb::ConsensusWorker, zb_consensus_handler_fn> {
  using WorkerHandle::WorkerHandle;
};

struct zb_responder_t {
  zb::ConsensusWorker::Responder responder;
};

struct zb_consensus_broker_t : zb::capi::BrokerHandle<zb::ConsensusBroker> {
  explicit zb_consensus_broker_t(zb_reactor_t* r)
      : BrokerHandle(r, "consensus") {}
};

namespace zb::capi {
namespace {

void DeliverResult(zb_consensus_client_t* c, zb_consensus_reply_fn fn,
                   void* user, zb::ConsensusClient::Result& r) {
  using Outcome = zb::ConsensusClient::Outcome;
  using FailedBy = zb::ConsensusClient::FailedBy;
  int result = ZB_RESULT_FAILURE;
  if (r.outcome == Outcome::kSuccess) result = ZB_RESULT_SUCCESS;
  if (r.outcome == Outcome::kTimeout) result = ZB_RESULT_TIMEOUT;
  int failed_by = ZB_FAILED_BY_NONE;
  switch (r.failed_by) {
    case FailedBy::kWorker:
      failed_by = ZB_FAILED_BY_WORKER;
      break;
    case FailedBy::kBroker:
      failed_by = ZB_FAILED_BY_BROKER;
      break;
    case FailedBy::kClient:
      failed_by = ZB_FAILED_BY_CLIENT;
      break;
    case FailedBy::kNone:
      break;
  }
  if (result != ZB_RESULT_FAILURE) failed_by = ZB_FAILED_BY_NONE;
  // Every failure gets a reason string, so that a binding can show one
  // without knowing the protocol.
  std::string reason = r.reason;
  if (reason.empty() && result == ZB_RESULT_TIMEOUT) reason = "timeout";
  if (reason.empty() && failed_by == ZB_FAILED_BY_WORKER &&
      !r.payload.empty()) {
    reason = std::string(zb::View(r.payload[0]));
    reason.resize(std::strlen(reason.c_str()));  // up to the first NUL
  }
  const FrameArrays arrays(r.payload);
  c->RunCallback([&] {
    fn(user, result, failed_by, reason.c_str(), r.attempts, r.payload.size(),
       arrays.data.data(), arrays.sizes.data());
  });
}

int CheckClient(const zb_consensus_client_t* c, absl::string_view where) {
  return Handle::Check(c, "client", where);
}

int CheckBroker(const zb_consensus_broker_t* b, absl::string_view where) {
  return Handle::Check(b, "broker", where);
}

int Answer(zb_responder_t* token, bool success, size_t count,
           const void* const* data, const size_t* sizes,
           absl::string_view where) {
  if (token == nullptr) {
    return Fail(ZB_ERR_INVALID, absl::StrCat(where, ": responder is NULL"));
  }
  // The token is consumed whatever happens: a caller that gets an error
  // back must not be left owning something it may not free.
  std::unique_ptr<zb_responder_t> owned(token);
  zb::Frames payload;
  if (!CopyFrames(where, count, data, sizes, payload)) {
    return ZB_ERR_INVALID;  // the dropped responder answers "unanswered"
  }
  if (success) {
    owned->responder.Succeed(std::move(payload));
  } else {
    owned->responder.Fail(std::move(payload));
  }
  return ZB_OK;
}

}  // namespace

extern "C" int zb_consensus_client_new(zb_reactor_t* r, const char* endpoint,
                                       zb_consensus_client_t** out) {
  return zb_consensus_client_new_curve(r, endpoint, nullptr, out);
}

extern "C" int zb_consensus_client_new_curve(zb_reactor_t* r,
                                             const char* endpoint,
                                             const zb_curve_keys_t* curve,
                                             zb_consensus_client_t** out) {
  zb_client_options_t options;
  zb_client_options_init(&options);
  options.curve = curve;
  return zb_consensus_client_new_ex(r, endpoint, &options, out);
}

extern "C" int zb_consensus_client_new_ex(zb_reactor_t* r, const char* endpoint,
                                          const zb_client_options_t* c_options,
                                          zb_consensus_client_t** out) {
  return Guard("zb_consensus_client_new", [&]() -> int {
    if (r == nullptr || endpoint == nullptr || out == nullptr) {
      return Fail(ZB_ERR_INVALID,
                  "zb_consensus_client_new: reactor, endpoint and out are "
                  "required");
    }
    if (int rc = CheckOwner(r, "zb_consensus_client_new")) return rc;
    zb::ConsensusClient::Options options;
    if (int rc = ClientOptionsFromC("zb_consensus_client_new", c_options,
                                    options.endpoint_policy, options.curve)) {
      return rc;
    }
    absl::StatusOr<std::unique_ptr<zb::ConsensusClient>> client =
        zb::ConsensusClient::Create(*r->loop, *r->context, endpoint, options);
    if (!client.ok()) {
      return Fail(ZB_ERR_ZMQ,
                  absl::StrCat("zb_consensus_client_new(\"", endpoint,
                               "\"): ", client.status().message()));
    }
    auto c = std::make_unique<zb_consensus_client_t>(r);
    c->client = *std::move(client);
    *out = Handle::Adopt(std::move(c));
    return ZB_OK;
  });
}

extern "C" int zb_consensus_client_destroy(zb_consensus_client_t* c) {
  return DestroyCall(c, "client", "zb_consensus_client_destroy");
}

extern "C" int zb_consensus_client_request(
    zb_consensus_client_t* c, const void* service, size_t service_size,
    size_t count, const void* const* data, const size_t* sizes,
    int64_t timeout_us, int retries, zb_consensus_reply_fn fn, void* user,
    zb_free_fn free_user) {
  return zb_consensus_client_request_flags(c, service, service_size, count,
                                           data, sizes, timeout_us, retries, 0,
                                           fn, user, free_user);
}

extern "C" int zb_consensus_client_request_flags(
    zb_consensus_client_t* c, const void* service, size_t service_size,
    size_t count, const void* const* data, const size_t* sizes,
    int64_t timeout_us, int retries, int flags, zb_consensus_reply_fn fn,
    void* user, zb_free_fn free_user) {
  constexpr absl::string_view kWhere = "zb_consensus_client_request";
  return Guard(kWhere, [&]() -> int {
    if (int rc = CheckClient(c, kWhere)) return rc;
    if ((flags & ~ZB_REQUEST_RETRY_NO_WORKERS) != 0) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrFormat("%s: unknown flags 0x%x", kWhere, flags));
    }
    if (fn == nullptr || (service == nullptr && service_size > 0)) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere, ": callback and service are required"));
    }
    if (timeout_us <= 0 || retries < 0) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere, ": timeout must be > 0, retries >= 0"));
    }
    zb::Frames payload;
    if (!CopyFrames(kWhere, count, data, sizes, payload)) {
      return ZB_ERR_INVALID;
    }
    zb::ConsensusClient::RequestOptions options;
    options.timeout = MillisUp(timeout_us);
    options.retries = retries;
    options.retry_no_workers = (flags & ZB_REQUEST_RETRY_NO_WORKERS) != 0;
    c->client->Request(ServiceView(service, service_size), std::move(payload),
                       options,
                       [c, fn, ref = UserRef(user, free_user)](
                           zb::ConsensusClient::Result&& result) mutable {
                         DeliverResult(c, fn, ref.get(), result);
                         ref.Reset();
                       });
    return ZB_OK;
  });
}

extern "C" int zb_consensus_client_ping(zb_consensus_client_t* c,
                                        int64_t timeout_us, zb_status_fn fn,
                                        void* user, zb_free_fn free_user) {
  constexpr absl::string_view kWhere = "zb_consensus_client_ping";
  return Guard(kWhere, [&]() -> int {
    if (int rc = CheckClient(c, kWhere)) return rc;
    if (fn == nullptr || timeout_us <= 0) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere, ": needs a callback and a timeout"));
    }
    c->client->Ping(MillisUp(timeout_us), [fn, ref = UserRef(user, free_user)](
                                              absl::Status status) mutable {
      int code = ZB_OK;
      if (absl::IsDeadlineExceeded(status)) {
        code = ZB_ERR_TIMEOUT;
      } else if (absl::IsCancelled(status)) {
        code = ZB_ERR_CANCELLED;
      } else if (!status.ok()) {
        code = ZB_ERR_INTERNAL;
      }
      const std::string message(status.message());
      fn(ref.get(), code, message.c_str());
      ref.Reset();
    });
    return ZB_OK;
  });
}

extern "C" int zb_consensus_client_open_requests(zb_consensus_client_t* c,
                                                 size_t* count) {
  return Guard("zb_consensus_client_open_requests", [&]() -> int {
    if (int rc = CheckClient(c, "zb_consensus_client_open_requests")) {
      return rc;
    }
    if (count == nullptr) {
      return Fail(ZB_ERR_INVALID,
                  "zb_consensus_client_open_requests: count is NULL");
    }
    *count = c->client->open_requests();
    return ZB_OK;
  });
}

extern "C" int zb_consensus_client_failovers(zb_consensus_client_t* c,
                                             uint64_t* count) {
  return Guard("zb_consensus_client_failovers", [&]() -> int {
    if (int rc = CheckClient(c, "zb_consensus_client_failovers")) return rc;
    if (count == nullptr) {
      return Fail(ZB_ERR_INVALID,
                  "zb_consensus_client_failovers: count is NULL");
    }
    *count = c->client->stats().failovers;
    return ZB_OK;
  });
}

extern "C" int zb_consensus_worker_new(zb_reactor_t* r, const char* endpoint,
                                       const void* service, size_t service_size,
                                       int64_t heartbeat_interval_us,
                                       int heartbeat_liveness,
                                       zb_consensus_handler_fn handler,
                                       void* user, zb_free_fn free_user,
                                       zb_consensus_worker_t** out) {
  return zb_consensus_worker_new_curve(
      r, endpoint, service, service_size, heartbeat_interval_us,
      heartbeat_liveness, nullptr, handler, user, free_user, out);
}

extern "C" int zb_consensus_worker_new_curve(
    zb_reactor_t* r, const char* endpoint, const void* service,
    size_t service_size, int64_t heartbeat_interval_us, int heartbeat_liveness,
    const zb_curve_keys_t* curve, zb_consensus_handler_fn handler, void* user,
    zb_free_fn free_user, zb_consensus_worker_t** out) {
  constexpr absl::string_view kWhere = "zb_consensus_worker_new";
  return Guard(kWhere, [&]() -> int {
    if (int rc = CheckWorkerArgs(r, endpoint, service, service_size,
                                 handler != nullptr, out != nullptr, kWhere)) {
      return rc;
    }
    if (heartbeat_liveness > 255) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere, ": heartbeat liveness must be <= 255"));
    }
    if (int rc = CheckOwner(r, kWhere)) return rc;
    zb::ConsensusWorker::Options options;
    if (heartbeat_interval_us > 0) {
      options.heartbeat_interval = MillisUp(heartbeat_interval_us);
    }
    if (heartbeat_liveness > 0) options.heartbeat_liveness = heartbeat_liveness;
    if (int rc = CurveFromC(kWhere, curve, options.curve)) return rc;
    auto w = std::make_unique<zb_consensus_worker_t>(r);
    w->handler = handler;
    zb_consensus_worker_t* wp = w.get();
    absl::StatusOr<std::unique_ptr<zb::ConsensusWorker>> worker =
        zb::ConsensusWorker::Create(
            *r->loop, *r->context, endpoint,
            std::string(ServiceView(service, service_size)),
            [wp](std::span<zmq::message_t> payload,
                 zb::ConsensusWorker::Responder responder) {
              auto token = std::make_unique<zb_responder_t>();
              token->responder = std::move(responder);
              wp->Deliver(payload, std::move(token));
            },
            options);
    return AdoptWorker(std::move(w), std::move(worker), endpoint, user,
                       free_user, kWhere, out);
  });
}

extern "C" int zb_consensus_worker_destroy(zb_consensus_worker_t* w) {
  return DestroyCall(w, "worker", "zb_consensus_worker_destroy");
}

extern "C" int zb_responder_succeed(zb_responder_t* responder, size_t count,
                                    const void* const* data,
                                    const size_t* sizes) {
  return Guard("zb_responder_succeed", [&]() -> int {
    return Answer(responder, true, count, data, sizes, "zb_responder_succeed");
  });
}

extern "C" int zb_responder_fail(zb_responder_t* responder, size_t count,
                                 const void* const* data, const size_t* sizes) {
  return Guard("zb_responder_fail", [&]() -> int {
    return Answer(responder, false, count, data, sizes, "zb_responder_fail");
  });
}

extern "C" int zb_responder_discard(zb_responder_t* responder) {
  return Guard("zb_responder_discard", [&]() -> int {
    delete responder;
    return ZB_OK;
  });
}

extern "C" int zb_consensus_broker_new(zb_reactor_t* r,
                                       int64_t request_timeout_us,
                                       zb_consensus_broker_t** out) {
  constexpr absl::string_view kWhere = "zb_consensus_broker_new";
  return Guard(kWhere, [&]() -> int {
    if (r == nullptr || out == nullptr) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere, ": reactor and out are required"));
    }
    if (int rc = CheckOwner(r, kWhere)) return rc;
    zb::ConsensusBroker::Options options;
    if (request_timeout_us > 0) {
      options.request_timeout = MillisUp(request_timeout_us);
    }
    absl::StatusOr<std::unique_ptr<zb::ConsensusBroker>> broker =
        zb::ConsensusBroker::Create(*r->loop, *r->context, std::move(options));
    if (!broker.ok()) {
      return Fail(absl::IsInvalidArgument(broker.status()) ? ZB_ERR_INVALID
                                                           : ZB_ERR_ZMQ,
                  absl::StrCat(kWhere, ": ", broker.status().message()));
    }
    auto b = std::make_unique<zb_consensus_broker_t>(r);
    b->broker = *std::move(broker);
    zb_consensus_broker_t* bp = b.get();
    b->broker->set_log_hook([bp](zb::LogLevel level, std::string_view line) {
      // zb.h's ZB_LOG_* numbers are fixed: mapped case by case.
      int c_level = ZB_LOG_ERROR;
      switch (level) {
        case zb::LogLevel::kDebug:
          c_level = ZB_LOG_DEBUG;
          break;
        case zb::LogLevel::kInfo:
          c_level = ZB_LOG_INFO;
          break;
        case zb::LogLevel::kWarning:
          c_level = ZB_LOG_WARNING;
          break;
        case zb::LogLevel::kError:
          break;
      }
      bp->Log(c_level, line);
    });
    *out = Handle::Adopt(std::move(b));
    return ZB_OK;
  });
}

extern "C" int zb_consensus_broker_destroy(zb_consensus_broker_t* b) {
  return DestroyCall(b, "broker", "zb_consensus_broker_destroy");
}

extern "C" int zb_consensus_broker_bind(zb_consensus_broker_t* b,
                                        const char* endpoint, char* resolved,
                                        size_t capacity) {
  return BrokerBind(b, endpoint, resolved, capacity,
                    "zb_consensus_broker_bind");
}

extern "C" int zb_consensus_broker_set_log(zb_consensus_broker_t* b,
                                           zb_log_fn fn, void* user,
                                           zb_free_fn free_user) {
  return BrokerSetLog(b, fn, user, free_user, "zb_consensus_broker_set_log");
}

extern "C" int zb_consensus_broker_worker_count(zb_consensus_broker_t* b,
                                                const void* service,
                                                size_t service_size,
                                                size_t* count) {
  constexpr absl::string_view kWhere = "zb_consensus_broker_worker_count";
  return Guard(kWhere, [&]() -> int {
    if (int rc = CheckBroker(b, kWhere)) return rc;
    if (count == nullptr || (service == nullptr && service_size > 0)) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere, ": service and count are required"));
    }
    *count = b->broker->worker_count(ServiceView(service, service_size));
    return ZB_OK;
  });
}

}  // namespace zb::capi
