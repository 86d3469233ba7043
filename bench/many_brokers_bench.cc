// Copyright 2026 The zbrokers Authors.
//
// many_brokers_bench: throughput and latency with 1, 2 and 4 brokers in
// front of the same workers (docs/ha.md, "Many brokers";
// docs/performance.md, "Many brokers").
//
// One process, tcp loopback.  For each broker count B: B Majordomo and B
// consensus brokers, each pair on its own reactor thread; --workers MDP
// workers and --workers consensus workers, every one of them connected to
// ALL B brokers (an endpoint list: one session per broker), 16 workers per
// reactor thread; --clients clients of each protocol on one reactor thread,
// each keeping --window requests outstanding until --requests are answered
// in all.  How the clients reach the brokers (--assign):
//   spread  every client gets the list of all B brokers with
//           endpoint_policy = spread (round-robin over the live brokers);
//   static  client i gets broker i mod B alone.
//
//   many_brokers_bench [--brokers 1,2,4] [--workers 64] [--clients 8]
//                      [--window 16] [--requests 20000]
//                      [--ccp-requests 2000] [--rounds 3] [--assign spread]
//
// A Majordomo request is served by one worker; a consensus request by every
// worker of the broker that took it (64 replies per request with 64
// workers), so its numbers are per request, not per reply.  Rounds
// interleave the broker counts (1 2 4, then 4 2 1, ...).  Printed per
// protocol and broker count: the median over rounds of requests per second
// and of each round's p50 and p99 latency (send to answer), with the ratio
// to the first broker count (one by default), and the CPU time of the whole
// process (every thread) per request.  Unknown flags are ignored (scripts/bench
// passes Google Benchmark flags to every *_bench).

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "absl/strings/str_join.h"
#include "bench/flags.h"
#include "zbrokers/common/endpoint.h"
#include "zbrokers/consensus/broker.h"
#include "zbrokers/consensus/client.h"
#include "zbrokers/consensus/worker.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/majordomo/broker.h"
#include "zbrokers/majordomo/client.h"
#include "zbrokers/majordomo/worker.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/reactor/reactor_thread.h"

