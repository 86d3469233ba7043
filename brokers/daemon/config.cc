// Copyright 2026 The zbrokers Authors.

#include "brokers/daemon/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "zbrokers/common/endpoint.h"
#include "zbrokers/consensus/broker.h"
#include "zbrokers/majordomo/broker.h"
#include "zbrokers/titanic/titanic.h"

namespace zb {
namespace {

using std::chrono::milliseconds;

// Debian's abseil is built with its own absl::string_view (not an alias of
// std::string_view), so absl string functions need an explicit conversion.
absl::string_view Absl(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

void Formatter(std::string* out, std::string_view s) { out->append(s); }

// What kind of value a key holds; decides how a file node or a flag's text is
// parsed and checked.
enum class Kind {
  kEndpoints,         // array of "transport://address" strings
  kDuration,          // string with a unit, >= 0
  kPositiveDuration,  // string with a unit, > 0
  kPositiveInt,       // integer >= 1
  kNonNegativeInt,    // integer >= 0
  kPrefetch,          // integer from 1 to MajordomoBroker::kMaxWorkerPrefetch
  kLogLevel,          // string, one of the level names
  kLogFormat,         // string, "text" or "json"
  kAddress,           // "host:port" or "" (off)
  kPath,              // a file or directory path; "" = not set
  kSynchronous,       // string, "full" or "normal" (Titanic's fsync policy)
  kEndpoint,          // one endpoint string; "" = not set
  kHaRole,            // "primary", "backup", or "" (no fail-over pair)
  kBool,              // TOML true/false; a flag's "true"/"false"/"on"/"off"
};

// A parsed value; the key's Kind says which field is set.  (A plain struct
// rather than a std::variant: GCC 12 with ASan reports false
// maybe-uninitialized warnings when a variant of strings is moved around.)
struct Value {
  milliseconds duration{0};
  std::int64_t integer = 0;
  std::string text;
  std::vector<std::string> list;
  DaemonLogLevel level = DaemonLogLevel::kInfo;
  LogFormat format = LogFormat::kText;
  bool flag = false;

  // Whether two values are the same setting (for an alias set beside its
  // new name); fields the key's kind does not use are equal (defaults).
  bool operator==(const Value&) const = default;
};

// Records where `key` was set (the last setting wins).
void SetOrigin(DaemonConfig& c, std::string key, std::string where) {
  for (auto& [k, w] : c.origins) {
    if (k == key) {
      w = std::move(where);
      return;
    }
  }
  c.origins.emplace_back(std::move(key), std::move(where));
}

struct KeySpec {
  std::string_view section;
  std::string_view key;
  Kind kind;
  // The flag that overrides it ("" = file only).  Endpoint flags are special:
  // they are repeatable and parsed by ParseCommandLine itself.
  std::string_view flag;
  void (*apply)(DaemonConfig&, Value&&);
  // The value the daemon runs with, as TOML (FormatConfig); a broker tuning
  // key that is unset prints the broker's own default.
  std::string (*print)(const DaemonConfig&);
};

// The brokers' defaults, for keys the configuration leaves unset.
const MajordomoBroker::Options kMajordomoDefaults{};
const ConsensusBroker::Options kConsensusDefaults{};
const TitanicOptions& TitanicDefaults() {
  static const TitanicOptions* const defaults = new TitanicOptions();
  return *defaults;
}
std::string_view SynchronousName(TitanicStoreOptions::Synchronous s) {
  return s == TitanicStoreOptions::Synchronous::kFull ? "full" : "normal";
}

// A TOML basic string.
std::string Toml(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20 || u == 0x7f) {
      out += absl::StrFormat("\\u%04x", u);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}
std::string Toml(milliseconds d) { return Toml(FormatDuration(d)); }
std::string Toml(const std::vector<std::string>& list) {
  std::string out = "[";
  for (const std::string& item : list) {
    if (out.size() > 1) out += ", ";
    out += Toml(std::string_view(item));
  }
  return out + "]";
}
template <typename Int>
std::string TomlInt(Int n) {
  return absl::StrFormat("%d", n);
}

// The schema: every key the file may hold.  Adding a key here makes it
// accepted in the file and, with a flag name, on the command line.
const std::array<KeySpec, 47> kKeys = {{
    {"daemon", "log_level", Kind::kLogLevel, "--log-level",
     [](DaemonConfig& c, Value&& v) { c.log_level = v.level; },
     [](const DaemonConfig& c) { return Toml(LogLevelName(c.log_level)); }},
    {"daemon", "log_format", Kind::kLogFormat, "--log-format",
     [](DaemonConfig& c, Value&& v) { c.log_format = v.format; },
     [](const DaemonConfig& c) { return Toml(LogFormatName(c.log_format)); }},
    {"daemon", "stats_interval", Kind::kDuration, "--stats-interval",
     [](DaemonConfig& c, Value&& v) { c.stats_interval = v.duration; },
     [](const DaemonConfig& c) { return Toml(c.stats_interval); }},
    {"daemon", "metrics", Kind::kAddress, "--metrics",
     [](DaemonConfig& c, Value&& v) { c.metrics = std::move(v.text); },
     [](const DaemonConfig& c) { return Toml(std::string_view(c.metrics)); }},
    {"daemon", "grace", Kind::kDuration, "--grace",
     [](DaemonConfig& c, Value&& v) { c.grace = v.duration; },
     [](const DaemonConfig& c) { return Toml(c.grace); }},
    {"daemon", "metrics_max_services", Kind::kNonNegativeInt,
     "--metrics-max-services",
     [](DaemonConfig& c, Value&& v) {
       c.metrics_max_services = static_cast<std::size_t>(v.integer);
     },
     [](const DaemonConfig& c) {
       return TomlInt(static_cast<std::int64_t>(c.metrics_max_services));
     }},
    {"daemon", "yield_before_sleep", Kind::kBool, "--yield-before-sleep",
     [](DaemonConfig& c, Value&& v) { c.yield_before_sleep = v.flag; },
     [](const DaemonConfig& c) {
       return std::string(c.yield_before_sleep ? "true" : "false");
     }},
    {"daemon", "batch_scheduling", Kind::kBool, "--batch-scheduling",
     [](DaemonConfig& c, Value&& v) { c.batch_scheduling = v.flag; },
     [](const DaemonConfig& c) {
       return std::string(c.batch_scheduling ? "true" : "false");
     }},
    {"daemon", "curve_secret_key_file", Kind::kPath, "--curve-secret-key-file",
     [](DaemonConfig& c, Value&& v) {
       c.curve_secret_key_file = std::move(v.text);
     },
     [](const DaemonConfig& c) {
       return Toml(std::string_view(c.curve_secret_key_file));
     }},
    {"daemon", "curve_allowlist", Kind::kPath, "--curve-allowlist",
     [](DaemonConfig& c, Value&& v) { c.curve_allowlist = std::move(v.text); },
     [](const DaemonConfig& c) {
       return Toml(std::string_view(c.curve_allowlist));
     }},
    {"majordomo", "endpoints", Kind::kEndpoints, "--majordomo",
     [](DaemonConfig& c, Value&& v) {
       c.majordomo.endpoints = std::move(v.list);
     },
     [](const DaemonConfig& c) { return Toml(c.majordomo.endpoints); }},
    {"majordomo", "curve_endpoints", Kind::kEndpoints, "--majordomo-curve",
     [](DaemonConfig& c, Value&& v) {
       c.majordomo.curve_endpoints = std::move(v.list);
     },
     [](const DaemonConfig& c) { return Toml(c.majordomo.curve_endpoints); }},
    {"majordomo", "heartbeat_interval", Kind::kPositiveDuration,
     "--heartbeat-interval",
     [](DaemonConfig& c, Value&& v) {
       c.majordomo.heartbeat_interval = v.duration;
     },
     [](const DaemonConfig& c) {
       return Toml(c.majordomo.heartbeat_interval.value_or(
           kMajordomoDefaults.heartbeat_interval));
     }},
    {"majordomo", "heartbeat_liveness", Kind::kPositiveInt,
     "--heartbeat-liveness",
     [](DaemonConfig& c, Value&& v) {
       c.majordomo.heartbeat_liveness = v.integer;
     },
     [](const DaemonConfig& c) {
       return TomlInt(c.majordomo.heartbeat_liveness.value_or(
           kMajordomoDefaults.heartbeat_liveness));
     }},
    {"majordomo", "max_queue_per_service", Kind::kNonNegativeInt,
     "--max-queue-per-service",
     [](DaemonConfig& c, Value&& v) {
       c.majordomo.max_queue_per_service = v.integer;
     },
     [](const DaemonConfig& c) {
       return TomlInt(
           c.majordomo.max_queue_per_service.value_or(static_cast<std::int64_t>(
               kMajordomoDefaults.max_queue_per_service)));
     }},
    {"majordomo", "queue_expiry", Kind::kDuration, "--queue-expiry",
     [](DaemonConfig& c, Value&& v) { c.majordomo.queue_expiry = v.duration; },
     [](const DaemonConfig& c) {
       return Toml(
           c.majordomo.queue_expiry.value_or(kMajordomoDefaults.queue_expiry));
     }},
    {"majordomo", "max_redispatch", Kind::kNonNegativeInt, "--max-redispatch",
     [](DaemonConfig& c, Value&& v) { c.majordomo.max_redispatch = v.integer; },
     [](const DaemonConfig& c) {
       return TomlInt(c.majordomo.max_redispatch.value_or(
           kMajordomoDefaults.max_redispatch));
     }},
    {"majordomo", "max_services", Kind::kNonNegativeInt, "--max-services",
     [](DaemonConfig& c, Value&& v) { c.majordomo.max_services = v.integer; },
     [](const DaemonConfig& c) {
       return TomlInt(c.majordomo.max_services.value_or(
           static_cast<std::int64_t>(kMajordomoDefaults.max_services)));
     }},
    {"majordomo", "max_workers", Kind::kNonNegativeInt, "--max-workers",
     [](DaemonConfig& c, Value&& v) { c.majordomo.max_workers = v.integer; },
     [](const DaemonConfig& c) {
       return TomlInt(c.majordomo.max_workers.value_or(
           static_cast<std::int64_t>(kMajordomoDefaults.max_workers)));
     }},
    {"majordomo", "reply_timeout", Kind::kDuration, "--reply-timeout",
     [](DaemonConfig& c, Value&& v) { c.majordomo.reply_timeout = v.duration; },
     [](const DaemonConfig& c) {
       return Toml(c.majordomo.reply_timeout.value_or(
           kMajordomoDefaults.reply_timeout));
     }},
    {"majordomo", "max_requests_per_client", Kind::kNonNegativeInt,
     "--max-requests-per-client",
     [](DaemonConfig& c, Value&& v) {
       c.majordomo.max_requests_per_client = v.integer;
     },
     [](const DaemonConfig& c) {
       return TomlInt(c.majordomo.max_requests_per_client.value_or(
           static_cast<std::int64_t>(
               kMajordomoDefaults.max_requests_per_client)));
     }},
    // --max-message-size sets every broker's max_message_size; a broker's
    // own flag (--consensus-max-message-size) sets only that broker's
    // (ParseCommandLine).
    {"majordomo", "max_message_size", Kind::kNonNegativeInt,
     "--max-message-size",
     [](DaemonConfig& c, Value&& v) {
       c.majordomo.max_message_size = v.integer;
     },
     [](const DaemonConfig& c) {
       return TomlInt(c.majordomo.max_message_size.value_or(
           kMajordomoDefaults.max_message_size));
     }},
    {"majordomo", "worker_prefetch", Kind::kPrefetch, "--worker-prefetch",
     [](DaemonConfig& c, Value&& v) {
       c.majordomo.worker_prefetch = v.integer;
     },
     [](const DaemonConfig& c) {
       return TomlInt(c.majordomo.worker_prefetch.value_or(
           kMajordomoDefaults.worker_prefetch));
     }},
    {"consensus", "endpoints", Kind::kEndpoints, "--consensus",
     [](DaemonConfig& c, Value&& v) {
       c.consensus.endpoints = std::move(v.list);
     },
     [](const DaemonConfig& c) { return Toml(c.consensus.endpoints); }},
    {"consensus", "curve_endpoints", Kind::kEndpoints, "--consensus-curve",
     [](DaemonConfig& c, Value&& v) {
       c.consensus.curve_endpoints = std::move(v.list);
     },
     [](const DaemonConfig& c) { return Toml(c.consensus.curve_endpoints); }},
    {"consensus", "request_timeout", Kind::kPositiveDuration,
     "--request-timeout",
     [](DaemonConfig& c, Value&& v) {
       c.consensus.request_timeout = v.duration;
     },
     [](const DaemonConfig& c) {
       return Toml(c.consensus.request_timeout.value_or(
           kConsensusDefaults.request_timeout));
     }},
    {"consensus", "client_idle_timeout", Kind::kPositiveDuration,
     "--client-idle-timeout",
     [](DaemonConfig& c, Value&& v) {
       c.consensus.client_idle_timeout = v.duration;
     },
     [](const DaemonConfig& c) {
       return Toml(c.consensus.client_idle_timeout.value_or(
           kConsensusDefaults.client_idle_timeout));
     }},
    {"consensus", "max_heartbeat_interval", Kind::kPositiveDuration,
     "--consensus-max-heartbeat-interval",
     [](DaemonConfig& c, Value&& v) {
       c.consensus.max_heartbeat_interval = v.duration;
     },
     [](const DaemonConfig& c) {
       return Toml(c.consensus.max_heartbeat_interval.value_or(
           kConsensusDefaults.max_heartbeat_interval));
     }},
    {"consensus", "max_heartbeat_liveness", Kind::kPositiveInt,
     "--consensus-max-heartbeat-liveness",
     [](DaemonConfig& c, Value&& v) {
       c.consensus.max_heartbeat_liveness = v.integer;
     },
     [](const DaemonConfig& c) {
       return TomlInt(c.consensus.max_heartbeat_liveness.value_or(
           kConsensusDefaults.max_heartbeat_liveness));
     }},
    {"consensus", "max_workers", Kind::kNonNegativeInt,
     "--consensus-max-workers",
     [](DaemonConfig& c, Value&& v) { c.consensus.max_workers = v.integer; },
     [](const DaemonConfig& c) {
       return TomlInt(c.consensus.max_workers.value_or(
           static_cast<std::int64_t>(kConsensusDefaults.max_workers)));
     }},
    {"consensus", "max_services", Kind::kNonNegativeInt,
     "--consensus-max-services",
     [](DaemonConfig& c, Value&& v) { c.consensus.max_services = v.integer; },
     [](const DaemonConfig& c) {
       return TomlInt(c.consensus.max_services.value_or(
           static_cast<std::int64_t>(kConsensusDefaults.max_services)));
     }},
    {"consensus", "max_clients", Kind::kNonNegativeInt,
     "--consensus-max-clients",
     [](DaemonConfig& c, Value&& v) { c.consensus.max_clients = v.integer; },
     [](const DaemonConfig& c) {
       return TomlInt(c.consensus.max_clients.value_or(
           static_cast<std::int64_t>(kConsensusDefaults.max_clients)));
     }},
    {"consensus", "max_requests_per_client", Kind::kNonNegativeInt,
     "--consensus-max-requests-per-client",
     [](DaemonConfig& c, Value&& v) {
       c.consensus.max_requests_per_client = v.integer;
     },
     [](const DaemonConfig& c) {
       return TomlInt(c.consensus.max_requests_per_client.value_or(
           static_cast<std::int64_t>(
               kConsensusDefaults.max_requests_per_client)));
     }},
    {"consensus", "max_message_size", Kind::kNonNegativeInt,
     "--consensus-max-message-size",
     [](DaemonConfig& c, Value&& v) {
       c.consensus.max_message_size = v.integer;
     },
     [](const DaemonConfig& c) {
       return TomlInt(c.consensus.max_message_size.value_or(
           kConsensusDefaults.max_message_size));
     }},
    // [titanic]: its flags carry the table's name, as Titanic's words
    // (request_timeout, max_requests) are also other tables' words.
    {"titanic", "store_path", Kind::kPath, "--titanic-store-path",
     [](DaemonConfig& c, Value&& v) {
       c.titanic.store_path = std::move(v.text);
     },
     [](const DaemonConfig& c) {
       return Toml(std::string_view(c.titanic.store_path));
     }},
    {"titanic", "synchronous", Kind::kSynchronous, "--titanic-synchronous",
     [](DaemonConfig& c, Value&& v) {
       c.titanic.synchronous = std::move(v.text);
     },
     [](const DaemonConfig& c) {
       return Toml(std::string_view(c.titanic.synchronous.value_or(
           std::string(SynchronousName(TitanicDefaults().synchronous)))));
     }},
    {"titanic", "max_requests", Kind::kPositiveInt, "--titanic-max-requests",
     [](DaemonConfig& c, Value&& v) { c.titanic.max_requests = v.integer; },
     [](const DaemonConfig& c) {
       return TomlInt(c.titanic.max_requests.value_or(
           static_cast<std::int64_t>(TitanicDefaults().max_requests)));
     }},
    {"titanic", "max_request_bytes", Kind::kPositiveInt,
     "--titanic-max-request-bytes",
     [](DaemonConfig& c, Value&& v) {
       c.titanic.max_request_bytes = v.integer;
     },
     [](const DaemonConfig& c) {
       return TomlInt(c.titanic.max_request_bytes.value_or(
           static_cast<std::int64_t>(TitanicDefaults().max_request_bytes)));
     }},
    {"titanic", "request_timeout", Kind::kPositiveDuration,
     "--titanic-request-timeout",
     [](DaemonConfig& c, Value&& v) { c.titanic.request_timeout = v.duration; },
     [](const DaemonConfig& c) {
       return Toml(c.titanic.request_timeout.value_or(
           TitanicDefaults().request_timeout));
     }},
    {"titanic", "retry_delay", Kind::kDuration, "--titanic-retry-delay",
     [](DaemonConfig& c, Value&& v) { c.titanic.retry_delay = v.duration; },
     [](const DaemonConfig& c) {
       return Toml(
           c.titanic.retry_delay.value_or(TitanicDefaults().retry_delay));
     }},
    {"titanic", "max_in_flight", Kind::kPositiveInt, "--titanic-max-in-flight",
     [](DaemonConfig& c, Value&& v) { c.titanic.max_in_flight = v.integer; },
     [](const DaemonConfig& c) {
       return TomlInt(c.titanic.max_in_flight.value_or(
           static_cast<std::int64_t>(TitanicDefaults().max_in_flight)));
     }},
    {"titanic", "request_expiry", Kind::kDuration, "--titanic-request-expiry",
     [](DaemonConfig& c, Value&& v) { c.titanic.request_expiry = v.duration; },
     [](const DaemonConfig& c) {
       return Toml(
           c.titanic.request_expiry.value_or(TitanicDefaults().request_expiry));
     }},
    {"ha", "role", Kind::kHaRole, "--ha-role",
     [](DaemonConfig& c, Value&& v) {
       c.ha.role =
           v.text.empty() ? std::nullopt : std::optional(*ParseHaRole(v.text));
     },
     [](const DaemonConfig& c) {
       return Toml(c.ha.role ? HaRoleName(*c.ha.role) : "");
     }},
    {"ha", "state_endpoint", Kind::kEndpoint, "--ha-state-endpoint",
     [](DaemonConfig& c, Value&& v) {
       c.ha.state_endpoint = std::move(v.text);
     },
     [](const DaemonConfig& c) {
       return Toml(std::string_view(c.ha.state_endpoint));
     }},
    {"ha", "peer_state_endpoint", Kind::kEndpoint, "--ha-peer-state-endpoint",
     [](DaemonConfig& c, Value&& v) {
       c.ha.peer_state_endpoint = std::move(v.text);
     },
     [](const DaemonConfig& c) {
       return Toml(std::string_view(c.ha.peer_state_endpoint));
     }},
    {"ha", "heartbeat_interval", Kind::kPositiveDuration,
     "--ha-heartbeat-interval",
     [](DaemonConfig& c, Value&& v) { c.ha.heartbeat_interval = v.duration; },
     [](const DaemonConfig& c) { return Toml(c.ha.heartbeat_interval); }},
    {"ha", "peer_expiry", Kind::kPositiveDuration, "--ha-peer-expiry",
     [](DaemonConfig& c, Value&& v) { c.ha.peer_expiry = v.duration; },
     [](const DaemonConfig& c) { return Toml(c.ha.peer_expiry); }},
}};

constexpr std::array<std::string_view, 5> kSections = {
    "daemon", "majordomo", "consensus", "titanic", "ha"};

// The names a key or a flag had before it got its one name
// (docs/glossary.md).  They keep working: the value goes to the new key,
// and each use adds a warning naming the new one.
struct Alias {
  std::string_view old_name;  // "section.key" or "--flag"
  std::string_view new_name;  // the same form
};
constexpr std::array<Alias, 4> kKeyAliases = {{
    {"majordomo.queue_limit", "majordomo.max_queue_per_service"},
    {"consensus.request_deadline", "consensus.request_timeout"},
    {"consensus.client_expiry", "consensus.client_idle_timeout"},
    {"consensus.max_heartbeat_retries", "consensus.max_heartbeat_liveness"},
}};
// Flags after CanonicalFlag().  --consensus-timeout and
// --consensus-client-idle are the first zb-broker's names.
constexpr std::array<Alias, 6> kFlagAliases = {{
    {"--queue-limit", "--max-queue-per-service"},
    {"--request-deadline", "--request-timeout"},
    {"--consensus-timeout", "--request-timeout"},
    {"--client-expiry", "--client-idle-timeout"},
    {"--consensus-client-idle", "--client-idle-timeout"},
    {"--consensus-max-heartbeat-retries", "--consensus-max-heartbeat-liveness"},
}};

// The new name of a deprecated `old_name`, or "" when it is not one.
template <std::size_t N>
std::string_view NewNameOf(const std::array<Alias, N>& aliases,
                           std::string_view old_name) {
  for (const Alias& a : aliases) {
    if (a.old_name == old_name) return a.new_name;
  }
  return "";
}

const KeySpec* FindKey(std::string_view section, std::string_view key) {
  for (const KeySpec& k : kKeys) {
    if (k.section == section && k.key == key) return &k;
  }
  return nullptr;
}

// Flags are spelled with dashes; underscores are accepted too
// (--log_level).
std::string CanonicalFlag(std::string_view typed) {
  std::string flag(typed);
  for (std::size_t i = 2; i < flag.size(); ++i) {
    if (flag[i] == '_') flag[i] = '-';
  }
  return flag;
}

// `where` is the file position, or "" for a flag.
std::string DeprecationWarning(std::string_view where,
                               std::string_view old_name,
                               std::string_view new_name) {
  return absl::StrFormat("%s%s%s is deprecated, use %s (docs/glossary.md)",
                         where, where.empty() ? "" : ": ", old_name, new_name);
}

const KeySpec* FindFlag(std::string_view flag) {
  for (const KeySpec& k : kKeys) {
    if (k.flag == flag) return &k;
  }
  return nullptr;
}

std::string KeyName(const KeySpec& k) {
  return absl::StrFormat("%s.%s", k.section, k.key);
}

// --- Value checks shared by the file and the flags ------------------------

// The shape of an endpoint, and what libzmq itself does not check (a tcp
// port out of range; zbrokers/common/endpoint.h).
absl::Status CheckEndpointText(std::string_view ep) {
  const std::size_t sep = ep.find("://");
  if (sep == std::string_view::npos || sep == 0 || sep + 3 >= ep.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "expected an endpoint like \"tcp://*:5555\", got \"%s\"", ep));
  }
  for (char c : ep.substr(0, sep)) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c))) {
      return absl::InvalidArgumentError(
          absl::StrFormat("bad transport in endpoint \"%s\"", ep));
    }
  }
  return CheckEndpoint(ep);
}

