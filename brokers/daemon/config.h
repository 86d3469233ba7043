// Copyright 2026 The zbrokers Authors.
//
// The zb-broker daemon's configuration: a TOML file (--config FILE) plus
// command-line flags that override it.
//
//   absl::StatusOr<zb::CommandLine> cli = zb::ParseCommandLine(args);
//   if (!cli.ok()) { /* print cli.status().message(), exit 2 */ }
//   if (cli->help) { std::cout << zb::UsageText(); }
//   absl::StatusOr<zb::DaemonConfig> config = zb::BuildConfig(*cli);
//   if (!config.ok()) { /* print the message, exit 2 */ }
//
// The file has four tables, and nothing else is accepted: an unknown table or
// key is an error (a typo must never be silently ignored).
//
//   [daemon]
//   log_level = "info"             # trace|debug|info|warn|error|critical|off
//   log_format = "text"            # text | json (one JSON object per line)
//   stats_interval = "60s"         # periodic counter log line; "0s" = off
//   metrics = "127.0.0.1:5580"     # /metrics, /healthz, /readyz; "" = off
//   grace = "5s"                   # drain period on SIGTERM/SIGINT
//   metrics_max_services = 1000    # per-service series per broker
//   yield_before_sleep = false     # brokers' reactors (docs/reactor.md)
//   batch_scheduling = true        # brokers' threads as SCHED_BATCH
//   curve_secret_key_file = "/etc/zb/broker.secret"  # CURVE server key
//   curve_allowlist = "/etc/zb/clients"  # file or directory of *.pub
//
//   [majordomo]
//   endpoints = ["tcp://*:5555"]
//   curve_endpoints = ["tcp://*:5565"]  # CURVE clients only
//   heartbeat_interval = "2500ms"
//   heartbeat_liveness = 3
//   max_queue_per_service = 100000  # 0 = unbounded
//   queue_expiry = "30s"           # "0s" = never
//   max_redispatch = 1
//   max_services = 10000           # 0 = no bound
//   max_workers = 10000            # 0 = no bound
//   reply_timeout = "60s"          # "0s" = never
//   max_requests_per_client = 10000  # 0 = no bound
//   max_message_size = 16777216    # bytes, per frame; 0 = no limit
//   worker_prefetch = 1            # 1..1000; > 1 extends RFC 7
//
//   [consensus]
//   endpoints = ["tcp://*:5556"]
//   curve_endpoints = ["tcp://*:5566"]
//   request_timeout = "5s"
//   client_idle_timeout = "10m"
//   max_heartbeat_interval = "60s" # a READY above it is refused
//   max_heartbeat_liveness = 10
//   max_workers = 10000            # 0 = no bound
//   max_services = 10000           # 0 = no bound
//   max_clients = 100000           # 0 = no bound
//   max_requests_per_client = 10000  # 0 = no bound
//   max_message_size = 16777216    # bytes per frame; 0 = no limit
//
//   [titanic]                      # Titanic (RFC 9) in front of [majordomo]
//   store_path = "/var/lib/zb/titanic.db"  # "" (default) = no Titanic
//   synchronous = "full"           # full | normal (fsync policy)
//   max_requests = 100000
//   max_request_bytes = 16777216
//   request_timeout = "10s"
//   retry_delay = "1s"
//   max_in_flight = 100
//   request_expiry = "24h"         # "0s" = never
//
//   [ha]                           # a fail-over pair (docs/ha.md)
//   role = "primary"               # "primary" | "backup" | "" (off)
//   state_endpoint = "tcp://10.0.0.1:5570"       # we publish our state here
//   peer_state_endpoint = "tcp://10.0.0.2:5570"  # the peer's state_endpoint
//   heartbeat_interval = "1s"      # how often each side publishes its state
//   peer_expiry = "2s"             # peer silence after which it counts as
//                                  # gone; > heartbeat_interval
//
// Every key and flag has one name, listed in docs/glossary.md.  The names
// the daemon used before (e.g. consensus.request_deadline,
// --request-deadline) still work as deprecated aliases: each use adds one
// line to DaemonConfig::warnings, and setting an alias and its new name to
// different values in the same file (or on the same command line) is an
// error.
//
// Durations are strings with a unit ("250ms", "5s", "1m30s"; resolution 1 ms).
// A broker tuning key that is absent keeps that broker's own default (the
// std::optional fields below); docs/daemon.md lists every default.
//
// Every error is an InvalidArgument status whose message names the flag or
// the key, and for a file also "path:line:column", e.g.
//   "zb.toml:7:1: majordomo.heartbeat_liveness: expected an integer from 1
//   to 2147483647, got 0".
//
// Thread-safety: these are plain values and pure functions.

