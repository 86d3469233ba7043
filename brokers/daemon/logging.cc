// Copyright 2026 The zbrokers Authors.

#include "brokers/daemon/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include "brokers/common/json.h"

namespace zb {

spdlog::level::level_enum ToSpdlogLevel(DaemonLogLevel level) {
  switch (level) {
    case DaemonLogLevel::kTrace:
      return spdlog::level::trace;
    case DaemonLogLevel::kDebug:
      return spdlog::level::debug;
    case DaemonLogLevel::kInfo:
      return spdlog::level::info;
    case DaemonLogLevel::kWarn:
      return spdlog::level::warn;
    case DaemonLogLevel::kError:
      return spdlog::level::err;
    case DaemonLogLevel::kCritical:
      return spdlog::level::critical;
    case DaemonLogLevel::kOff:
      return spdlog::level::off;
  }
  return spdlog::level::info;
}

namespace {

// ISO 8601 local time with milliseconds and the UTC offset ("+01:00").
constexpr char kTimePattern[] = "%Y-%m-%dT%H:%M:%S.%e%z";

// One JSON object per line: time, level, logger, message.
class JsonFormatter final : public spdlog::formatter {
 public:
  JsonFormatter() : time_(kTimePattern, spdlog::pattern_time_type::local, "") {}

  void format(const spdlog::details::log_msg& msg,
              spdlog::memory_buf_t& dest) override {
    spdlog::memory_buf_t time;
    time_.format(msg, time);
    const auto level = spdlog::level::to_string_view(msg.level);
    Append(dest, "{\"time\":\"");
    dest.append(time.data(), time.data() + time.size());
    Append(dest, "\",\"level\":\"");
    dest.append(level.data(), level.data() + level.size());
    Append(dest, "\",\"logger\":");
    Append(dest, JsonQuote(std::string_view(msg.logger_name.data(),
                                            msg.logger_name.size())));
    Append(dest, ",\"message\":");
    Append(dest,
           JsonQuote(std::string_view(msg.payload.data(), msg.payload.size())));
    Append(dest, "}\n");
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }

 private:
  static void Append(spdlog::memory_buf_t& dest, std::string_view s) {
    dest.append(s.data(), s.data() + s.size());
  }

  spdlog::pattern_formatter time_;
};

std::unique_ptr<spdlog::formatter> MakeFormatter(LogFormat format) {
  if (format == LogFormat::kJson) return std::make_unique<JsonFormatter>();
  return std::make_unique<spdlog::pattern_formatter>(std::string(kTimePattern) +
                                                     " %-7l [%n] %v");
}

}  // namespace

void SetLogFormat(spdlog::logger& logger, LogFormat format) {
  logger.set_formatter(MakeFormatter(format));
}

std::shared_ptr<spdlog::logger> MakeDaemonLogger(DaemonLogLevel level,
                                                 LogFormat format,
                                                 spdlog::sink_ptr sink) {
  auto logger = std::make_shared<spdlog::logger>("zb-broker", std::move(sink));
  SetLogFormat(*logger, format);
  logger->set_level(ToSpdlogLevel(level));
  // stderr is unbuffered, but a sink given by a caller may not be: flush
  // every line that is logged at all, so that a crash loses nothing.
  logger->flush_on(spdlog::level::trace);
  return logger;
}

std::shared_ptr<spdlog::logger> MakeDaemonLogger(DaemonLogLevel level,
                                                 spdlog::sink_ptr sink) {
  return MakeDaemonLogger(level, LogFormat::kText, std::move(sink));
}

std::shared_ptr<spdlog::logger> MakeDaemonLogger(DaemonLogLevel level,
                                                 LogFormat format) {
  return MakeDaemonLogger(level, format,
                          std::make_shared<spdlog::sinks::stderr_sink_mt>());
}

}  // namespace zb