absl::Status CheckAddress(std::string_view addr) {
  if (addr.empty()) return absl::OkStatus();  // off
  const std::size_t colon = addr.rfind(':');
  int port = -1;
  if (colon == std::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(Absl(addr.substr(colon + 1)), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "expected \"host:port\" like \"127.0.0.1:5580\" (or \"\" for off), "
        "got \"%s\"",
        addr));
  }
  return absl::OkStatus();
}

std::int64_t MinInt(Kind kind) { return kind == Kind::kNonNegativeInt ? 0 : 1; }
// The brokers take these as int or size_t; keep every value an int.
constexpr std::int64_t kMaxInt = 2147483647;
std::int64_t MaxInt(Kind kind) {
  return kind == Kind::kPrefetch ? MajordomoBroker::kMaxWorkerPrefetch
                                 : kMaxInt;
}

absl::StatusOr<Value> ParseScalarText(Kind kind, std::string_view text) {
  switch (kind) {
    case Kind::kDuration:
    case Kind::kPositiveDuration: {
      absl::StatusOr<milliseconds> d = ParseDurationText(text);
      if (!d.ok()) return d.status();
      if (kind == Kind::kPositiveDuration && d->count() <= 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "expected a duration of at least 1ms, got \"%s\"", text));
      }
      Value v;
      v.duration = *d;
      return v;
    }
    case Kind::kPositiveInt:
    case Kind::kNonNegativeInt:
    case Kind::kPrefetch: {
      const std::int64_t min = MinInt(kind), max = MaxInt(kind);
      std::int64_t n = 0;
      if (!absl::SimpleAtoi(Absl(text), &n) || n < min || n > max) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "expected an integer from %d to %d, got \"%s\"", min, max, text));
      }
      Value v;
      v.integer = n;
      return v;
    }
    case Kind::kLogLevel: {
      absl::StatusOr<DaemonLogLevel> level = ParseLogLevel(text);
      if (!level.ok()) return level.status();
      Value v;
      v.level = *level;
      return v;
    }
    case Kind::kLogFormat: {
      absl::StatusOr<LogFormat> format = ParseLogFormat(text);
      if (!format.ok()) return format.status();
      Value v;
      v.format = *format;
      return v;
    }
    case Kind::kAddress: {
      absl::Status s = CheckAddress(text);
      if (!s.ok()) return s;
      Value v;
      v.text = std::string(text);
      return v;
    }
    case Kind::kPath: {
      // "" means "not set", as --check-config prints an unset path.
      Value v;
      v.text = std::string(text);
      return v;
    }
    case Kind::kSynchronous: {
      const std::string lower = absl::AsciiStrToLower(Absl(text));
      if (lower != "full" && lower != "normal") {
        return absl::InvalidArgumentError(absl::StrFormat(
            "expected \"full\" or \"normal\", got \"%s\"", text));
      }
      Value v;
      v.text = lower;
      return v;
    }
    case Kind::kEndpoint: {
      Value v;
      if (text.empty()) return v;  // not set
      if (absl::Status s = CheckEndpointText(text); !s.ok()) return s;
      v.text = std::string(text);
      return v;
    }
    case Kind::kHaRole: {
      Value v;
      if (text.empty()) return v;  // no fail-over pair
      absl::StatusOr<HaRole> role = ParseHaRole(text);
      if (!role.ok()) return role.status();
      v.text = std::string(text);
      return v;
    }
    case Kind::kEndpoints: {
      absl::Status s = CheckEndpointText(text);
      if (!s.ok()) return s;
      Value v;
      v.list.emplace_back(text);
      return v;
    }
    case Kind::kBool: {
      Value v;
      if (text == "true" || text == "on") {
        v.flag = true;
      } else if (text != "false" && text != "off") {
        return absl::InvalidArgumentError(absl::StrFormat(
            "expected true or false (or on or off), got \"%s\"", text));
      }
      return v;
    }
  }
  return absl::InternalError("unhandled key kind");
}