#ifndef ZB_BROKERS_DAEMON_CONFIG_H_
#define ZB_BROKERS_DAEMON_CONFIG_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "zbrokers/ha/binary_star.h"
#include "zbrokers/security/curve.h"
#include "zbrokers/security/zap_handler.h"

namespace zb {

// The daemon's own log threshold (daemon.log_level, --log-level), in
// spdlog's order (logging.h maps them to spdlog).  Not zb::LogLevel
// (zbrokers/common/log.h), the level of one line a component reports: the
// threshold also has trace, critical and off, which no component emits.
enum class DaemonLogLevel {
  kTrace,
  kDebug,
  kInfo,
  kWarn,
  kError,
  kCritical,
  kOff
};

// "trace", "debug", "info", "warn" (or "warning"), "error", "critical", "off".
absl::StatusOr<DaemonLogLevel> ParseLogLevel(std::string_view name);
std::string_view LogLevelName(DaemonLogLevel level);

// How log lines are written (logging.h): plain text, or one JSON object per
// line for log collectors.
enum class LogFormat { kText, kJson };

// "text" or "json".
absl::StatusOr<LogFormat> ParseLogFormat(std::string_view name);
std::string_view LogFormatName(LogFormat format);

// A non-negative duration with a unit, e.g. "250ms", "5s", "1m30s".
absl::StatusOr<std::chrono::milliseconds> ParseDurationText(
    std::string_view text);
// The reverse, for logs and --help ("2.5s", "250ms", "0s").
std::string FormatDuration(std::chrono::milliseconds d);

struct MajordomoSettings {
  // Plaintext bind endpoints; with curve_endpoints also empty, no Majordomo
  // broker.
  std::vector<std::string> endpoints;
  // Bind endpoints that take CURVE clients only (docs/security.md).
  std::vector<std::string> curve_endpoints;
  // Broker HEARTBEAT period towards workers; a worker silent for
  // interval x liveness is dropped.
  std::optional<std::chrono::milliseconds> heartbeat_interval;
  std::optional<std::int64_t> heartbeat_liveness;
  // Most requests queued per service while no worker is idle; 0 = no bound.
  // (Was queue_limit.)
  std::optional<std::int64_t> max_queue_per_service;
  // How long a request may wait in a queue before it is dropped; 0 = never.
  std::optional<std::chrono::milliseconds> queue_expiry;
  // How often a request whose worker died is dispatched again.
  std::optional<std::int64_t> max_redispatch;
  // Most services known at once (guards against invented service names);
  // 0 = no bound.
  std::optional<std::int64_t> max_services;
  // Most workers registered at once; 0 = no bound.
  std::optional<std::int64_t> max_workers;
  // The longest a request may stay outstanding at a worker before that
  // worker is disconnected and the request redispatched; 0 = never.
  std::optional<std::chrono::milliseconds> reply_timeout;
  // Most requests one client may have open (queued or at a worker); 0 = no
  // bound.
  std::optional<std::int64_t> max_requests_per_client;
  // The largest frame a peer may send, in bytes (ZMQ_MAXMSGSIZE; libzmq
  // checks each frame); 0 = no limit.  --max-message-size sets it for every
  // broker in the process.
  std::optional<std::int64_t> max_message_size;
  // Requests outstanding per worker (1 = RFC 7; more is an opt-in
  // extension, see broker.h); 1 to 1000.
  std::optional<std::int64_t> worker_prefetch;
};

struct ConsensusSettings {
  std::vector<std::string> endpoints;
  std::vector<std::string> curve_endpoints;  // as in MajordomoSettings
  // A request not answered by every worker by then fails with "timeout".
  // (Was request_deadline.)
  std::optional<std::chrono::milliseconds> request_timeout;
  // Idle client sequence records are forgotten after this long.  (Was
  // client_expiry.)
  std::optional<std::chrono::milliseconds> client_idle_timeout;
  // The rest are ConsensusBroker::Options of the same names (0 = no bound
  // for the caps and the message size).
  std::optional<std::chrono::milliseconds> max_heartbeat_interval;
  std::optional<std::int64_t> max_heartbeat_liveness;
  std::optional<std::int64_t> max_workers;
  std::optional<std::int64_t> max_services;
  std::optional<std::int64_t> max_clients;
  std::optional<std::int64_t> max_requests_per_client;
  std::optional<std::int64_t> max_message_size;
};

// Titanic (RFC 9, docs/titanic.md) run by the daemon in-process, in front
// of its own Majordomo broker (which it reaches over inproc, so it needs
// majordomo endpoints).  The keys are zb::TitanicOptions members of the
// same names; its `broker` is the daemon's Majordomo broker and its
// heartbeat_interval majordomo.heartbeat_interval, so neither is a key.
// Unset keys keep TitanicOptions' defaults.
struct TitanicSettings {
  // The SQLite file; empty = no Titanic.
  std::string store_path;
  // "full" or "normal".
  std::optional<std::string> synchronous;
  std::optional<std::int64_t> max_requests;
  std::optional<std::int64_t> max_request_bytes;
  std::optional<std::chrono::milliseconds> request_timeout;
  std::optional<std::chrono::milliseconds> retry_delay;
  std::optional<std::int64_t> max_in_flight;
  // 0 = never.
  std::optional<std::chrono::milliseconds> request_expiry;
};

// The [ha] table: this daemon as one half of a fail-over pair (docs/ha.md,
// zbrokers/ha/node.h, whose Options have the same names).  One BinaryStar
// gates every broker the daemon runs.
struct HaSettings {
  // Unset: no pair, every request is served.
  std::optional<HaRole> role;
  std::string state_endpoint;       // required with a role
  std::string peer_state_endpoint;  // required with a role
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds peer_expiry{2000};
};

struct DaemonConfig {
  MajordomoSettings majordomo;
  ConsensusSettings consensus;
  TitanicSettings titanic;
  HaSettings ha;

