// Copyright 2026 The zbrokers Authors.
//
// zb-broker: runs zbrokers' brokers (Majordomo, consensus) in one process.
//
//   zb-broker --majordomo tcp://*:5555 --consensus tcp://*:5556
//   zb-broker --config /etc/zb-broker.toml --metrics 127.0.0.1:5580
//
// main() only wires the parts together: flags and file (config.h), logging
// (logging.h), and the Daemon (daemon.h), which runs the brokers until
// SIGTERM/SIGINT and drains them.  docs/daemon.md is the user's manual.
//
// Exit codes: 0 after --help, --version, a valid --check-config or a clean
// stop; 1 when the daemon fails at run time (e.g. an endpoint cannot be
// bound); 2 for a usage or config error.

#include <cstdio>
#include <span>

#include "brokers/daemon/config.h"
#include "brokers/daemon/daemon.h"
#include "brokers/daemon/logging.h"

#ifndef ZB_VERSION
#define ZB_VERSION "dev"
#endif

namespace {

// One warning line per deprecated key or flag of this load
// (DaemonConfig::warnings), so that old configs keep working but say what
// to change.
void LogConfigWarnings(const zb::DaemonConfig& config, spdlog::logger& log) {
  for (const std::string& warning : config.warnings) log.warn("{}", warning);
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread exists, so that every thread inherits the mask and the
  // daemon's signalfd gets SIGTERM/SIGINT.
  zb::BlockShutdownSignals();

  absl::StatusOr<zb::CommandLine> cli =
      zb::ParseCommandLine(std::span<const char* const>(
          argv + 1, static_cast<std::size_t>(argc - 1)));
  if (!cli.ok()) {
    std::fprintf(stderr, "zb-broker: %s\n",
                 std::string(cli.status().message()).c_str());
    return 2;
  }
  if (cli->help) {
    std::fputs(zb::UsageText().c_str(), stdout);
    return 0;
  }
  if (cli->version) {
    std::printf("zb-broker %s\n", ZB_VERSION);
    return 0;
  }
  absl::StatusOr<zb::DaemonConfig> config = zb::BuildConfig(*cli);
  if (!config.ok()) {
    std::fprintf(stderr, "zb-broker: %s\n",
                 std::string(config.status().message()).c_str());
    return 2;
  }
  std::shared_ptr<spdlog::logger> log =
      zb::MakeDaemonLogger(config->log_level, config->log_format);
  LogConfigWarnings(*config, *log);  // stderr, also for --check-config
  if (cli->check_config) {
    // Valid: what the daemon would run with.  Nothing is bound.
    std::fputs(zb::FormatConfig(*config).c_str(), stdout);
    return 0;
  }
  // SIGHUP reads the same command line again: the file may have changed,
  // and flags still override it.  Each reload warns about its own
  // deprecated names.
  absl::StatusOr<std::unique_ptr<zb::Daemon>> daemon =
      zb::Daemon::Create(*config, log, [cli = *cli, log] {
        absl::StatusOr<zb::DaemonConfig> next = zb::BuildConfig(cli);
        if (next.ok()) LogConfigWarnings(*next, *log);
        return next;
      });
  if (!daemon.ok()) {
    log->error("{}", std::string(daemon.status().message()));
    return 1;
  }
  const absl::Status s = (*daemon)->Wait();
  if (!s.ok()) {
    log->error("{}", std::string(s.message()));
    return 1;
  }
  return 0;
}
