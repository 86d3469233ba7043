// Copyright 2026 The zbrokers Authors.
//
// zb: the zbrokers command-line client (docs/cli.md).
//
//   zb request tcp://127.0.0.1:5555 echo hello          # Majordomo
//   zb request --protocol ccp tcp://127.0.0.1:5556 echo hello
//   zb mmi tcp://127.0.0.1:5555 echo
//   zb ping --protocol ccp tcp://127.0.0.1:5556
//   zb worker tcp://127.0.0.1:5555 echo --echo
//   zb keygen --out alice
//
// It runs on the project's own libraries: MdpClient and
// BlockingConsensusClient for requests, MdpWorker and ConsensusWorker on a
// Reactor for `zb worker`, and zbrokers/security/curve.h for keys.  Exit
// codes are in cli.h.

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "brokers/common/json.h"
#include "tools/zb/cli.h"
#include "zbrokers/consensus/blocking_client.h"
#include "zbrokers/consensus/worker.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/majordomo/client.h"
#include "zbrokers/majordomo/codec.h"
#include "zbrokers/majordomo/worker.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/security/curve.h"

#ifndef ZB_VERSION
#define ZB_VERSION "dev"
#endif

namespace zb::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

int Fail(int code, std::string_view message) {
  std::fprintf(stderr, "zb: %.*s\n", static_cast<int>(message.size()),
               message.data());
  return code;
}

std::string_view ProtocolName(Protocol p) {
  return p == Protocol::kMdp ? "mdp" : "ccp";
}

double MillisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

// The request frames, with "-" replaced by all of stdin.
absl::StatusOr<Frames> RequestFrames(const Options& o) {
  Frames frames;
  for (const std::string& f : o.frames) {
    if (f != "-") {
      frames.push_back(Frame(f));
      continue;
    }
    std::string in((std::istreambuf_iterator<char>(std::cin)),
                   std::istreambuf_iterator<char>());
    if (std::cin.bad()) {
      return absl::InvalidArgumentError("cannot read stdin");
    }
    frames.push_back(Frame(in));
  }
  if (frames.empty()) frames.emplace_back();
  return frames;
}

void PrintFramesText(std::span<const zmq::message_t> frames) {
  for (const zmq::message_t& f : frames) {
    std::fwrite(f.data(), 1, f.size(), stdout);
    std::fputc('\n', stdout);
  }
}

std::string FramesJson(std::span<const zmq::message_t> frames) {
  std::vector<std::string> parts;
  parts.reserve(frames.size());
  for (const zmq::message_t& f : frames) parts.push_back(JsonFrame(View(f)));
  return "[" + absl::StrJoin(parts, ", ") + "]";
}

// One JSON object on stdout.
void PrintJson(const std::vector<std::pair<std::string, std::string>>& kv) {
  std::vector<std::string> parts;
  parts.reserve(kv.size());
  for (const auto& [k, v] : kv) parts.push_back(JsonQuote(k) + ": " + v);
  std::printf("{%s}\n", absl::StrJoin(parts, ", ").c_str());
}

std::string Number(double v) { return absl::StrFormat("%.3f", v); }
std::string Bool(bool v) { return v ? "true" : "false"; }

absl::StatusOr<std::optional<CurveClientKeys>> LoadKeys(const Options& o) {
  if (!o.curve()) return std::optional<CurveClientKeys>();
  if (!CurveAvailable()) {
    return absl::FailedPreconditionError(
        "this libzmq has no CURVE support (zmq_has(\"curve\") is false)");
  }
  absl::StatusOr<CurveKey> server =
      o.curve_server_key_file.empty()
          ? ParseZ85Key(o.curve_server_key)
          : ReadCurveKeyFile(o.curve_server_key_file);
  if (!server.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s",
        o.curve_server_key_file.empty() ? "--curve-server-key"
                                        : "--curve-server-key-file",
        Msg(server.status())));
  }
  std::string warning;
  absl::StatusOr<CurveKey> secret =
      ReadCurveSecretKeyFile(o.curve_secret_key_file, &warning);
  if (!secret.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--curve-secret-key-file: %s", Msg(secret.status())));
  }
  if (!warning.empty()) Fail(0, "warning: " + warning);
  absl::StatusOr<CurveClientKeys> keys = MakeCurveClientKeys(*server, *secret);
  if (!keys.ok()) return keys.status();
  return std::optional<CurveClientKeys>(*keys);
}