// --- TOML -----------------------------------------------------------------

std::string Where(std::string_view source, const toml::source_region& r) {
  return absl::StrFormat("%s:%d:%d", source, r.begin.line, r.begin.column);
}

std::string_view TypeName(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    default:
      return "a date/time";
  }
}

// Parses one file node for `spec`.  Errors name the key as `typed`
// ("section.key", which may be a deprecated alias of spec's key) and carry
// the node's location (the element's own line for arrays).
absl::StatusOr<Value> ParseNode(const KeySpec& spec, std::string_view typed,
                                const toml::node& node,
                                std::string_view source) {
  auto error = [&](const toml::node& at, std::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s: %s", Where(source, at.source()), typed, what));
  };
  switch (spec.kind) {
    case Kind::kEndpoints: {
      const toml::array* arr = node.as_array();
      if (arr == nullptr) {
        return error(node, absl::StrFormat("expected an array of endpoint "
                                           "strings, got %s",
                                           TypeName(node)));
      }
      std::vector<std::string> endpoints;
      for (const toml::node& el : *arr) {
        const toml::value<std::string>* s = el.as_string();
        if (s == nullptr) {
          return error(el,
                       absl::StrFormat("expected an endpoint string, got %s",
                                       TypeName(el)));
        }
        absl::Status st = CheckEndpointText(s->get());
        if (!st.ok()) return error(el, std::string(st.message()));
        endpoints.push_back(s->get());
      }
      Value v;
      v.list = std::move(endpoints);
      return v;
    }
    case Kind::kPositiveInt:
    case Kind::kNonNegativeInt:
    case Kind::kPrefetch: {
      const std::int64_t min = MinInt(spec.kind), max = MaxInt(spec.kind);
      const toml::value<std::int64_t>* i = node.as_integer();
      if (i == nullptr) {
        return error(
            node, absl::StrFormat("expected an integer from %d to %d, got %s",
                                  min, max, TypeName(node)));
      }
      if (i->get() < min || i->get() > max) {
        return error(
            node, absl::StrFormat("expected an integer from %d to %d, got %d",
                                  min, max, i->get()));
      }
      Value v;
      v.integer = i->get();
      return v;
    }
    case Kind::kBool: {
      const toml::value<bool>* b = node.as_boolean();
      if (b == nullptr) {
        return error(node, absl::StrFormat("expected true or false, got %s",
                                           TypeName(node)));
      }
      Value v;
      v.flag = b->get();
      return v;
    }
    case Kind::kDuration:
    case Kind::kPositiveDuration:
    case Kind::kLogLevel:
    case Kind::kLogFormat:
    case Kind::kAddress:
    case Kind::kPath:
    case Kind::kSynchronous:
    case Kind::kEndpoint:
    case Kind::kHaRole: {
      const toml::value<std::string>* s = node.as_string();
      if (s == nullptr) {
        std::string_view expected =
            spec.kind == Kind::kLogLevel    ? "a log level string like \"info\""
            : spec.kind == Kind::kLogFormat ? "\"text\" or \"json\""
            : spec.kind == Kind::kAddress   ? "a \"host:port\" string"
            : spec.kind == Kind::kPath      ? "a path string"
            : spec.kind == Kind::kSynchronous ? "\"full\" or \"normal\""
            : spec.kind == Kind::kEndpoint    ? "an endpoint string"
            : spec.kind == Kind::kHaRole      ? "\"primary\" or \"backup\""
                                              : "a duration string like \"5s\"";
        return error(node, absl::StrFormat("expected %s, got %s", expected,
                                           TypeName(node)));
      }
      absl::StatusOr<Value> v = ParseScalarText(spec.kind, s->get());
      if (!v.ok()) return error(node, std::string(v.status().message()));
      return v;
    }
  }
  return absl::InternalError("unhandled key kind");
}

}  // namespace

