// Copyright 2026 The zbrokers Authors.
//
// curve_bench: what CURVE costs, plaintext against CURVE in the same run.
//
// One process, tcp loopback: a Majordomo and a consensus broker, each
// listening on a plaintext and a CURVE endpoint of the same ROUTER, with the
// ZAP handler of zb-broker's set-up (zbrokers/security/zap_handler.h) on its
// own thread.  Per protocol, a worker on each endpoint serves its own
// service ("plain" / "curve"), so a plaintext request is plaintext on both
// hops (client -> broker -> worker) and a CURVE one is encrypted on both.
//
//   curve_bench [--rounds 6] [--rt 2000] [--tput 20000] [--window 64]
//               [--sizes 64,16384] [--handshakes 50]
//
//   round trip  one request at a time: ConsensusClient::call() and
//               MdpClient::Request(); the median of --rt trips per round
//   throughput  --window requests outstanding (ConsensusClient::request()
//               and MdpAsyncClient on a reactor) until --tput are answered;
//               requests per second
//   handshake   a new client socket: connect, handshake, first answer (a
//               CCp100 PING); the median of --handshakes per round
//
// Rounds interleave plaintext and CURVE (A B, then B A, ...) so that drift
// on a busy machine hits both alike.  Printed: the median over rounds of
// each side, the ratio of the medians (CURVE / plaintext: > 1 is slower for
// latency, < 1 fewer requests/s for throughput), and the range of the
// per-round ratios.  Unknown flags are ignored (scripts/bench passes
// Google Benchmark flags to every *_bench).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "bench/flags.h"
#include "zbrokers/consensus/broker.h"
#include "zbrokers/consensus/client.h"
#include "zbrokers/consensus/worker.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/majordomo/broker.h"
#include "zbrokers/majordomo/client.h"
#include "zbrokers/majordomo/worker.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/reactor/reactor_thread.h"
#include "zbrokers/security/curve.h"
#include "zbrokers/security/zap_handler.h"