int ExitFor(const absl::Status& s) {
  if (absl::IsDeadlineExceeded(s)) return kExitTimeout;
  if (absl::IsInvalidArgument(s)) return kExitUsage;
  return kExitError;
}

std::string TimeoutText(const Options& o) {
  return absl::StrFormat(
      "no answer from %s within %dms x %d attempt(s) (is the broker up? a "
      "refused CURVE handshake looks the same: check the broker's log)",
      o.endpoint, o.timeout.count(), o.retries + 1);
}

// --- request / mmi / ping over MDP ------------------------------------------

// `failovers` receives how often the client moved to another broker of
// an ENDPOINT list.
absl::StatusOr<Frames> MdpCall(const Options& o,
                               const std::optional<CurveClientKeys>& keys,
                               zmq::context_t& ctx, std::string_view service,
                               Frames body, std::uint64_t& failovers) {
  MdpClient::Options mo;
  mo.timeout = o.timeout;
  mo.retries = o.retries;
  mo.curve = keys;
  mo.endpoint_policy = o.endpoint_policy;
  absl::StatusOr<std::unique_ptr<MdpClient>> client =
      MdpClient::Create(o.endpoint, mo, &ctx);
  if (!client.ok()) return client.status();
  absl::StatusOr<Frames> reply = (*client)->Request(service, std::move(body));
  failovers = (*client)->failovers();
  return reply;
}

int MdpRequest(const Options& o, const std::optional<CurveClientKeys>& keys,
               zmq::context_t& ctx) {
  absl::StatusOr<Frames> body = RequestFrames(o);
  if (!body.ok()) return Fail(kExitUsage, Msg(body.status()));
  std::uint64_t failovers = 0;
  const Clock::time_point start = Clock::now();
  absl::StatusOr<Frames> reply =
      MdpCall(o, keys, ctx, o.service, *std::move(body), failovers);
  const double ms = MillisSince(start);
  if (!reply.ok()) {
    const bool timeout = absl::IsDeadlineExceeded(reply.status());
    if (o.json) {
      PrintJson({{"ok", "false"},
                 {"outcome", JsonQuote(timeout ? "timeout" : "error")},
                 {"protocol", "\"mdp\""},
                 {"service", JsonFrame(o.service)},
                 {"reason", JsonQuote(Msg(reply.status()))},
                 {"failovers", absl::StrFormat("%d", failovers)},
                 {"elapsed_ms", Number(ms)}});
    }
    return Fail(ExitFor(reply.status()),
                timeout ? TimeoutText(o) : Msg(reply.status()));
  }
  if (o.json) {
    PrintJson({{"ok", "true"},
               {"outcome", "\"success\""},
               {"protocol", "\"mdp\""},
               {"service", JsonFrame(o.service)},
               {"frames", FramesJson(*reply)},
               {"failovers", absl::StrFormat("%d", failovers)},
               {"elapsed_ms", Number(ms)}});
  } else {
    PrintFramesText(*reply);
  }
  return kExitOk;
}