// --- Public helpers -------------------------------------------------------

absl::StatusOr<DaemonLogLevel> ParseLogLevel(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(Absl(name));
  if (lower == "trace") return DaemonLogLevel::kTrace;
  if (lower == "debug") return DaemonLogLevel::kDebug;
  if (lower == "info") return DaemonLogLevel::kInfo;
  if (lower == "warn" || lower == "warning") return DaemonLogLevel::kWarn;
  if (lower == "error") return DaemonLogLevel::kError;
  if (lower == "critical") return DaemonLogLevel::kCritical;
  if (lower == "off") return DaemonLogLevel::kOff;
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown log level \"%s\" (expected trace, debug, info, warn, error, "
      "critical or off)",
      name));
}

std::string_view LogLevelName(DaemonLogLevel level) {
  switch (level) {
    case DaemonLogLevel::kTrace:
      return "trace";
    case DaemonLogLevel::kDebug:
      return "debug";
    case DaemonLogLevel::kInfo:
      return "info";
    case DaemonLogLevel::kWarn:
      return "warn";
    case DaemonLogLevel::kError:
      return "error";
    case DaemonLogLevel::kCritical:
      return "critical";
    case DaemonLogLevel::kOff:
      return "off";
  }
  return "?";
}

absl::StatusOr<LogFormat> ParseLogFormat(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(Absl(name));
  if (lower == "text") return LogFormat::kText;
  if (lower == "json") return LogFormat::kJson;
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown log format \"%s\" (expected text or json)", name));
}

