// One log level set and one log hook type for every zbrokers component that
// reports lines to its owner (both brokers, their workers and clients, the
// security layer).  The daemon maps these levels onto its own logger; the
// C and Python bindings pass them on as integers in this order.
//
// A hook is called on the component's reactor thread, with a line that is
// valid only during the call.  Components rate-limit what a peer can make
// them say (zb::LogLimiter), so a hook needs no limit of its own.

#ifndef ZBROKERS_COMMON_LOG_H_
#define ZBROKERS_COMMON_LOG_H_

#include <string_view>

#include "absl/functional/any_invocable.h"

namespace zb {

// Ordered by severity: a hook that keeps only "warnings and worse" compares
// with >= LogLevel::kWarning.
enum class LogLevel { kDebug, kInfo, kWarning, kError };

// Receives one line at a time.  An empty hook means "use the component's
// default" (documented by each component).
using LogHook = absl::AnyInvocable<void(LogLevel level, std::string_view line)>;

// "debug", "info", "warning", "error".
constexpr std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "unknown";
}

}  // namespace zb

#endif  // ZBROKERS_COMMON_LOG_H_
