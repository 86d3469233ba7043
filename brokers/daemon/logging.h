// Copyright 2026 The zbrokers Authors.
//
// Logging for the zb-broker daemon, through spdlog.
//
//   std::shared_ptr<spdlog::logger> log = zb::MakeDaemonLogger(
//       zb::DaemonLogLevel::kInfo);
//   log->info("majordomo: worker {} joined service {}",
//             zb::PrintableIdentity(identity), zb::QuotedText(service));
//
// (Peer-chosen bytes are written with brokers/common/log_text.h, the one
// format of both brokers.)
//
// Every line goes to stderr, in one of two formats (log_format):
//
//   text (the default):
//   2026-11-30T04:05:01.123+01:00 info    [zb-broker] majordomo: worker ...
//   (local time, ISO 8601 with milliseconds and the UTC offset; level --
//   trace, debug, info, warning, error, critical; logger name; message)
//
//   json: one JSON object per line, for log collectors:
//   {"time":"2026-11-30T04:05:01.123+01:00","level":"info",
//    "logger":"zb-broker","message":"majordomo: worker ..."}
//   The message is escaped so that whatever bytes a peer puts into a line
//   (service names, reasons) keep it valid JSON: quote, backslash and
//   control characters are escaped, bytes that are not UTF-8 become U+FFFD
//   (zb::JsonQuote, brokers/common/json.h, which zb --json and zb-latency
//   --json use too).
//
// stderr is what a service manager (systemd, docker) collects.  The logger
// is thread safe (spdlog's _mt sink), so every broker thread logs through
// the same one; each line is written with one write() and never interleaves
// with another.  SetLogFormat() and set_level() may be called while other
// threads log (SIGHUP does).
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

spdlog::level::level_enum ToSpdlogLevel(DaemonLogLevel level);

// A logger named "zb-broker" writing to stderr at `level`.
std::shared_ptr<spdlog::logger> MakeDaemonLogger(
    DaemonLogLevel level, LogFormat format = LogFormat::kText);

// The same, writing to `sink` (tests use an ostream sink).
std::shared_ptr<spdlog::logger> MakeDaemonLogger(DaemonLogLevel level,
                                                 spdlog::sink_ptr sink);
std::shared_ptr<spdlog::logger> MakeDaemonLogger(DaemonLogLevel level,
                                                 LogFormat format,
                                                 spdlog::sink_ptr sink);

// Switches a logger made by MakeDaemonLogger() to `format`.  Any thread.
void SetLogFormat(spdlog::logger& logger, LogFormat format);

}  // namespace zb

#endif  // ZB_BROKERS_DAEMON_LOGGING_H_