std::string_view LogFormatName(LogFormat format) {
  return format == LogFormat::kJson ? "json" : "text";
}

absl::StatusOr<milliseconds> ParseDurationText(std::string_view text) {
  absl::Duration d;
  // absl accepts a bare "0" and signed/infinite values; a config wants
  // neither sign nor infinity, and every non-zero value needs a unit.
  if (!absl::ParseDuration(Absl(text), &d) || d < absl::ZeroDuration() ||
      d == absl::InfiniteDuration() ||
      (d != absl::ZeroDuration() &&
       !absl::ascii_isalpha(static_cast<unsigned char>(text.back())))) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "expected a duration like \"250ms\", \"5s\" or \"1m\", got \"%s\"",
        text));
  }
  return milliseconds(absl::ToInt64Milliseconds(d));
}

std::string FormatDuration(milliseconds d) {
  if (d.count() == 0) return "0s";
  return absl::FormatDuration(absl::Milliseconds(d.count()));
}

absl::StatusOr<CommandLine> ParseCommandLine(
    std::span<const char* const> args) {
  CommandLine cli;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "-h" || arg == "--help") {
      cli.help = true;
      continue;
    }
    if (arg == "--version") {
      cli.version = true;
      continue;
    }
    if (CanonicalFlag(arg) == "--check-config") {
      cli.check_config = true;
      continue;
    }
    if (!arg.starts_with("--")) {
      return absl::InvalidArgumentError(
          absl::StrFormat("unexpected argument \"%s\" (see --help)", arg));
    }
    std::string_view typed = arg;
    std::optional<std::string_view> value;
    if (const std::size_t eq = arg.find('='); eq != std::string_view::npos) {
      typed = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    std::string flag = CanonicalFlag(typed);
    std::string deprecated_for;  // the new flag when `typed` is an alias
    if (const std::string_view n = NewNameOf(kFlagAliases, flag); !n.empty()) {
      flag = deprecated_for = std::string(n);
    }
    const KeySpec* spec = FindFlag(flag);
    if (spec == nullptr && flag != "--config") {
      return absl::InvalidArgumentError(
          absl::StrFormat("unknown flag %s (see --help)", typed));
    }
    if (!value.has_value()) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s needs a value (see --help)", typed));
      }
      value = args[++i];
    }
    if (flag == "--config") {
      cli.config_file = std::string(*value);
    } else if (flag == "--majordomo" || flag == "--consensus" ||
               flag == "--majordomo-curve" || flag == "--consensus-curve") {
      // Repeatable, and a comma-separated list is accepted too (ZeroMQ
      // endpoints never contain commas).
      std::vector<std::string>& out = flag == "--majordomo"   ? cli.majordomo
                                      : flag == "--consensus" ? cli.consensus
                                      : flag == "--majordomo-curve"
                                          ? cli.majordomo_curve
                                          : cli.consensus_curve;
      std::string_view rest = *value;
      while (true) {
        const std::size_t comma = rest.find(',');
        out.emplace_back(rest.substr(0, comma));
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
    } else {
      // A flag may set the same key in several brokers' tables: one
      // override per key that names it.  --max-message-size sets every
      // broker's max_message_size (consensus's own flag is
      // --consensus-max-message-size).
      for (const KeySpec& k : kKeys) {
        if (k.flag != flag &&
            !(flag == "--max-message-size" && k.key == "max_message_size")) {
          continue;
        }
        cli.overrides.push_back({KeyName(k), std::string(typed),
                                 std::string(*value), deprecated_for});
      }
    }
  }
  return cli;
}