namespace zb {
namespace {

using Clock = std::chrono::steady_clock;
using bench::IntFlag;
using bench::ListFlag;
using bench::Median;
using bench::StringFlag;
using std::chrono::milliseconds;

constexpr int kWorkersPerThread = 16;

// The q-quantile (0..1) of `v`, nearest rank.
double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(q * static_cast<double>(v.size()));
  return v[std::min(i, v.size() - 1)];
}

[[noreturn]] void Die(const char* what, const absl::Status& s) {
  std::fprintf(stderr, "many_brokers_bench: %s: %s\n", what,
               s.ToString().c_str());
  std::exit(1);
}

void Quiet(auto& broker) {
  broker.set_log_hook([](LogLevel, std::string_view) {});
}

// B brokers of each protocol and the workers, each on reactor threads.
class Rig {
 public:
  Rig(int brokers, int workers) : brokers_(brokers) {
    for (int b = 0; b < brokers; ++b) {
      broker_contexts_.push_back(std::make_unique<zmq::context_t>(1));
      zmq::context_t& broker_ctx = *broker_contexts_.back();
      broker_threads_.push_back(std::make_unique<ReactorThread>());
      broker_threads_.back()->Invoke([&](Reactor& r) {
        absl::StatusOr<std::unique_ptr<MajordomoBroker>> mdp =
            MajordomoBroker::Create(r, broker_ctx, MajordomoBroker::Options{});
        if (!mdp.ok()) Die("majordomo broker", mdp.status());
        absl::StatusOr<std::unique_ptr<ConsensusBroker>> ccp =
            ConsensusBroker::Create(r, broker_ctx, {});
        if (!ccp.ok()) Die("consensus broker", ccp.status());
        Quiet(**mdp);
        Quiet(**ccp);
        if (absl::Status s = (*mdp)->Bind("tcp://127.0.0.1:*"); !s.ok()) {
          Die("bind", s);
        }
        if (absl::Status s = (*ccp)->Bind("tcp://127.0.0.1:*"); !s.ok()) {
          Die("bind", s);
        }
        mdp_endpoints_.push_back((*mdp)->endpoints()[0]);
        ccp_endpoints_.push_back((*ccp)->endpoints()[0]);
        mdp_.push_back(*std::move(mdp));
        ccp_.push_back(*std::move(ccp));
      });
    }
    const std::string mdp_list = absl::StrJoin(mdp_endpoints_, ",");
    const std::string ccp_list = absl::StrJoin(ccp_endpoints_, ",");
    for (int w = 0; w < workers; ++w) {
      if (w % kWorkersPerThread == 0) {
        worker_threads_.push_back(std::make_unique<ReactorThread>());
      }
      worker_threads_.back()->Invoke([&](Reactor& r) {
        absl::StatusOr<std::unique_ptr<MdpWorker>> mw =
            MdpWorker::Create(r, worker_ctx_, mdp_list, "echo",
                              [](Frames body, MdpWorker::Replier replier) {
                                replier.Reply(std::move(body));
                              });
        if (!mw.ok()) Die("mdp worker", mw.status());
        mdp_workers_.push_back(*std::move(mw));
        absl::StatusOr<std::unique_ptr<ConsensusWorker>> cw =
            ConsensusWorker::Create(r, worker_ctx_, ccp_list, "echo",
                                    [](std::span<zmq::message_t> payload,
                                       ConsensusWorker::Responder responder) {
                                      responder.Succeed(payload);
                                    });
        if (!cw.ok()) Die("consensus worker", cw.status());
        ccp_workers_.push_back(*std::move(cw));
      });
    }
    // Every worker registered with every broker before measuring.
    for (int i = 0; i < 3000; ++i) {
      bool ready = true;
      for (int b = 0; b < brokers_ && ready; ++b) {
        ready = broker_threads_[b]->Invoke([&](Reactor&) {
          return mdp_[b]->worker_count("echo") ==
                     static_cast<std::size_t>(workers) &&
                 ccp_[b]->worker_count("echo") ==
                     static_cast<std::size_t>(workers);
        });
      }
      if (ready) return;
      std::this_thread::sleep_for(milliseconds(10));
    }
    Die("workers", absl::DeadlineExceededError("did not all register"));
  }

  ~Rig() {
    for (std::size_t t = 0; t < worker_threads_.size(); ++t) {
      worker_threads_[t]->Invoke([&](Reactor&) {
        // The workers of thread t are t*16 .. t*16+15.
        for (std::size_t w = t * kWorkersPerThread;
             w < std::min(mdp_workers_.size(), (t + 1) * kWorkersPerThread);
             ++w) {
          mdp_workers_[w].reset();
          ccp_workers_[w].reset();
        }
      });
    }
    for (int b = 0; b < brokers_; ++b) {
      broker_threads_[b]->Invoke([&](Reactor&) {
        mdp_[b].reset();
        ccp_[b].reset();
      });
    }
  }

  zmq::context_t& client_context() { return client_ctx_; }
  int brokers() const { return brokers_; }
  // The endpoints client `i` is given under `assign`.
  std::string ClientEndpoints(bool mdp, int i, bool spread) const {
    const std::vector<std::string>& all = mdp ? mdp_endpoints_ : ccp_endpoints_;
    if (spread) return absl::StrJoin(all, ",");
    return all[static_cast<std::size_t>(i % brokers_)];
  }
  // Requests each broker of a protocol has taken so far.
  std::vector<std::uint64_t> Requests(bool mdp) {
    std::vector<std::uint64_t> out;
    for (int b = 0; b < brokers_; ++b) {
      out.push_back(broker_threads_[b]->Invoke([&](Reactor&) {
        return mdp ? mdp_[b]->stats().requests : ccp_[b]->stats().requests;
      }));
    }
    return out;
  }