namespace zb {
namespace {

using Clock = std::chrono::steady_clock;
using bench::IntFlag;
using bench::ListFlag;
using bench::Median;
using std::chrono::milliseconds;

double Micros(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

void Die(const char* what, const absl::Status& s) {
  std::fprintf(stderr, "curve_bench: %s: %s\n", what, s.ToString().c_str());
  std::exit(1);
}

CurveKeyPair NewPair() {
  absl::StatusOr<CurveKeyPair> p = GenerateCurveKeyPair();
  if (!p.ok()) Die("keypair", p.status());
  return *p;
}

// Brokers, ZAP handler and workers, each on their own thread.
struct Rig {
  zmq::context_t ctx{1};
  ReactorThread auth_thread;
  ReactorThread broker_thread;
  ReactorThread worker_thread;
  std::unique_ptr<ZapHandler> zap;
  std::unique_ptr<MajordomoBroker> mdp;
  std::unique_ptr<ConsensusBroker> ccp;
  std::vector<std::unique_ptr<ConsensusWorker>> ccp_workers;
  std::vector<std::unique_ptr<MdpWorker>> mdp_workers;
  std::string mdp_plain, mdp_curve, ccp_plain, ccp_curve;
  CurveKeyPair server = NewPair();
  CurveKeyPair client = NewPair();
  CurveKeyPair worker = NewPair();
  CurveClientKeys client_keys;

  Rig() {
    absl::StatusOr<CurveAllowlist> allow = CurveAllowlist::Parse(
        Z85(client.public_key) + "\n" + Z85(worker.public_key) + "\n", "rig");
    if (!allow.ok()) Die("allowlist", allow.status());
    auth_thread.Invoke([&](Reactor& r) {
      absl::StatusOr<std::unique_ptr<ZapHandler>> z =
          ZapHandler::Create(r, ctx);
      if (!z.ok()) Die("zap", z.status());
      zap = *std::move(z);
      zap->set_allowlist(std::make_shared<const CurveAllowlist>(*allow));
    });
    broker_thread.Invoke([&](Reactor& r) {
      absl::StatusOr<std::unique_ptr<MajordomoBroker>> created =
          MajordomoBroker::Create(r, ctx, MajordomoBroker::Options{});
      if (!created.ok()) Die("majordomo", created.status());
      mdp = *std::move(created);
      absl::StatusOr<std::unique_ptr<ConsensusBroker>> made_ccp =
          ConsensusBroker::Create(r, ctx, {});
      if (!made_ccp.ok()) Die("consensus broker", made_ccp.status());
      ccp = *std::move(made_ccp);
      ccp->set_log_hook([](LogLevel, std::string_view) {});
      auto bind = [&](auto& broker, const char* domain, std::string& plain,
                      std::string& curve) {
        if (absl::Status s = broker.Bind("tcp://127.0.0.1:*"); !s.ok()) {
          Die("bind", s);
        }
        const ListenerSecurity sec{.curve_secret_key = server.secret_key,
                                   .zap_domain = domain};
        if (absl::Status s = broker.Bind("tcp://127.0.0.1:*", sec); !s.ok()) {
          Die("bind", s);
        }
        plain = broker.endpoints()[0];
        curve = broker.endpoints()[1];
      };
      bind(*mdp, "majordomo", mdp_plain, mdp_curve);
      bind(*ccp, "consensus", ccp_plain, ccp_curve);
    });
    absl::StatusOr<CurveClientKeys> ck =
        MakeCurveClientKeys(server.public_key, client.secret_key);
    absl::StatusOr<CurveClientKeys> wk =
        MakeCurveClientKeys(server.public_key, worker.secret_key);
    if (!ck.ok() || !wk.ok()) Die("keys", ck.status());
    client_keys = *ck;
    worker_thread.Invoke([&](Reactor& r) {
      for (bool curve : {false, true}) {
        ConsensusWorker::Options co;
        if (curve) co.curve = *wk;
        absl::StatusOr<std::unique_ptr<ConsensusWorker>> cw =
            ConsensusWorker::Create(
                r, ctx, curve ? ccp_curve : ccp_plain,
                curve ? "curve" : "plain",
                [](std::span<zmq::message_t> payload,
                   ConsensusWorker::Responder responder) {
                  responder.Succeed(payload);
                },
                co);
        if (!cw.ok()) Die("worker", cw.status());
        ccp_workers.push_back(*std::move(cw));
        MdpWorker::Options mo;
        if (curve) mo.curve = *wk;
        absl::StatusOr<std::unique_ptr<MdpWorker>> mw = MdpWorker::Create(
            r, ctx, curve ? mdp_curve : mdp_plain, curve ? "curve" : "plain",
            [](Frames body, MdpWorker::Replier replier) {
              replier.Reply(std::move(body));
            },
            mo);
        if (!mw.ok()) Die("worker", mw.status());
        mdp_workers.push_back(*std::move(mw));
      }
    });
    // Every worker registered before measuring.
    for (int i = 0; i < 1000; ++i) {
      const bool ready = broker_thread.Invoke([&](Reactor&) {
        const MajordomoBroker::Stats s = mdp->stats();
        auto has = [&](const char* svc) {
          auto it = s.services.find(svc);
          return it != s.services.end() && it->second.workers == 1;
        };
        return ccp->worker_count("plain") == 1 &&
               ccp->worker_count("curve") == 1 && has("plain") && has("curve");
      });
      if (ready) return;
      std::this_thread::sleep_for(milliseconds(10));
    }
    std::fprintf(stderr, "curve_bench: workers did not register\n");
    std::exit(1);
  }

  ~Rig() {
    worker_thread.Invoke([&](Reactor&) {
      ccp_workers.clear();
      mdp_workers.clear();
    });
    broker_thread.Invoke([&](Reactor&) {
      mdp.reset();
      ccp.reset();
    });
    auth_thread.Invoke([&](Reactor&) { zap.reset(); });
  }

  std::optional<CurveClientKeys> Keys(bool curve) const {
    if (!curve) return std::nullopt;
    return client_keys;
  }
};

// --- Measurements (each returns one round's number) ------------------------

// A consensus client of the plaintext or the CURVE endpoint.
std::unique_ptr<ConsensusClient> CcpClient(Rig& rig, Reactor& reactor,
                                           bool curve) {
  ConsensusClient::Options o;
  o.curve = rig.Keys(curve);
  absl::StatusOr<std::unique_ptr<ConsensusClient>> client =
      ConsensusClient::Create(reactor, rig.ctx,
                              curve ? rig.ccp_curve : rig.ccp_plain, o);
  if (!client.ok()) Die("ccp client", client.status());
  return *std::move(client);
}

// Median round trip in microseconds.
double CcpRoundTrip(Rig& rig, bool curve, int n, int size) {
  Reactor reactor;
  std::unique_ptr<ConsensusClient> client = CcpClient(rig, reactor, curve);
  const std::string body(static_cast<std::size_t>(size), 'x');
  const char* service = curve ? "curve" : "plain";
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(n));
  Frames payload(1);
  for (int i = -100; i < n; ++i) {  // 100 warm-up trips
    payload[0] = Frame(body);
    const Clock::time_point t0 = Clock::now();
    bool ok = false;
    client->Call(service, std::span(payload), {.timeout = milliseconds(10000)},
                 [&](ConsensusClient::Result&& r) { ok = r.ok(); });
    if (!ok) Die("ccp round trip", absl::DeadlineExceededError("failed"));
    if (i >= 0) us.push_back(Micros(Clock::now() - t0));
  }
  return Median(us);
}

double MdpRoundTrip(Rig& rig, bool curve, int n, int size) {
  MdpClient::Options o;
  o.timeout = milliseconds(10000);
  o.retries = 0;
  o.curve = rig.Keys(curve);
  absl::StatusOr<std::unique_ptr<MdpClient>> created =
      MdpClient::Create(curve ? rig.mdp_curve : rig.mdp_plain, o, &rig.ctx);
  if (!created.ok()) Die("mdp client", created.status());
  MdpClient& client = **created;
  const std::string body(static_cast<std::size_t>(size), 'x');
  const char* service = curve ? "curve" : "plain";
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(n));
  for (int i = -100; i < n; ++i) {
    const Clock::time_point t0 = Clock::now();
    absl::StatusOr<Frames> r = client.Request(service, MakeFrames({body}));
    if (!r.ok()) Die("mdp round trip", r.status());
    if (i >= 0) us.push_back(Micros(Clock::now() - t0));
  }
  return Median(us);
}

// Requests per second with `window` outstanding.
double CcpThroughput(Rig& rig, bool curve, int total, int window, int size) {
  Reactor reactor;
  std::unique_ptr<ConsensusClient> client = CcpClient(rig, reactor, curve);
  const std::string body(static_cast<std::size_t>(size), 'x');
  const char* service = curve ? "curve" : "plain";
  int sent = 0, done = 0, failed = 0;
  std::function<void()> send_one = [&] {
    ++sent;
    client->Request(service, MakeFrames({body}),
                    {.timeout = milliseconds(30000)},
                    [&](ConsensusClient::Result&& r) {
                      ++done;
                      if (!r.ok()) ++failed;
                      if (sent < total) send_one();
                      if (done == total) reactor.Stop();
                    });
  };
  // Warm-up: one round trip, so that the handshake is not timed.
  client->Call(service, std::span<zmq::message_t>(), {}, [](auto&&) {});
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < window && sent < total; ++i) send_one();
  if (absl::Status s = reactor.Run(); !s.ok()) Die("reactor", s);
  const double seconds =
      std::chrono::duration<double>(Clock::now() - t0).count();
  if (failed > 0) Die("ccp throughput", absl::InternalError("failures"));
  return total / seconds;
}