  DaemonLogLevel log_level = DaemonLogLevel::kInfo;
  LogFormat log_format = LogFormat::kText;
  // Period of the "stats" log line with every broker's counters; 0 = off.
  std::chrono::milliseconds stats_interval = std::chrono::seconds(60);
  // "host:port" of the Prometheus text endpoint; empty = no endpoint.  Port 0
  // picks a free port (logged at start-up).
  std::string metrics;
  // Most services per broker with metric series of their own; the others
  // are summed under service="_other" (metrics.h).  0 = all of them.
  std::size_t metrics_max_services = 1000;
  // On SIGTERM/SIGINT, how long open requests may take to finish.
  std::chrono::milliseconds grace = std::chrono::seconds(5);
  // Reactor::Options::yield_before_sleep of every broker's reactor thread
  // (docs/reactor.md, "Yield before sleep").  Takes effect at start.
  bool yield_before_sleep = false;
  // Reactor::Options::batch_scheduling of every broker's reactor thread:
  // SCHED_BATCH, so that a broker woken by a reply does not preempt the
  // workers on its core but takes their replies together (docs/reactor.md,
  // "Batch scheduling").  Takes effect at start.
  bool batch_scheduling = true;

  // CURVE (docs/security.md); both are required when a broker has
  // curve_endpoints.  The file holding the brokers' secret key (one Z85
  // key, see zbrokers/security/curve.h)...
  std::string curve_secret_key_file;
  // ... and the client public keys let in: a file, or a directory of
  // "*.pub" files (zbrokers/security/zap_handler.h); re-read on SIGHUP.
  std::string curve_allowlist;

  // Where each key that was set came from, by "section.key": the file's
  // "path:line:column" or the flag as typed.  For errors found after
  // parsing (an unreadable key file).
  std::vector<std::pair<std::string, std::string>> origins;
  // The origin of `key`, or `key` itself when it was not set.
  std::string OriginOf(std::string_view key) const;