 private:
  const int brokers_;
  // Each broker has a context (and so an I/O thread) of its own, as a
  // broker process would; the workers share one, the clients another.
  std::vector<std::unique_ptr<zmq::context_t>> broker_contexts_;
  zmq::context_t worker_ctx_{1};
  zmq::context_t client_ctx_{1};
  std::vector<std::unique_ptr<ReactorThread>> broker_threads_;
  std::vector<std::unique_ptr<ReactorThread>> worker_threads_;
  std::vector<std::unique_ptr<MajordomoBroker>> mdp_;
  std::vector<std::unique_ptr<ConsensusBroker>> ccp_;
  std::vector<std::string> mdp_endpoints_, ccp_endpoints_;
  std::vector<std::unique_ptr<MdpWorker>> mdp_workers_;
  std::vector<std::unique_ptr<ConsensusWorker>> ccp_workers_;
};

// CPU seconds (user + system) of every thread of the process so far.
double ProcessCpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6;
  };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

struct Run {
  double per_second = 0;
  double cpu_us = 0;  // CPU time of the whole process per request
  double p50_us = 0;
  double p99_us = 0;
};

// `clients` clients with `window` requests outstanding each, until `total`
// are answered; every one must succeed.
Run Measure(Rig& rig, bool mdp, int clients, int window, int total,
            bool spread) {
  Reactor reactor;
  std::vector<std::unique_ptr<MdpAsyncClient>> mdp_clients;
  std::vector<std::unique_ptr<ConsensusClient>> ccp_clients;
  for (int i = 0; i < clients; ++i) {
    const std::string endpoints = rig.ClientEndpoints(mdp, i, spread);
    const EndpointPolicy policy =
        spread ? EndpointPolicy::kSpread : EndpointPolicy::kFailover;
    if (mdp) {
      MdpAsyncClient::Options o;
      o.timeout = milliseconds(30000);
      o.endpoint_policy = policy;
      absl::StatusOr<std::unique_ptr<MdpAsyncClient>> c =
          MdpAsyncClient::Create(reactor, rig.client_context(), endpoints, o);
      if (!c.ok()) Die("mdp client", c.status());
      mdp_clients.push_back(*std::move(c));
    } else {
      ConsensusClient::Options o;
      o.endpoint_policy = policy;
      absl::StatusOr<std::unique_ptr<ConsensusClient>> c =
          ConsensusClient::Create(reactor, rig.client_context(), endpoints, o);
      if (!c.ok()) Die("consensus client", c.status());
      ccp_clients.push_back(*std::move(c));
    }
  }
  int sent = 0, done = 0, failed = 0;
  bool measuring = false;
  std::vector<double> latency_us;
  latency_us.reserve(static_cast<std::size_t>(total));
  std::function<void(int)> send_one = [&](int i) {
    ++sent;
    const Clock::time_point t0 = Clock::now();
    auto finish = [&, i, t0](bool ok) {
      if (measuring) {
        latency_us.push_back(
            std::chrono::duration<double, std::micro>(Clock::now() - t0)
                .count());
      }
      ++done;
      if (!ok) ++failed;
      if (sent < total) send_one(i);
      if (done == total) reactor.Stop();
    };
    if (mdp) {
      absl::Status s = mdp_clients[static_cast<std::size_t>(i)]->Request(
          "echo", MakeFrames({"many brokers"}),
          [finish](absl::StatusOr<Frames> r) { finish(r.ok()); });
      if (!s.ok()) Die("mdp request", s);
    } else {
      ccp_clients[static_cast<std::size_t>(i)]->Request(
          "echo", MakeFrames({"many brokers"}),
          {.timeout = milliseconds(30000)},
          [finish](ConsensusClient::Result&& r) { finish(r.ok()); });
    }
  };
  // Warm-up: a few requests per client, so that connections, tag
  // negotiation and the brokers' pools are not timed.
  const int warmup = clients * std::max(2, rig.brokers());
  sent = done = 0;
  const int real_total = total;
  total = warmup;
  for (int i = 0; i < clients; ++i) send_one(i);
  if (absl::Status s = reactor.Run(); !s.ok()) Die("reactor", s);
  if (failed > 0) Die("warm-up", absl::InternalError("failures"));
  total = real_total;
  sent = done = 0;
  measuring = true;
  const double cpu0 = ProcessCpuSeconds();
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < clients; ++i) {
    for (int k = 0; k < window && sent < total; ++k) send_one(i);
  }
  if (absl::Status s = reactor.Run(); !s.ok()) Die("reactor", s);
  const double seconds =
      std::chrono::duration<double>(Clock::now() - t0).count();
  if (failed > 0) Die("run", absl::InternalError("requests failed"));
  return {.per_second = total / seconds,
          .cpu_us = (ProcessCpuSeconds() - cpu0) * 1e6 / total,
          .p50_us = Quantile(latency_us, 0.50),
          .p99_us = Quantile(latency_us, 0.99)};
}