absl::StatusOr<DaemonConfig> ParseConfigText(std::string_view text,
                                             std::string_view source_name) {
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s", Where(source_name, e.source()), e.description()));
  }
  DaemonConfig config;
  // What each key was set to and by which name (new or deprecated), so
  // that a file setting both names differently is refused.
  struct Seen {
    std::string typed;  // "section.key" as written
    std::string where;
    std::string text;  // the value as written (TOML)
    Value value;
  };
  std::vector<std::pair<const KeySpec*, Seen>> seen;
  for (auto&& [section_key, section_node] : root) {
    const std::string_view section = section_key.str();
    bool known = false;
    for (std::string_view s : kSections) known = known || s == section;
    if (!known) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: unknown table or key \"%s\" (expected [daemon], [majordomo] "
          "or [consensus])",
          Where(source_name, section_key.source()), section));
    }
    const toml::table* table = section_node.as_table();
    if (table == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: \"%s\" must be a table ([%s]), got %s",
                          Where(source_name, section_key.source()), section,
                          section, TypeName(section_node)));
    }
    for (auto&& [key, node] : *table) {
      const std::string typed = absl::StrFormat("%s.%s", section, key.str());
      const std::string_view new_name = NewNameOf(kKeyAliases, typed);
      const KeySpec* spec =
          new_name.empty()
              ? FindKey(section, key.str())
              : FindKey(section, new_name.substr(new_name.find('.') + 1));
      if (spec == nullptr) {
        std::vector<std::string_view> known_keys;
        for (const KeySpec& k : kKeys) {
          if (k.section == section) known_keys.push_back(k.key);
        }
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: unknown key \"%s.%s\" (known keys in [%s]: %s)",
            Where(source_name, key.source()), section, key.str(), section,
            absl::StrJoin(known_keys, ", ", Formatter)));
      }
      absl::StatusOr<Value> v = ParseNode(*spec, typed, node, source_name);
      if (!v.ok()) return v.status();
      const std::string where = Where(source_name, node.source());
      std::ostringstream text;
      node.visit([&text](const auto& n) { text << n; });
      for (const auto& [other_spec, other] : seen) {
        if (other_spec == spec && other.value != *v) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "%s: %s = %s conflicts with %s = %s at %s: they are the same "
              "setting (%s is the deprecated name); keep only %s",
              where, typed, text.str(), other.typed, other.text, other.where,
              new_name.empty() ? other.typed : typed, KeyName(*spec)));
        }
      }
      seen.push_back({spec, Seen{typed, where, text.str(), *v}});
      if (!new_name.empty()) {
        config.warnings.push_back(DeprecationWarning(where, typed, new_name));
      }
      spec->apply(config, *std::move(v));
      SetOrigin(config, KeyName(*spec), where);
    }
  }
  return config;
}

absl::StatusOr<DaemonConfig> LoadConfigFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--config: cannot read \"%s\"", path));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--config: error reading \"%s\"", path));
  }
  return ParseConfigText(text.str(), path);
}

absl::Status ApplyCommandLine(const CommandLine& cli, DaemonConfig& config) {
  auto endpoints = [&config](std::string_view flag,
                             const std::vector<std::string>& values,
                             std::vector<std::string>& out) -> absl::Status {
    if (values.empty()) return absl::OkStatus();
    for (const std::string& ep : values) {
      absl::Status s = CheckEndpointText(ep);
      if (!s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: %s", flag, s.message()));
      }
    }
    out = values;
    const KeySpec* spec = FindFlag(flag);
    if (spec != nullptr) SetOrigin(config, KeyName(*spec), std::string(flag));
    return absl::OkStatus();
  };
  absl::Status s =
      endpoints("--majordomo", cli.majordomo, config.majordomo.endpoints);
  if (!s.ok()) return s;
  s = endpoints("--consensus", cli.consensus, config.consensus.endpoints);
  if (!s.ok()) return s;
  s = endpoints("--majordomo-curve", cli.majordomo_curve,
                config.majordomo.curve_endpoints);
  if (!s.ok()) return s;
  s = endpoints("--consensus-curve", cli.consensus_curve,
                config.consensus.curve_endpoints);
  if (!s.ok()) return s;
  // The last value given per key under its new flag and under a deprecated
  // one: both given and different is an error.
  struct Last {
    const CommandLine::Override* by_new = nullptr;
    const CommandLine::Override* by_old = nullptr;
    Value new_value, old_value;
  };
  std::vector<std::pair<const KeySpec*, Last>> last;
  std::vector<std::string> warned;  // deprecated flags, once each
  for (const CommandLine::Override& o : cli.overrides) {
    const std::string_view key = o.key;
    const std::size_t dot = key.find('.');
    const KeySpec* spec = FindKey(key.substr(0, dot), key.substr(dot + 1));
    if (spec == nullptr) {
      return absl::InternalError(
          absl::StrFormat("no key for override %s", o.key));
    }
    absl::StatusOr<Value> v = ParseScalarText(spec->kind, o.value);
    if (!v.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: %s", o.flag, v.status().message()));
    }
    auto it = std::find_if(last.begin(), last.end(),
                           [spec](const auto& e) { return e.first == spec; });
    if (it == last.end()) it = last.emplace(last.end(), spec, Last{});
    Last& l = it->second;
    if (o.deprecated_for.empty()) {
      l.by_new = &o;
      l.new_value = *v;
    } else {
      l.by_old = &o;
      l.old_value = *v;
      std::string flag = CanonicalFlag(o.flag);
      if (std::find(warned.begin(), warned.end(), flag) == warned.end()) {
        warned.push_back(std::move(flag));
        config.warnings.push_back(
            DeprecationWarning("", o.flag, o.deprecated_for));
      }
    }
    if (l.by_new != nullptr && l.by_old != nullptr &&
        l.new_value != l.old_value) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s %s conflicts with %s %s: they are the same setting (%s is the "
          "deprecated name); give only %s",
          l.by_old->flag, l.by_old->value, l.by_new->flag, l.by_new->value,
          l.by_old->flag, l.by_old->deprecated_for));
    }
    spec->apply(config, *std::move(v));
    SetOrigin(config, o.key, o.flag);
  }
  return absl::OkStatus();
}

std::string DaemonConfig::OriginOf(std::string_view key) const {
  for (const auto& [k, where] : origins) {
    if (k == key) return where;
  }
  return std::string(key);
}

bool HasCurveEndpoints(const DaemonConfig& config) {
  return !config.majordomo.curve_endpoints.empty() ||
         !config.consensus.curve_endpoints.empty();
}