  // One line per deprecated key or flag used (file keys first, in key
  // order; then flags in command-line order; a flag alias typed twice
  // counts once), e.g. "zb.toml:7:1:
  // consensus.request_deadline is deprecated, use consensus.request_timeout
  // (docs/glossary.md)".  Whoever loads the config logs them as warnings
  // (zb-broker does, at start, on --check-config and on every SIGHUP).
  // Not part of the configuration: ConfigValues() and FormatConfig() ignore
  // them.
  std::vector<std::string> warnings;
};

// True when some broker has curve_endpoints.
bool HasCurveEndpoints(const DaemonConfig& config);

// What the CURVE files of a config hold.
struct CurveFiles {
  CurveKey secret_key;
  CurveKey public_key;  // derived from secret_key
  CurveAllowlist allowlist;
  // Non-empty when the secret key file can be read by group or others.
  std::string secret_key_warning;
};
// Reads daemon.curve_secret_key_file and daemon.curve_allowlist.  Errors
// (InvalidArgument) name the key and where it was set.
absl::StatusOr<CurveFiles> LoadCurveFiles(const DaemonConfig& config);
// Reads daemon.curve_allowlist only (what SIGHUP reloads).
absl::StatusOr<CurveAllowlist> LoadCurveAllowlist(const DaemonConfig& config);

// What the command line said.  Fields the user did not give are empty, so
// that they do not override the file.
struct CommandLine {
  bool help = false;
  bool version = false;
  // --check-config: validate, print the effective configuration, exit.
  bool check_config = false;
  std::optional<std::string> config_file;
  // Every value of a repeatable flag, in order (a comma-separated value
  // counts as several); when non-empty it replaces (does not extend) the
  // file's endpoint list for that broker.
  std::vector<std::string> majordomo;
  std::vector<std::string> consensus;
  // --majordomo-curve / --consensus-curve, the same way.
  std::vector<std::string> majordomo_curve;
  std::vector<std::string> consensus_curve;
  // Other overrides in command-line order.  They are validated exactly like
  // the file's values (by ApplyCommandLine), and errors name `flag` as typed.
  struct Override {
    std::string key;    // "section.key"
    std::string flag;   // as typed, e.g. "--grace"
    std::string value;  // raw text
    // The flag's one name when `flag` is a deprecated alias of it (e.g.
    // "--request-timeout" for a typed "--request-deadline"), else empty.
    std::string deprecated_for;
  };
  std::vector<Override> overrides;
};

// Parses the arguments after argv[0].  Accepts "--flag value" and
// "--flag=value"; underscores in flag names work as dashes (--log_level).
// Deprecated flags (the first zb-broker's --consensus_timeout and
// --consensus_client_idle, and the names docs/glossary.md lists as
// aliases) are accepted as their new flag; ApplyCommandLine() adds the
// warning.  Unknown flags,
// missing values and stray positional arguments are errors.  Values are only
// checked by BuildConfig().
absl::StatusOr<CommandLine> ParseCommandLine(std::span<const char* const> args);

// Parses TOML text.  `source_name` is used in error messages (the file path).
// A deprecated key is read as its new name and adds a warning; the file
// setting both with different values is an error naming both.
absl::StatusOr<DaemonConfig> ParseConfigText(std::string_view text,
                                             std::string_view source_name);
// Reads and parses a file.  A missing or unreadable file is an error.
absl::StatusOr<DaemonConfig> LoadConfigFile(const std::string& path);

// Applies the command line's overrides to `config`, adding a warning to
// config.warnings per deprecated flag used.  A deprecated flag and its new
// name given with different values is an error (whichever came last would
// otherwise win in silence).
absl::Status ApplyCommandLine(const CommandLine& cli, DaemonConfig& config);

// Checks what must hold for the daemon to start: at least one broker
// endpoint; with an [ha] role, both state endpoints, different, and a
// peer_expiry above heartbeat_interval; for CURVE endpoints (tcp:// or ipc://
// only, none also listed as plaintext) a libzmq with CURVE, a secret key file
// and an allowlist. Reads no file.
absl::Status ValidateConfig(const DaemonConfig& config);

// The whole pipeline: defaults, then the file (if --config), then the flags,
// then ValidateConfig(), then LoadCurveFiles() when a CURVE file is named.
absl::StatusOr<DaemonConfig> BuildConfig(const CommandLine& cli);

// The configuration the daemon runs with, as a TOML document that
// ParseConfigText() reads back to the same values: every key of the schema,
// in schema order, with the brokers' own defaults (MajordomoBroker::Options,
// ConsensusBroker::Options) filled in where `config` leaves a key unset.
// This is what --check-config prints.
std::string FormatConfig(const DaemonConfig& config);

// The same values as ("section.key", TOML value) pairs, in schema order
// (SIGHUP compares them to tell which keys changed).
std::vector<std::pair<std::string, std::string>> ConfigValues(
    const DaemonConfig& config);

// The text printed by --help, with every default (taken from the brokers'
// Options, so it cannot drift from what they do).
std::string UsageText();

}  // namespace zb

#endif  // ZB_BROKERS_DAEMON_CONFIG_H_
