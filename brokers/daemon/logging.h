// Copyright 2026 The zbrokers Authors.
//
// Logging for the zb-broker daemon, through spdlog.
//
//   std::shared_ptr<spdlog::logger> log = zb::MakeDaemonLogger(
//       zb::LogLevel::kInfo);
//   log->info("majordomo: worker {} joined service {}",
//             zb::PrintableId(identity), service);
//
// Every line goes to stderr as
//   2026-11-30T04:05:01.123 info    [zb-broker] majordomo: worker 00a1b2 ...
// (ISO local time with milliseconds, level -- trace, debug, info, warning,
// error, critical -- logger name, message).  stderr is
// what a service manager (systemd, docker) collects.  The logger is thread
// safe (spdlog's _mt sink), so every broker thread logs through the same one;
// each line is written with one write() and never interleaves with another.
//
// Ownership: the caller owns the returned logger; it is not registered in
// spdlog's global registry, so tests may make as many as they like.

#ifndef ZB_BROKERS_DAEMON_LOGGING_H_
#define ZB_BROKERS_DAEMON_LOGGING_H_

#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <string_view>

#include "brokers/daemon/config.h"

namespace zb {

spdlog::level::level_enum ToSpdlogLevel(LogLevel level);

// A logger named "zb-broker" writing to stderr at `level`.
std::shared_ptr<spdlog::logger> MakeDaemonLogger(LogLevel level);

// The same format, writing to `sink` (tests use an ostream sink).
std::shared_ptr<spdlog::logger> MakeDaemonLogger(LogLevel level,
                                                 spdlog::sink_ptr sink);

// A socket identity or service name made safe for a log line: printable
// ASCII is kept as is; anything else (libzmq's generated identities start
// with a zero byte) is written as hex.  At most 64 input bytes are shown,
// then "...".
std::string PrintableId(std::string_view bytes);

}  // namespace zb

#endif  // ZB_BROKERS_DAEMON_LOGGING_H_
