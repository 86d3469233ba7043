// Copyright 2026 The zbrokers Authors.

#include "brokers/daemon/logging.h"

#include <spdlog/sinks/stdout_sinks.h>

namespace zb {

spdlog::level::level_enum ToSpdlogLevel(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace:
      return spdlog::level::trace;
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
    case LogLevel::kCritical:
      return spdlog::level::critical;
    case LogLevel::kOff:
      return spdlog::level::off;
  }
  return spdlog::level::info;
}

std::shared_ptr<spdlog::logger> MakeDaemonLogger(LogLevel level,
                                                 spdlog::sink_ptr sink) {
  auto logger = std::make_shared<spdlog::logger>("zb-broker", std::move(sink));
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %-7l [%n] %v");
  logger->set_level(ToSpdlogLevel(level));
  // stderr is unbuffered, but a sink given by a caller may not be: flush
  // every line that is logged at all, so that a crash loses nothing.
  logger->flush_on(spdlog::level::trace);
  return logger;
}

std::shared_ptr<spdlog::logger> MakeDaemonLogger(LogLevel level) {
  return MakeDaemonLogger(level,
                          std::make_shared<spdlog::sinks::stderr_sink_mt>());
}

std::string PrintableId(std::string_view bytes) {
  if (bytes.empty()) return "\"\"";
  constexpr std::size_t kMax = 64;
  const bool truncated = bytes.size() > kMax;
  if (truncated) bytes = bytes.substr(0, kMax);
  bool printable = true;
  for (char c : bytes) {
    printable = printable && c >= 0x21 && c <= 0x7e;
  }
  std::string out;
  if (printable) {
    out.assign(bytes);
  } else {
    static constexpr char kHex[] = "0123456789abcdef";
    out.reserve(bytes.size() * 2 + 3);
    for (char c : bytes) {
      const auto b = static_cast<unsigned char>(c);
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 0xf]);
    }
  }
  if (truncated) out += "...";
  return out;
}

}  // namespace zb