int MdpMmi(const Options& o, const std::optional<CurveClientKeys>& keys,
           zmq::context_t& ctx, bool ping) {
  const std::string asked = ping ? "mmi.service" : o.service;
  std::uint64_t failovers = 0;
  const Clock::time_point start = Clock::now();
  absl::StatusOr<Frames> reply =
      MdpCall(o, keys, ctx, mdp::kMmiService, MakeFrames({asked}), failovers);
  const double ms = MillisSince(start);
  if (!reply.ok()) {
    if (o.json) {
      PrintJson({{"ok", "false"},
                 {"outcome", JsonQuote(absl::IsDeadlineExceeded(reply.status())
                                           ? "timeout"
                                           : "error")},
                 {"protocol", "\"mdp\""},
                 {"reason", JsonQuote(Msg(reply.status()))},
                 {"elapsed_ms", Number(ms)}});
    }
    return Fail(ExitFor(reply.status()),
                absl::IsDeadlineExceeded(reply.status())
                    ? TimeoutText(o)
                    : std::string(Msg(reply.status())));
  }
  const std::string code =
      reply->empty() ? std::string() : std::string(View(reply->front()));
  // A ping needs an answer, any answer; mmi needs "200".
  const bool ok = ping ? !code.empty() : code == mdp::kMmiFound;
  if (o.json) {
    std::vector<std::pair<std::string, std::string>> kv = {
        {"ok", Bool(ok)}, {"protocol", "\"mdp\""}};
    if (!ping) kv.emplace_back("service", JsonFrame(o.service));
    kv.emplace_back("code", JsonFrame(code));
    kv.emplace_back("elapsed_ms", Number(ms));
    PrintJson(kv);
  } else if (ping) {
    std::printf("answer from %s in %.3f ms (MMI %s)\n", o.endpoint.c_str(), ms,
                code.c_str());
  } else {
    std::printf("%s\n", code.c_str());
  }
  return ok ? kExitOk : kExitFailed;
}

// --- request / ping over CCp100 ---------------------------------------------

std::string_view FailedByName(ConsensusClient::FailedBy f) {
  switch (f) {
    case ConsensusClient::FailedBy::kWorker:
      return "worker";
    case ConsensusClient::FailedBy::kBroker:
      return "broker";
    case ConsensusClient::FailedBy::kClient:
      return "client";
    case ConsensusClient::FailedBy::kNone:
      break;
  }
  return "none";
}

// The consensus client of `zb request` and `zb ping`, from the options
// both take.
absl::StatusOr<std::unique_ptr<BlockingConsensusClient>> MakeCcpClient(
    const Options& o, const std::optional<CurveClientKeys>& keys,
    zmq::context_t& ctx) {
  ConsensusClient::Options co;
  co.curve = keys;
  co.endpoint_policy = o.endpoint_policy;
  return BlockingConsensusClient::Create(ctx, o.endpoint, co);
}

int CcpRequest(const Options& o, const std::optional<CurveClientKeys>& keys,
               zmq::context_t& ctx) {
  absl::StatusOr<Frames> body = RequestFrames(o);
  if (!body.ok()) return Fail(kExitUsage, Msg(body.status()));
  absl::StatusOr<std::unique_ptr<BlockingConsensusClient>> made =
      MakeCcpClient(o, keys, ctx);
  if (!made.ok()) return Fail(kExitUsage, Msg(made.status()));
  BlockingConsensusClient& client = **made;
  const Clock::time_point start = Clock::now();
  ConsensusClient::Result r =
      client.Request(o.service, *std::move(body),
                     {.timeout = o.timeout, .retries = o.retries});
  const double ms = MillisSince(start);
  const std::string_view outcome =
      r.ok()                                            ? "success"
      : r.outcome == ConsensusClient::Outcome::kTimeout ? "timeout"
                                                        : "failure";
  if (o.json) {
    std::vector<std::pair<std::string, std::string>> kv = {
        {"ok", Bool(r.ok())},
        {"outcome", JsonQuote(outcome)},
        {"protocol", "\"ccp\""},
        {"service", JsonFrame(o.service)}};
    if (r.outcome == ConsensusClient::Outcome::kFailure) {
      kv.emplace_back("failed_by", JsonQuote(FailedByName(r.failed_by)));
      kv.emplace_back("reason", JsonFrame(r.reason));
    }
    kv.emplace_back("frames", FramesJson(r.payload));
    kv.emplace_back("attempts", absl::StrFormat("%d", r.attempts));
    kv.emplace_back("failovers",
                    absl::StrFormat("%d", client.stats().failovers));
    kv.emplace_back("elapsed_ms", Number(ms));
    PrintJson(kv);
  }
  if (r.ok()) {
    if (!o.json) PrintFramesText(r.payload);
    return kExitOk;
  }
  if (r.outcome == ConsensusClient::Outcome::kTimeout) {
    return Fail(kExitTimeout, TimeoutText(o));
  }
  std::string why = r.reason;
  if (r.failed_by == ConsensusClient::FailedBy::kBroker &&
      r.payload.size() >= 2) {
    why += ": " + std::string(View(r.payload[1]));
  } else if (r.failed_by == ConsensusClient::FailedBy::kWorker) {
    why = absl::StrJoin(FramesToStrings(r.payload), " ");
  }
  return Fail(kExitFailed, absl::StrFormat("request failed (by the %s): %s",
                                           FailedByName(r.failed_by), why));
}