namespace {

// The [ha] table hangs together (docs/ha.md).
absl::Status ValidateHa(const DaemonConfig& config) {
  const HaSettings& ha = config.ha;
  if (!ha.role.has_value()) {
    for (const auto& [key, value] :
         {std::pair<std::string_view, const std::string&>{"ha.state_endpoint",
                                                          ha.state_endpoint},
          {"ha.peer_state_endpoint", ha.peer_state_endpoint}}) {
      if (!value.empty()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: %s is set but ha.role is not: set ha.role (or --ha-role) "
            "to \"primary\" or \"backup\" to run a fail-over pair",
            config.OriginOf(key), key));
      }
    }
    return absl::OkStatus();
  }
  for (const auto& [key, value] :
       {std::pair<std::string_view, const std::string&>{"ha.state_endpoint",
                                                        ha.state_endpoint},
        {"ha.peer_state_endpoint", ha.peer_state_endpoint}}) {
    if (value.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: ha.role is %s but %s is not set (or --%s)",
          config.OriginOf("ha.role"), HaRoleName(*ha.role), key,
          key == "ha.state_endpoint" ? "ha-state-endpoint"
                                     : "ha-peer-state-endpoint"));
    }
  }
  if (ha.state_endpoint == ha.peer_state_endpoint) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: ha.peer_state_endpoint is ha.state_endpoint (\"%s\"): it must "
        "be the other broker's",
        config.OriginOf("ha.peer_state_endpoint"), ha.state_endpoint));
  }
  if (ha.peer_expiry <= ha.heartbeat_interval) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: ha.peer_expiry (%s) must be longer than ha.heartbeat_interval "
        "(%s), or a live peer would expire between two of its heartbeats",
        config.OriginOf("ha.peer_expiry"), FormatDuration(ha.peer_expiry),
        FormatDuration(ha.heartbeat_interval)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateConfig(const DaemonConfig& config) {
  if (config.majordomo.endpoints.empty() &&
      config.consensus.endpoints.empty() && !HasCurveEndpoints(config)) {
    return absl::InvalidArgumentError(
        "no broker to run: give at least one --majordomo or --consensus "
        "endpoint (or majordomo.endpoints / consensus.endpoints in the "
        "config file)");
  }
  struct Lists {
    std::string_view key;
    const std::vector<std::string>& curve;
    const std::vector<std::string>& plain;
  };
  for (const Lists& l :
       {Lists{"majordomo.curve_endpoints", config.majordomo.curve_endpoints,
              config.majordomo.endpoints},
        Lists{"consensus.curve_endpoints", config.consensus.curve_endpoints,
              config.consensus.endpoints}}) {
    for (const std::string& ep : l.curve) {
      if (absl::Status s = CheckCurveEndpoint(ep); !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: %s", config.OriginOf(l.key), s.message()));
      }
      // (An ephemeral port, "host:*" or "host:0", differs at each bind.)
      const bool ephemeral = ep.ends_with(":*") || ep.ends_with(":0");
      if (!ephemeral &&
          std::find(l.plain.begin(), l.plain.end(), ep) != l.plain.end()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: \"%s\" is also a plaintext endpoint of the same broker",
            config.OriginOf(l.key), ep));
      }
    }
  }
  if (!config.titanic.store_path.empty() &&
      config.majordomo.endpoints.empty() &&
      config.majordomo.curve_endpoints.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: titanic.store_path: Titanic runs in front of this daemon's "
        "Majordomo broker: give majordomo.endpoints (or --majordomo) too",
        config.OriginOf("titanic.store_path")));
  }
  if (absl::Status s = ValidateHa(config); !s.ok()) return s;
  if (HasCurveEndpoints(config)) {
    if (!CurveAvailable()) {
      return absl::InvalidArgumentError(
          "CURVE endpoints are configured, but this libzmq has no CURVE "
          "support (zmq_has(\"curve\") is false)");
    }
    if (config.curve_secret_key_file.empty()) {
      return absl::InvalidArgumentError(
          "CURVE endpoints need the server's secret key: set "
          "daemon.curve_secret_key_file (or --curve-secret-key-file)");
    }
    if (config.curve_allowlist.empty()) {
      return absl::InvalidArgumentError(
          "CURVE endpoints need the clients' public keys: set "
          "daemon.curve_allowlist (or --curve-allowlist) to a file or a "
          "directory of *.pub files");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<CurveAllowlist> LoadCurveAllowlist(const DaemonConfig& config) {
  absl::StatusOr<CurveAllowlist> list =
      CurveAllowlist::Load(config.curve_allowlist);
  if (!list.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: daemon.curve_allowlist: %s",
        config.OriginOf("daemon.curve_allowlist"), list.status().message()));
  }
  return list;
}

absl::StatusOr<CurveFiles> LoadCurveFiles(const DaemonConfig& config) {
  CurveFiles files;
  const std::string where = config.OriginOf("daemon.curve_secret_key_file");
  absl::StatusOr<CurveKey> secret = ReadCurveSecretKeyFile(
      config.curve_secret_key_file, &files.secret_key_warning);
  if (!secret.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: daemon.curve_secret_key_file: %s", where,
                        secret.status().message()));
  }
  absl::StatusOr<CurveKey> pub = CurvePublicKey(*secret);
  if (!pub.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: daemon.curve_secret_key_file: %s", where, pub.status().message()));
  }
  files.secret_key = *secret;
  files.public_key = *pub;
  absl::StatusOr<CurveAllowlist> list = LoadCurveAllowlist(config);
  if (!list.ok()) return list.status();
  files.allowlist = *std::move(list);
  return files;
}

absl::StatusOr<DaemonConfig> BuildConfig(const CommandLine& cli) {
  DaemonConfig config;
  if (cli.config_file.has_value()) {
    absl::StatusOr<DaemonConfig> loaded = LoadConfigFile(*cli.config_file);
    if (!loaded.ok()) return loaded.status();
    config = *std::move(loaded);
  }
  absl::Status s = ApplyCommandLine(cli, config);
  if (!s.ok()) return s;
  s = ValidateConfig(config);
  if (!s.ok()) return s;
  // Key files are read now, so that a bad one is a config error (exit 2)
  // rather than a failure after start.
  if (!config.curve_secret_key_file.empty() &&
      !config.curve_allowlist.empty()) {
    absl::StatusOr<CurveFiles> files = LoadCurveFiles(config);
    if (!files.ok()) return files.status();
  } else if (!config.curve_allowlist.empty()) {
    absl::StatusOr<CurveAllowlist> list = LoadCurveAllowlist(config);
    if (!list.ok()) return list.status();
  } else if (!config.curve_secret_key_file.empty()) {
    return absl::InvalidArgumentError(
        "daemon.curve_secret_key_file is set but daemon.curve_allowlist is "
        "not: CURVE needs both (see docs/security.md)");
  }
  return config;
}

std::vector<std::pair<std::string, std::string>> ConfigValues(
    const DaemonConfig& config) {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(kKeys.size());
  for (const KeySpec& k : kKeys) out.emplace_back(KeyName(k), k.print(config));
  return out;
}

std::string FormatConfig(const DaemonConfig& config) {
  std::string out;
  std::string_view section;
  for (const KeySpec& k : kKeys) {
    if (k.section != section) {
      if (!section.empty()) out += "\n";
      section = k.section;
      out += absl::StrFormat("[%s]\n", section);
    }
    out += absl::StrFormat("%s = %s\n", k.key, k.print(config));
  }
  return out;
}

