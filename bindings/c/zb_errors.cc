// Copyright 2026 The zbrokers Authors.
//
// The error plumbing of zb_internal.h (Fail, FromStatus, CodeForStatus,
// ZmqFail) and the functions of zb.h that read it: zb_last_error,
// zb_strerror; and zb_version.

#include <string>

#include "bindings/c/zb.h"
#include "bindings/c/zb_internal.h"

#ifndef ZB_VERSION
#define ZB_VERSION "0.0.0"
#endif

namespace zb::capi {

namespace {
thread_local std::string t_last_error;
}  // namespace

const std::string& LastError() { return t_last_error; }

int Fail(int code, absl::string_view message) {
  t_last_error.assign(message.data(), message.size());
  return code;
}

int FromStatus(const absl::Status& status, absl::string_view where) {
  if (status.ok()) return ZB_OK;
  int code = ZB_ERR_INTERNAL;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      code = ZB_ERR_INVALID;
      break;
    case absl::StatusCode::kNotFound:
      code = ZB_ERR_NOT_FOUND;
      break;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kCancelled:
      code = ZB_ERR_STATE;
      break;
    case absl::StatusCode::kResourceExhausted:
      code = ZB_ERR_AGAIN;
      break;
    case absl::StatusCode::kUnavailable:
      code = ZB_ERR_UNREACHABLE;
      break;
    default:
      break;
  }
  return Fail(code, absl::StrCat(where, ": ", status.message()));
}

int CodeForStatus(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return ZB_OK;
    case absl::StatusCode::kDeadlineExceeded:
      return ZB_ERR_TIMEOUT;
    case absl::StatusCode::kCancelled:
      return ZB_ERR_CANCELLED;
    case absl::StatusCode::kInvalidArgument:
      return ZB_ERR_INVALID;
    case absl::StatusCode::kInternal:
      return ZB_ERR_ZMQ;
    default:
      return ZB_ERR_INTERNAL;
  }
}

int ZmqFail(absl::string_view where, int err) {
  return Fail(ZB_ERR_ZMQ, absl::StrCat(where, ": ", zmq_strerror(err)));
}

}  // namespace zb::capi

extern "C" const char* zb_last_error(void) {
  return zb::capi::LastError().c_str();
}

extern "C" const char* zb_strerror(int code) {
  static constexpr struct {
    int code;
    const char* name;
  } kNames[] = {
      {ZB_OK, "ZB_OK"},
      {ZB_ERR_INVALID, "ZB_ERR_INVALID"},
      {ZB_ERR_WRONG_THREAD, "ZB_ERR_WRONG_THREAD"},
      {ZB_ERR_NOT_FOUND, "ZB_ERR_NOT_FOUND"},
      {ZB_ERR_STATE, "ZB_ERR_STATE"},
      {ZB_ERR_AGAIN, "ZB_ERR_AGAIN"},
      {ZB_ERR_UNREACHABLE, "ZB_ERR_UNREACHABLE"},
      {ZB_ERR_ZMQ, "ZB_ERR_ZMQ"},
      {ZB_ERR_RANGE, "ZB_ERR_RANGE"},
      {ZB_ERR_NO_MEMORY, "ZB_ERR_NO_MEMORY"},
      {ZB_ERR_INTERNAL, "ZB_ERR_INTERNAL"},
      {ZB_ERR_TIMEOUT, "ZB_ERR_TIMEOUT"},
      {ZB_ERR_CANCELLED, "ZB_ERR_CANCELLED"},
  };
  for (const auto& n : kNames) {
    if (n.code == code) return n.name;
  }
  return "unknown";
}

extern "C" const char* zb_version(void) { return ZB_VERSION; }
