// Copyright 2026 The zbrokers Authors.
//
// The command line of `zb`, the zbrokers command-line client
// (docs/cli.md): parsing, the --help text, exit codes and JSON output.
// zb.cc runs the commands.
//
//   absl::StatusOr<zb::cli::Options> o = zb::cli::Parse(args);
//   if (!o.ok()) { /* print o.status().message(), exit kExitUsage */ }
//
// Thread-safety: plain values and pure functions.

#ifndef ZB_TOOLS_ZB_CLI_H_
#define ZB_TOOLS_ZB_CLI_H_

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "zbrokers/common/endpoint.h"

namespace zb::cli {

// Exit codes (docs/cli.md).
inline constexpr int kExitOk = 0;
// The broker or a worker answered with a failure (CCp100 REPLY_FAILURE;
// MMI 404 or 501 for `zb mmi`).
inline constexpr int kExitFailed = 1;
// Bad usage: unknown command or flag, bad value, unreadable key file.
inline constexpr int kExitUsage = 2;
// No answer in time (after every retry).  A CURVE handshake the broker
// refuses (wrong key) also ends here: libzmq retries it silently.
inline constexpr int kExitTimeout = 3;
// zb could not run the command: a ZeroMQ error, no CURVE in libzmq, a
// key file that cannot be written.
inline constexpr int kExitError = 4;

enum class Command { kRequest, kMmi, kPing, kWorker, kKeygen };
enum class Protocol { kMdp, kCcp };

struct Options {
  bool help = false;
  bool version = false;
  Command command = Command::kRequest;

  // One endpoint or a comma-separated list of brokers, each "tcp://..."
  // ("host:port" gets "tcp://"), checked by zb::SplitEndpointList.
  std::string endpoint;
  // What request, mmi and ping do with several brokers (docs/ha.md).
  EndpointPolicy endpoint_policy = EndpointPolicy::kFailover;
  bool endpoint_policy_given = false;
  std::string service;
  // Request frames as given; "-" stands for stdin (at most one).
  std::vector<std::string> frames;

  Protocol protocol = Protocol::kMdp;
  std::chrono::milliseconds timeout{5000};  // per attempt
  int retries = 0;
  bool json = false;

  // zb worker
  bool echo = false;
  // MDP: must equal the broker's; CCp100: announced in READY.
  std::optional<std::chrono::milliseconds> heartbeat_interval;

  // CURVE: the broker's public key (Z85 text or a file) and our secret key
  // file.  Either both or neither.
  std::string curve_server_key;
  std::string curve_server_key_file;
  std::string curve_secret_key_file;
  bool curve() const {
    return !curve_server_key.empty() || !curve_server_key_file.empty() ||
           !curve_secret_key_file.empty();
  }

  // zb keygen
  std::string out = "zb";
  bool force = false;
};

// Parses the arguments after argv[0].  Flags may come before or after the
// command's arguments; "--" ends the flags (later arguments are frames even
// when they start with "-").  Errors are InvalidArgument, naming the flag.
absl::StatusOr<Options> Parse(std::span<const char* const> args);

// The --help text.
std::string Usage();

// A JSON value for the bytes of a frame: a string when they are valid
// UTF-8, else {"base64": "..."}.
std::string JsonFrame(std::string_view bytes);
// "tcp://" prepended when the endpoint has no transport; in a
// comma-separated list, to each item that has none (the list is otherwise
// left as given: zb::SplitEndpointList checks it).
std::string NormalizeEndpoint(std::string_view endpoint);

}  // namespace zb::cli

#endif  // ZB_TOOLS_ZB_CLI_H_