double MdpThroughput(Rig& rig, bool curve, int total, int window, int size) {
  Reactor reactor;
  MdpAsyncClient::Options o;
  o.timeout = milliseconds(30000);
  o.curve = rig.Keys(curve);
  absl::StatusOr<std::unique_ptr<MdpAsyncClient>> created =
      MdpAsyncClient::Create(reactor, rig.ctx,
                             curve ? rig.mdp_curve : rig.mdp_plain, o);
  if (!created.ok()) Die("mdp client", created.status());
  MdpAsyncClient& client = **created;
  const std::string body(static_cast<std::size_t>(size), 'x');
  const char* service = curve ? "curve" : "plain";
  int sent = 0, done = 0, failed = 0;
  bool warm = false;
  if (!client
           .Request(service, MakeFrames({"warm-up"}),
                    [&](absl::StatusOr<Frames>) {
                      warm = true;
                      reactor.Stop();
                    })
           .ok()) {
    Die("mdp warm-up", absl::InternalError("refused"));
  }
  if (absl::Status s = reactor.Run(); !s.ok() || !warm) Die("reactor", s);
  std::function<void()> send_one = [&] {
    ++sent;
    absl::Status s = client.Request(service, MakeFrames({body}),
                                    [&](absl::StatusOr<Frames> r) {
                                      ++done;
                                      if (!r.ok()) ++failed;
                                      if (sent < total) send_one();
                                      if (done == total) reactor.Stop();
                                    });
    if (!s.ok()) Die("mdp request", s);
  };
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < window && sent < total; ++i) send_one();
  if (absl::Status s = reactor.Run(); !s.ok()) Die("reactor", s);
  const double seconds =
      std::chrono::duration<double>(Clock::now() - t0).count();
  if (failed > 0) Die("mdp throughput", absl::InternalError("failures"));
  return total / seconds;
}

