// Copyright 2026 The zbrokers Authors.

#include "brokers/daemon/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

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
    Append(dest, "\",\"logger\":\"");
    Append(dest, JsonEscape(std::string_view(msg.logger_name.data(),
                                             msg.logger_name.size())));
    Append(dest, "\",\"message\":\"");
    Append(dest, JsonEscape(
                     std::string_view(msg.payload.data(), msg.payload.size())));
    Append(dest, "\"}\n");
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

// The length of the valid UTF-8 sequence at the start of `s` (1 to 4), or
// 0 when it does not start with one (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF).
std::size_t Utf8Length(std::string_view s) {
  const auto b = [&](std::size_t i) {
    return static_cast<unsigned char>(s[i]);
  };
  const unsigned char c = b(0);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;  // overlong
    if (c == 0xed) hi = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;  // overlong
    if (c == 0xf4) hi = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n || b(1) < lo || b(1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i) {
    if (b(i) < 0x80 || b(i) > 0xbf) return 0;
  }
  return n;
}

}  // namespace

std::string JsonEscape(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() + 8);
  while (!text.empty()) {
    const auto c = static_cast<unsigned char>(text.front());
    if (c >= 0x80) {
      const std::size_t n = Utf8Length(text);
      if (n == 0) {
        out += "\\ufffd";
        text.remove_prefix(1);
      } else {
        out.append(text.substr(0, n));
        text.remove_prefix(n);
      }
      continue;
    }
    text.remove_prefix(1);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xf]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  return out;
}

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