int Main(int argc, char** argv) {
  const std::vector<int> counts = ListFlag(argc, argv, "--brokers", {1, 2, 4});
  const int workers = IntFlag(argc, argv, "--workers", 64);
  const int clients = IntFlag(argc, argv, "--clients", 8);
  const int window = IntFlag(argc, argv, "--window", 16);
  const int mdp_total = IntFlag(argc, argv, "--requests", 20000);
  const int ccp_total = IntFlag(argc, argv, "--ccp-requests", 2000);
  const int rounds = std::max(1, IntFlag(argc, argv, "--rounds", 3));
  const std::string assign = StringFlag(argc, argv, "--assign", "spread");
  if (assign != "spread" && assign != "static") {
    std::fprintf(stderr, "many_brokers_bench: --assign spread|static\n");
    return 2;
  }
  const bool spread = assign == "spread";
  if (counts.empty() ||
      std::any_of(counts.begin(), counts.end(), [](int b) { return b < 1; })) {
    std::fprintf(stderr, "many_brokers_bench: --brokers 1,2,4 (at least 1)\n");
    return 2;
  }

  // [protocol][count index] -> one Run per round.
  std::vector<std::vector<std::vector<Run>>> runs(
      2, std::vector<std::vector<Run>>(counts.size()));
  std::vector<std::vector<std::vector<std::uint64_t>>> shares(
      2, std::vector<std::vector<std::uint64_t>>(counts.size()));
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t k = 0; k < counts.size(); ++k) {
      const std::size_t c = r % 2 == 0 ? k : counts.size() - 1 - k;
      Rig rig(counts[c], workers);
      for (int p = 0; p < 2; ++p) {
        const bool mdp = p == 0;
        const std::vector<std::uint64_t> before = rig.Requests(mdp);
        runs[p][c].push_back(Measure(rig, mdp, clients, window,
                                     mdp ? mdp_total : ccp_total, spread));
        const std::vector<std::uint64_t> after = rig.Requests(mdp);
        shares[p][c].resize(after.size());
        for (std::size_t b = 0; b < after.size(); ++b) {
          shares[p][c][b] += after[b] - before[b];
        }
      }
    }
  }

  std::printf(
      "many_brokers_bench: tcp loopback, %d workers (each on every broker), "
      "%d clients x window %d, assign %s, %d rounds (medians; ratios to %d "
      "broker(s))\n",
      workers, clients, window, assign.c_str(), rounds, counts.front());
  std::printf("%-10s %7s %10s %7s %9s %9s %7s %9s  %s\n", "protocol", "brokers",
              "req/s", "ratio", "p50-us", "p99-us", "ratio", "cpu-us/rq",
              "requests per broker (all rounds)");
  for (int p = 0; p < 2; ++p) {
    double base_rate = 0, base_p50 = 0;
    for (std::size_t c = 0; c < counts.size(); ++c) {
      std::vector<double> rate, p50, p99, cpu;
      for (const Run& run : runs[p][c]) {
        cpu.push_back(run.cpu_us);
        rate.push_back(run.per_second);
        p50.push_back(run.p50_us);
        p99.push_back(run.p99_us);
      }
      if (c == 0) {
        base_rate = Median(rate);
        base_p50 = Median(p50);
      }
      std::printf("%-10s %7d %10.0f %7.3f %9.1f %9.1f %7.3f %9.1f  %s\n",
                  p == 0 ? "majordomo" : "consensus", counts[c], Median(rate),
                  Median(rate) / base_rate, Median(p50), Median(p99),
                  Median(p50) / base_p50, Median(cpu),
                  absl::StrJoin(shares[p][c], " ").c_str());
    }
  }
  return 0;
}

}  // namespace
}  // namespace zb

int main(int argc, char** argv) { return zb::Main(argc, argv); }