std::string UsageText() {
  // Every default shown comes from where the daemon or a broker takes it.
  const DaemonConfig d;
  const MajordomoBroker::Options& m = kMajordomoDefaults;
  const ConsensusBroker::Options& c = kConsensusDefaults;
  const TitanicOptions& t = TitanicDefaults();
  auto dur = [](milliseconds v) { return FormatDuration(v); };
  return absl::StrFormat(
      R"(Usage: zb-broker [FLAGS]

Runs one or more zbrokers brokers in one process.  At least one broker
endpoint is required.  Flags override the config file.  Defaults are in
[brackets].

Brokers (each flag repeatable; given flags replace the file's list):
  --majordomo ENDPOINT       Majordomo (MDP/0.1 + MMI) broker, e.g. tcp://*:5555
  --consensus ENDPOINT       consensus (CCp100) broker, e.g. tcp://*:5556
  --majordomo-curve ENDPOINT Majordomo endpoint for CURVE clients only
  --consensus-curve ENDPOINT consensus endpoint for CURVE clients only

CURVE (needed by --*-curve endpoints; see docs/security.md):
  --curve-secret-key-file FILE  the brokers' secret key (Z85; keep it 0600)
  --curve-allowlist PATH        client public keys: a file, or a directory of
                                *.pub files; re-read on SIGHUP

Daemon:
  --config FILE              TOML config file (see docs/daemon.md)
  --check-config             check the flags and the file, print the
                             configuration they give (TOML), exit 0 if valid
                             and 2 if not; binds nothing
  --log-level LEVEL          trace|debug|info|warn|error|critical|off [%s]
  --log-format FORMAT        text|json (one JSON object per line) [%s]
  --stats-interval DURATION  period of the counters log line, 0s = off [%s]
  --metrics HOST:PORT        HTTP server for /metrics (Prometheus), /healthz
                             and /readyz, e.g. 127.0.0.1:5580 [off]
  --grace DURATION           drain period on SIGTERM/SIGINT [%s]
  --metrics-max-services N   per-service series per broker; the rest are
                             summed under service="_other" [%d]
  --yield-before-sleep BOOL  the brokers' reactors yield the CPU once before
                             sleeping after work, while that finds batches;
                             for in-process peers on the broker's core
                             (docs/reactor.md); true|false [%s]
  --batch-scheduling BOOL    the brokers' threads run as SCHED_BATCH: woken
                             by a message, a broker does not preempt the
                             peers on its core but takes their messages
                             together (docs/reactor.md); true|false [%s]

Majordomo tuning:
  --heartbeat-interval DURATION   heartbeat period towards workers [%s]
  --heartbeat-liveness N          heartbeats missed before a worker is
                                  dropped [%d]
  --max-queue-per-service N       most requests queued per service,
                                  0 = no bound [%d]
  --queue-expiry DURATION         longest wait in a queue, 0s = no limit [%s]
  --max-redispatch N              times a request whose worker died is
                                  resent [%d]
  --reply-timeout DURATION        longest a request may stay at a worker, then
                                  the worker is disconnected, 0s = no
                                  limit [%s]
  --max-services N                most services known at once,
                                  0 = no bound [%d]
  --max-workers N                 most workers registered at once,
                                  0 = no bound [%d]
  --max-requests-per-client N     most requests one client may have queued or
                                  at a worker, 0 = no bound [%d]
  --max-message-size BYTES        largest frame a peer may send (libzmq checks
                                  each frame); bigger: the peer is
                                  disconnected; 0 = no limit [%d]
  --worker-prefetch N             requests outstanding per worker, 1-1000 [%d]
                                  (>1 extends RFC 7; see docs/majordomo.md)

Consensus tuning:
  --request-timeout DURATION      a request fails when not done by then [%s]
  --client-idle-timeout DURATION  idle client records are forgotten
                                  after [%s]
  --consensus-max-heartbeat-interval DURATION
                                  longest heartbeat interval a READY may
                                  announce; beyond: refused [%s]
  --consensus-max-heartbeat-liveness N
                                  most silent heartbeat intervals a READY
                                  may announce (CCp100's "retries");
                                  beyond: refused [%d]
  --consensus-max-workers N       most workers registered at once,
                                  0 = no bound [%d]
  --consensus-max-services N      most services known at once,
                                  0 = no bound [%d]
  --consensus-max-clients N       most client records; a new one evicts the
                                  least recently used idle one,
                                  0 = no bound [%d]
  --consensus-max-requests-per-client N
                                  most requests open per client id; beyond:
                                  zb:busy, 0 = no bound [%d]
  --consensus-max-message-size BYTES
                                  largest frame a peer may send; bigger: the
                                  peer is disconnected, 0 = no limit [%d]

Titanic (RFC 9, in front of the Majordomo broker; docs/titanic.md):
  --titanic-store-path FILE       the SQLite file of requests and replies;
                                  set = Titanic runs [off]
  --titanic-synchronous full|normal
                                  fsync policy: full = every request and
                                  reply fsynced before it is acknowledged,
                                  normal = survives kill -9, not power
                                  loss [%s]
  --titanic-max-requests N        most requests stored (pending + answered,
                                  not closed) [%d]
  --titanic-max-request-bytes N   largest request: service + body [%d]
  --titanic-request-timeout DURATION
                                  one dispatch's wait for its reply [%s]
  --titanic-retry-delay DURATION  wait before a failed dispatch is sent
                                  again [%s]
  --titanic-max-in-flight N       most requests dispatched at once [%d]
  --titanic-request-expiry DURATION
                                  a request is deleted this long after it
                                  arrived, closed or not, 0s = never [%s]

Fail-over pair (docs/ha.md; off without --ha-role):
  --ha-role ROLE                  primary|backup: which half of the pair
                                  this broker is
  --ha-state-endpoint ENDPOINT    where this broker publishes its state
  --ha-peer-state-endpoint ENDPOINT
                                  the other broker's --ha-state-endpoint
  --ha-heartbeat-interval DURATION
                                  how often each side publishes its
                                  state [%s]
  --ha-peer-expiry DURATION       peer silence after which it counts as gone
                                  (above the heartbeat interval) [%s]

Deprecated names (each still works and logs a warning naming the new flag;
giving both names with different values is an error; docs/glossary.md):
  --queue-limit N                 = --max-queue-per-service [%d]
  --request-deadline DURATION     = --request-timeout [%s]
  --consensus-timeout DURATION    = --request-timeout
  --client-expiry DURATION        = --client-idle-timeout [%s]
  --consensus-client-idle DURATION
                                  = --client-idle-timeout
  --consensus-max-heartbeat-retries N
                                  = --consensus-max-heartbeat-liveness [%d]

  -h, --help                 this text
  --version                  print the version

Durations take a unit: 250ms, 5s, 1m30s.  A value may also be given as
--flag=value.

Signals: SIGTERM or SIGINT drains and stops; SIGHUP reads the config file
again and applies its log_level and log_format (other keys need a restart).

Exit codes: 0 after a clean stop (SIGTERM/SIGINT) or a valid --check-config,
1 when the daemon fails at run time (e.g. an endpoint cannot be bound), 2 for
a usage or config error.
)",
      LogLevelName(d.log_level), LogFormatName(d.log_format),
      dur(d.stats_interval), dur(d.grace), d.metrics_max_services,
      d.yield_before_sleep ? "true" : "false",
      d.batch_scheduling ? "true" : "false", dur(m.heartbeat_interval),
      m.heartbeat_liveness, m.max_queue_per_service, dur(m.queue_expiry),
      m.max_redispatch, dur(m.reply_timeout), m.max_services, m.max_workers,
      m.max_requests_per_client, m.max_message_size, m.worker_prefetch,
      dur(c.request_timeout), dur(c.client_idle_timeout),
      dur(c.max_heartbeat_interval), c.max_heartbeat_liveness, c.max_workers,
      c.max_services, c.max_clients, c.max_requests_per_client,
      c.max_message_size, SynchronousName(t.synchronous), t.max_requests,
      t.max_request_bytes, dur(t.request_timeout), dur(t.retry_delay),
      t.max_in_flight, dur(t.request_expiry), dur(d.ha.heartbeat_interval),
      dur(d.ha.peer_expiry), m.max_queue_per_service, dur(c.request_timeout),
      dur(c.client_idle_timeout), c.max_heartbeat_liveness);
}

}  // namespace zb
