// Copyright 2026 The zbrokers Authors.

#include "tools/zb/cli.h"

#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "brokers/common/json.h"

namespace zb::cli {
namespace {

// Debian's abseil has its own absl::string_view.
absl::string_view Absl(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

absl::Status UsageError(std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrFormat("%s (see zb --help)", what));
}

absl::StatusOr<std::chrono::milliseconds> ParseDuration(std::string_view flag,
                                                        std::string_view text) {
  absl::Duration d;
  // A unit is required: "5" is more likely a mistake than 5 seconds.
  if (!absl::ParseDuration(Absl(text), &d) || d <= absl::ZeroDuration() ||
      d == absl::InfiniteDuration() || text.empty() ||
      !absl::ascii_isalpha(static_cast<unsigned char>(text.back()))) {
    return UsageError(absl::StrFormat(
        "%s: expected a duration like \"500ms\" or \"5s\", got \"%s\"", flag,
        text));
  }
  return std::chrono::milliseconds(
      std::max<std::int64_t>(1, absl::ToInt64Milliseconds(d)));
}

}  // namespace

std::string NormalizeEndpoint(std::string_view endpoint) {
  std::vector<std::string> items;
  for (absl::string_view item : absl::StrSplit(Absl(endpoint), ',')) {
    const absl::string_view bare = absl::StripAsciiWhitespace(item);
    if (bare.empty() || bare.find("://") != absl::string_view::npos) {
      items.emplace_back(bare);  // an empty item stays, to be refused
    } else {
      items.push_back(absl::StrFormat("tcp://%s", bare));
    }
  }
  return absl::StrJoin(items, ",");
}

std::string JsonFrame(std::string_view bytes) {
  if (IsValidUtf8(bytes)) return JsonQuote(bytes);
  return absl::StrFormat("{\"base64\": \"%s\"}",
                         absl::Base64Escape(Absl(bytes)));
}

absl::StatusOr<Options> Parse(std::span<const char* const> args) {
  Options o;
  std::vector<std::string_view> positional;
  bool flags_done = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (flags_done || arg == "-" || !arg.starts_with("-")) {
      positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      o.help = true;
      continue;
    }
    if (!arg.starts_with("--")) {
      return UsageError(absl::StrFormat("unknown flag %s", arg));
    }
    std::string flag(arg);
    std::optional<std::string> value;
    if (const std::size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    }
    for (std::size_t k = 2; k < flag.size(); ++k) {
      if (flag[k] == '_') flag[k] = '-';
    }
    auto boolean = [&](bool& out) -> absl::Status {
      if (value.has_value()) {
        return UsageError(absl::StrFormat("%s takes no value", flag));
      }
      out = true;
      return absl::OkStatus();
    };
    auto take = [&]() -> absl::StatusOr<std::string> {
      if (value.has_value()) return *value;
      if (i + 1 >= args.size()) {
        return UsageError(absl::StrFormat("%s needs a value", flag));
      }
      return std::string(args[++i]);
    };
    absl::Status st;
    if (flag == "--version") {
      st = boolean(o.version);
    } else if (flag == "--json") {
      st = boolean(o.json);
    } else if (flag == "--echo") {
      st = boolean(o.echo);
    } else if (flag == "--force") {
      st = boolean(o.force);
    } else if (flag == "--protocol" || flag == "--endpoint-policy" ||
               flag == "--timeout" || flag == "--retries" ||
               flag == "--heartbeat-interval" || flag == "--curve-server-key" ||
               flag == "--curve-server-key-file" ||
               flag == "--curve-secret-key-file" || flag == "--out") {
      absl::StatusOr<std::string> v = take();
      if (!v.ok()) return v.status();
      if (flag == "--protocol") {
        const std::string p = absl::AsciiStrToLower(Absl(*v));
        if (p == "mdp" || p == "majordomo") {
          o.protocol = Protocol::kMdp;
        } else if (p == "ccp" || p == "consensus") {
          o.protocol = Protocol::kCcp;
        } else {
          return UsageError(absl::StrFormat(
              "--protocol: expected mdp or ccp, got \"%s\"", *v));
        }
      } else if (flag == "--endpoint-policy") {
        absl::StatusOr<EndpointPolicy> p = ParseEndpointPolicy(*v);
        if (!p.ok()) {
          return UsageError(absl::StrFormat(
              "--endpoint-policy: expected failover or spread, got \"%s\"",
              *v));
        }
        o.endpoint_policy = *p;
        o.endpoint_policy_given = true;
      } else if (flag == "--timeout") {
        absl::StatusOr<std::chrono::milliseconds> d = ParseDuration(flag, *v);
        if (!d.ok()) return d.status();
        o.timeout = *d;
      } else if (flag == "--heartbeat-interval") {
        absl::StatusOr<std::chrono::milliseconds> d = ParseDuration(flag, *v);
        if (!d.ok()) return d.status();
        o.heartbeat_interval = *d;
      } else if (flag == "--retries") {
        int n = -1;
        if (!absl::SimpleAtoi(Absl(*v), &n) || n < 0 || n > 1000) {
          return UsageError(absl::StrFormat(
              "--retries: expected an integer from 0 to 1000, got \"%s\"", *v));
        }
        o.retries = n;
      } else if (flag == "--curve-server-key") {
        o.curve_server_key = *v;
      } else if (flag == "--curve-server-key-file") {
        o.curve_server_key_file = *v;
      } else if (flag == "--curve-secret-key-file") {
        o.curve_secret_key_file = *v;
      } else {
        if (v->empty()) return UsageError("--out: expected a file name prefix");
        o.out = *v;
      }
    } else {
      return UsageError(absl::StrFormat("unknown flag %s", flag));
    }
    if (!st.ok()) return st;
  }
  if (o.help || o.version) return o;
  if (positional.empty()) {
    return UsageError("missing command: request, mmi, ping, worker or keygen");
  }
  const std::string_view cmd = positional.front();
  positional.erase(positional.begin());
  auto want = [&](std::size_t min, std::size_t max,
                  std::string_view shape) -> absl::Status {
    if (positional.size() < min || positional.size() > max) {
      return UsageError(absl::StrFormat("usage: zb %s", shape));
    }
    return absl::OkStatus();
  };
  absl::Status st;
  if (cmd == "request") {
    o.command = Command::kRequest;
    st = want(2, SIZE_MAX, "request ENDPOINT SERVICE [FRAME...]");
  } else if (cmd == "mmi") {
    o.command = Command::kMmi;
    st = want(2, 2, "mmi ENDPOINT SERVICE");
  } else if (cmd == "ping") {
    o.command = Command::kPing;
    st = want(1, 1, "ping ENDPOINT");
  } else if (cmd == "worker") {
    o.command = Command::kWorker;
    st = want(2, 2, "worker ENDPOINT SERVICE --echo");
  } else if (cmd == "keygen") {
    o.command = Command::kKeygen;
    st = want(0, 0, "keygen [--out PREFIX] [--force]");
  } else {
    return UsageError(absl::StrFormat(
        "unknown command \"%s\" (request, mmi, ping, worker, keygen)", cmd));
  }
  if (!st.ok()) return st;
  if (o.command != Command::kKeygen) {
    o.endpoint = NormalizeEndpoint(positional[0]);
    if (absl::StatusOr<std::vector<std::string>> list =
            SplitEndpointList(o.endpoint);
        !list.ok()) {
      return UsageError(
          absl::StrFormat("ENDPOINT: %s", list.status().message()));
    }
    if (positional.size() > 1) o.service = std::string(positional[1]);
    if (o.command != Command::kPing && o.service.empty()) {
      return UsageError("SERVICE must not be empty");
    }
    int stdin_frames = 0;
    for (std::size_t k = 2; k < positional.size(); ++k) {
      o.frames.emplace_back(positional[k]);
      if (positional[k] == "-") ++stdin_frames;
    }
    if (stdin_frames > 1) {
      return UsageError("\"-\" (a frame read from stdin) may be given once");
    }
  }
  if (o.command == Command::kMmi && o.protocol != Protocol::kMdp) {
    return UsageError(
        "mmi is Majordomo's service discovery (RFC 8): "
        "use --protocol mdp");
  }
  if (o.command == Command::kWorker && !o.echo) {
    return UsageError("zb worker needs --echo (the only built-in behaviour)");
  }
  if (o.command != Command::kWorker &&
      (o.echo || o.heartbeat_interval.has_value())) {
    return UsageError("--echo and --heartbeat-interval are for zb worker");
  }
  if ((o.command == Command::kWorker || o.command == Command::kKeygen) &&
      o.endpoint_policy_given) {
    return UsageError(
        "--endpoint-policy is for request, mmi and ping (zb worker registers "
        "with every broker of its list)");
  }
  if (o.command == Command::kKeygen && o.curve()) {
    return UsageError("zb keygen takes no --curve-* flags");
  }
  if (o.curve()) {
    if (!o.curve_server_key.empty() && !o.curve_server_key_file.empty()) {
      return UsageError(
          "give --curve-server-key or --curve-server-key-file, not both");
    }
    if ((o.curve_server_key.empty() && o.curve_server_key_file.empty()) ||
        o.curve_secret_key_file.empty()) {
      return UsageError(
          "CURVE needs the broker's public key (--curve-server-key or "
          "--curve-server-key-file) and our secret key "
          "(--curve-secret-key-file)");
    }
  }
  return o;
}