// Median microseconds from a new socket to its first answer (CCp100 PING).
double Handshake(Rig& rig, bool curve, int n) {
  Reactor reactor;
  std::vector<double> us;
  for (int i = 0; i < n; ++i) {
    const Clock::time_point t0 = Clock::now();
    std::unique_ptr<ConsensusClient> client = CcpClient(rig, reactor, curve);
    bool done = false;
    absl::Status result;
    client->Ping(milliseconds(10000), [&](absl::Status s) {
      result = s;
      done = true;
    });
    while (!done) {
      if (!reactor.RunOnce(milliseconds(100)).ok()) break;
    }
    if (!result.ok()) Die("handshake", result);
    us.push_back(Micros(Clock::now() - t0));
  }
  return Median(us);
}

struct Series {
  std::string name;
  std::string unit;
  bool higher_is_better = false;
  std::vector<double> plain, curve;
};

void Print(const Series& s) {
  std::vector<double> ratios;
  for (std::size_t i = 0; i < s.plain.size() && i < s.curve.size(); ++i) {
    ratios.push_back(s.curve[i] / s.plain[i]);
  }
  std::sort(ratios.begin(), ratios.end());
  const double p = Median(s.plain);
  const double c = Median(s.curve);
  std::printf("%-34s %12.1f %12.1f %8.3f   [%.3f .. %.3f] %s\n", s.name.c_str(),
              p, c, c / p, ratios.front(), ratios.back(), s.unit.c_str());
  std::fflush(stdout);
}

int Main(int argc, char** argv) {
  if (!CurveAvailable()) {
    std::fprintf(stderr, "curve_bench: libzmq has no CURVE\n");
    return 1;
  }
  const int rounds = std::max(1, IntFlag(argc, argv, "--rounds", 6));
  const int rt = IntFlag(argc, argv, "--rt", 2000);
  const int tput = IntFlag(argc, argv, "--tput", 20000);
  const int window = IntFlag(argc, argv, "--window", 64);
  const int handshakes = IntFlag(argc, argv, "--handshakes", 50);
  const std::vector<int> sizes = ListFlag(argc, argv, "--sizes", {64, 16384});

  Rig rig;
  std::vector<Series> all;
  for (int size : sizes) {
    const std::string sz = std::to_string(size) + " B";
    Series ccp_rt{"ccp round trip, " + sz, "us (median)", false, {}, {}};
    Series mdp_rt{"mdp round trip, " + sz, "us (median)", false, {}, {}};
    Series ccp_tp{
        "ccp throughput, window " + std::to_string(window) + ", " + sz,
        "req/s",
        true,
        {},
        {}};
    Series mdp_tp{
        "mdp throughput, window " + std::to_string(window) + ", " + sz,
        "req/s",
        true,
        {},
        {}};
    for (int r = 0; r < rounds; ++r) {
      // A B, B A, A B, ...: each side goes first half of the time.
      for (int k = 0; k < 2; ++k) {
        const bool curve = (k == 1) != (r % 2 == 1);
        (curve ? ccp_rt.curve : ccp_rt.plain)
            .push_back(CcpRoundTrip(rig, curve, rt, size));
        (curve ? mdp_rt.curve : mdp_rt.plain)
            .push_back(MdpRoundTrip(rig, curve, rt, size));
        (curve ? ccp_tp.curve : ccp_tp.plain)
            .push_back(CcpThroughput(rig, curve, tput, window, size));
        (curve ? mdp_tp.curve : mdp_tp.plain)
            .push_back(MdpThroughput(rig, curve, tput, window, size));
      }
    }
    for (Series* s : {&ccp_rt, &mdp_rt, &ccp_tp, &mdp_tp}) {
      all.push_back(std::move(*s));
    }
  }
  Series hs{"new connection + first PING", "us (median)", false, {}, {}};
  for (int r = 0; r < rounds; ++r) {
    for (int k = 0; k < 2; ++k) {
      const bool curve = (k == 1) != (r % 2 == 1);
      (curve ? hs.curve : hs.plain)
          .push_back(Handshake(rig, curve, handshakes));
    }
  }
  all.push_back(std::move(hs));

  std::printf(
      "curve_bench: %d rounds (plaintext and CURVE interleaved), tcp "
      "loopback, %d round trips, %d requests per throughput run, window %d\n",
      rounds, rt, tput, window);
  std::printf("%-34s %12s %12s %8s   %s\n", "", "plaintext", "CURVE", "ratio",
              "per-round ratios");
  for (const Series& s : all) Print(s);
  return 0;
}

}  // namespace
}  // namespace zb

int main(int argc, char** argv) { return zb::Main(argc, argv); }