int CcpPing(const Options& o, const std::optional<CurveClientKeys>& keys,
            zmq::context_t& ctx) {
  absl::StatusOr<std::unique_ptr<BlockingConsensusClient>> made =
      MakeCcpClient(o, keys, ctx);
  if (!made.ok()) return Fail(kExitUsage, Msg(made.status()));
  BlockingConsensusClient& client = **made;
  const Clock::time_point start = Clock::now();
  bool ok = false;
  int attempts = 0;
  while (!ok && attempts <= o.retries) {
    ++attempts;
    ok = client.Ping(o.timeout);
  }
  const double ms = MillisSince(start);
  if (o.json) {
    PrintJson({{"ok", Bool(ok)},
               {"outcome", ok ? "\"success\"" : "\"timeout\""},
               {"protocol", "\"ccp\""},
               {"attempts", absl::StrFormat("%d", attempts)},
               {"elapsed_ms", Number(ms)}});
  } else if (ok) {
    std::printf("PING answered by %s in %.3f ms\n", o.endpoint.c_str(), ms);
  }
  return ok ? kExitOk : Fail(kExitTimeout, TimeoutText(o));
}

// --- worker ------------------------------------------------------------------

int Worker(const Options& o, const std::optional<CurveClientKeys>& keys,
           zmq::context_t& ctx) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  const int sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd < 0) return Fail(kExitError, "signalfd failed");

  Reactor reactor;
  std::uint64_t served = 0;
  int signal_number = 0;
  std::unique_ptr<ConsensusWorker> ccp;
  std::unique_ptr<MdpWorker> mdp;
  if (o.protocol == Protocol::kCcp) {
    ConsensusWorker::Options wo;
    if (o.heartbeat_interval) wo.heartbeat_interval = *o.heartbeat_interval;
    wo.curve = keys;
    absl::StatusOr<std::unique_ptr<ConsensusWorker>> w =
        ConsensusWorker::Create(
            reactor, ctx, o.endpoint, o.service,
            [&served](std::span<zmq::message_t> payload,
                      ConsensusWorker::Responder responder) {
              ++served;
              responder.Succeed(payload);
            },
            wo);
    if (!w.ok()) {
      close(sfd);
      return Fail(kExitUsage, Msg(w.status()));
    }
    ccp = *std::move(w);
  } else {
    MdpWorker::Options wo;
    if (o.heartbeat_interval) wo.heartbeat_interval = *o.heartbeat_interval;
    wo.curve = keys;
    absl::StatusOr<std::unique_ptr<MdpWorker>> w = MdpWorker::Create(
        reactor, ctx, o.endpoint, o.service,
        [&served](Frames body, MdpWorker::Replier replier) {
          ++served;
          replier.Reply(std::move(body));
        },
        wo);
    if (!w.ok()) {
      close(sfd);
      return Fail(ExitFor(w.status()), Msg(w.status()));
    }
    mdp = *std::move(w);
  }
  absl::StatusOr<Reactor::SocketWatch> signal_watch = reactor.AddFd(sfd, [&] {
    signalfd_siginfo info;
    while (read(sfd, &info, sizeof(info)) == sizeof(info)) {
      signal_number = static_cast<int>(info.ssi_signo);
    }
    reactor.Stop();
  });
  if (!signal_watch.ok()) {
    close(sfd);
    return Fail(kExitError, Msg(signal_watch.status()));
  }
  std::fprintf(stderr,
               "zb worker: serving \"%s\" (%s) at %s%s; SIGINT or SIGTERM "
               "stops\n",
               o.service.c_str(), std::string(ProtocolName(o.protocol)).c_str(),
               o.endpoint.c_str(), keys ? " with CURVE" : "");
  std::fflush(stderr);
  const absl::Status run = reactor.Run();
  signal_watch->Reset();
  close(sfd);
  // DISCONNECT to the broker (the consensus worker lingers for it).
  if (ccp) ccp->Shutdown();
  if (mdp) mdp->Shutdown();
  ccp.reset();
  mdp.reset();
  if (!run.ok()) return Fail(kExitError, Msg(run));
  if (o.json) {
    PrintJson({{"ok", "true"},
               {"protocol", JsonQuote(ProtocolName(o.protocol))},
               {"service", JsonFrame(o.service)},
               {"requests", absl::StrFormat("%d", served)},
               {"signal",
                JsonQuote(signal_number == SIGINT ? "SIGINT" : "SIGTERM")}});
  }
  std::fprintf(stderr, "zb worker: stopped (%s) after %llu request(s)\n",
               signal_number == SIGINT ? "SIGINT" : "SIGTERM",
               static_cast<unsigned long long>(served));
  return kExitOk;
}