std::string Usage() {
  return R"(Usage: zb COMMAND [ARGS] [FLAGS]

Talks to a zbrokers broker (zb-broker) from the command line.

Commands:
  request ENDPOINT SERVICE [FRAME...]
                  send one request and print the reply, one frame per line
                  (no FRAME: one empty frame; "-": a frame read from stdin)
  mmi ENDPOINT SERVICE
                  Majordomo: does SERVICE have workers?  (MMI mmi.service,
                  RFC 8; prints 200, 404 or 501)
  ping ENDPOINT   is the broker there?  ccp: CCp100 PING; mdp: an MMI
                  request (any MMI answer counts)
  worker ENDPOINT SERVICE --echo
                  serve SERVICE, answering each request with its own frames,
                  until SIGINT or SIGTERM
  keygen          write a CURVE key pair: PREFIX.pub and PREFIX.secret
                  (mode 0600); print the public key

ENDPOINT is a ZeroMQ endpoint (tcp://host:port, ipc:///path); host:port
means tcp://host:port.  A comma-separated list names several brokers
(tcp://a:5555,tcp://b:5555): request, mmi and ping use them by
--endpoint-policy; zb worker registers with every one.

Flags:
  --protocol mdp|ccp            Majordomo (MDP/0.1) or consensus (CCp100)
                                [mdp]
  --endpoint-policy failover|spread
                                with an ENDPOINT list: one broker at a time,
                                the next one when it does not answer
                                (failover), or round-robin over the live
                                ones (spread) [failover]
  --timeout DURATION            wait per attempt, e.g. 500ms, 5s [5s]
  --retries N                   attempts after a timed-out one [0]
  --json                        print one JSON object instead of text
  --curve-server-key KEY        CURVE: the broker's public key (Z85)
  --curve-server-key-file FILE  CURVE: ... or the file holding it
  --curve-secret-key-file FILE  CURVE: our secret key (public key derived)
  --echo                        zb worker: echo requests (required)
  --heartbeat-interval DURATION zb worker: mdp must match the broker's
                                [mdp 2500ms, ccp 1s]
  --out PREFIX                  zb keygen: file name prefix [zb]
  --force                       zb keygen: overwrite existing files
  -h, --help                    this text
  --version                     print the version

Exit codes:
  0  success (a reply; mmi 200; ping answered; worker stopped by a signal)
  1  the broker or a worker answered with a failure (mmi 404/501)
  2  usage error (bad flag or value, unreadable key file)
  3  no answer in time (also what a refused CURVE handshake looks like)
  4  could not run (ZeroMQ error, no CURVE in libzmq, cannot write keys)

See docs/cli.md and docs/security.md.
)";
}

}  // namespace zb::cli