// --- keygen ------------------------------------------------------------------

int Keygen(const Options& o) {
  absl::StatusOr<WrittenKeyPair> w = WriteCurveKeyPairFiles(o.out, o.force);
  if (!w.ok()) {
    return Fail(kExitError,
                absl::StrFormat("keygen: %s%s", Msg(w.status()),
                                o.force ? "" : " (--force overwrites)"));
  }
  const std::string pub = Z85(w->public_key);
  if (o.json) {
    PrintJson({{"public_key", JsonQuote(pub)},
               {"public_key_file", JsonQuote(w->public_key_file)},
               {"secret_key_file", JsonQuote(w->secret_key_file)}});
  } else {
    std::printf("%s\n", pub.c_str());
    std::fprintf(stderr, "zb keygen: wrote %s and %s (mode 0600)\n",
                 w->public_key_file.c_str(), w->secret_key_file.c_str());
  }
  return kExitOk;
}

int Run(int argc, char** argv) {
  absl::StatusOr<Options> parsed = Parse(std::span<const char* const>(
      argv + 1, static_cast<std::size_t>(argc > 0 ? argc - 1 : 0)));
  if (!parsed.ok()) return Fail(kExitUsage, Msg(parsed.status()));
  const Options& o = *parsed;
  if (o.help) {
    std::fputs(Usage().c_str(), stdout);
    return kExitOk;
  }
  if (o.version) {
    std::printf("zb %s\n", ZB_VERSION);
    return kExitOk;
  }
  if (o.command == Command::kKeygen) return Keygen(o);
  absl::StatusOr<std::optional<CurveClientKeys>> keys = LoadKeys(o);
  if (!keys.ok()) {
    return Fail(
        absl::IsFailedPrecondition(keys.status()) ? kExitError : kExitUsage,
        Msg(keys.status()));
  }
  if (o.command == Command::kWorker) {
    // Before the context starts its I/O thread, so that every thread
    // inherits the mask and the worker's signalfd sees the signals.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
  }
  zmq::context_t ctx(1);
  switch (o.command) {
    case Command::kRequest:
      return o.protocol == Protocol::kMdp ? MdpRequest(o, *keys, ctx)
                                          : CcpRequest(o, *keys, ctx);
    case Command::kMmi:
      return MdpMmi(o, *keys, ctx, /*ping=*/false);
    case Command::kPing:
      return o.protocol == Protocol::kMdp ? MdpMmi(o, *keys, ctx, true)
                                          : CcpPing(o, *keys, ctx);
    case Command::kWorker:
      return Worker(o, *keys, ctx);
    case Command::kKeygen:
      break;
  }
  return kExitError;
}

}  // namespace
}  // namespace zb::cli

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  return zb::cli::Run(argc, argv);
}
