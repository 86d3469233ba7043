// Copyright 2026 The zbrokers Authors.
//
// mdp_bench: the Majordomo broker against a hand-written libzmq ROUTER-ROUTER
// proxy that makes the same hops (client -> proxy -> worker -> proxy ->
// client, least-recently-used worker, the same MDP frames), in the same run.
//
// Both sides are driven by the same raw-socket peers (blocking DEALER
// clients and echo workers, one thread each), over tcp loopback (or ipc or
// inproc with --transport), so the only
// difference is the thing in the middle.  Rounds alternate broker / proxy;
// the medians over rounds are printed, with broker/proxy ratios.
//
//   mdp_bench [--rounds 5] [--rt 3000] [--sync 1000] [--async 3000]
//             [--transport tcp|ipc|inproc] [--only rt|sync|async]
//             [--prefetch 1]
//
//   round trip: 1 client, 1 worker, one request at a time (median per trip)
//   sync:       10 clients, 2 workers, one request at a time per client
//   async:      10 clients, 2 workers, 100 outstanding per client
//
// --prefetch N keeps up to N requests outstanding per worker on both sides:
// the broker's Options::worker_prefetch, and N credits per worker in the
// proxy (its identity is queued N times at READY and once more per REPLY).
// The workers stay sequential (one request handled at a time); the extra
// requests wait in their sockets.  1, the default, is RFC 7's behaviour.
//
// It also counts the C++ heap allocations (operator new) made on the broker's
// thread during the timed part of each broker run, per request.  libzmq's own
// buffers (malloc, for frames over 33 bytes) are not included.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "bench/flags.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/majordomo/broker.h"
#include "zbrokers/majordomo/codec.h"
#include "zbrokers/reactor/reactor_thread.h"

// --- Allocation counting (operator new on threads that opt in) ---------------

namespace {
std::atomic<std::uint64_t> g_allocations{0};
thread_local bool tl_counting = false;

void* CountedAlloc(std::size_t n) {
  if (tl_counting) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
}  // namespace

// The matching deletes are defined here too: with only operator new
// replaced, GCC's -O3 inlining sees malloc paired with the library's sized
// delete and (rightly, for -Werror) rejects the mismatch.
void* operator new(std::size_t n) { return CountedAlloc(n); }
void* operator new[](std::size_t n) { return CountedAlloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace zb {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// "tcp" (default), "ipc" or "inproc" (--transport).  With inproc every
// socket shares one context, since inproc endpoints live in a context.
std::string g_transport = "tcp";
int g_endpoint_seq = 0;
int g_prefetch = 1;  // --prefetch

std::string NewEndpoint() {
  ++g_endpoint_seq;
  if (g_transport == "ipc") {
    return "ipc:///tmp/zb-mdp-bench-" + std::to_string(getpid()) + "-" +
           std::to_string(g_endpoint_seq);
  }
  if (g_transport == "inproc") {
    return "inproc://zb-mdp-bench-" + std::to_string(g_endpoint_seq);
  }
  return "tcp://127.0.0.1:*";
}

constexpr int kClients = 10;
constexpr int kWorkers = 2;
constexpr int kWindow = 100;
const std::string kService = "echo";

// --- Peers -------------------------------------------------------------------

// An echo worker: READY, then REPLY to every REQUEST (heartbeats ignored).
void RunWorker(zmq::context_t& ctx, std::string endpoint,
               std::atomic<bool>& stop) {
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::rcvtimeo, 50);
  s.connect(endpoint);
  Frames out;
  mdp::AppendReady(kService, &out);
  (void)zmq::send_multipart(s, out);
  Frames in;
  while (!stop.load(std::memory_order_relaxed)) {
    in.clear();
    if (!zmq::recv_multipart(s, std::back_inserter(in))) continue;
    auto m = mdp::ParseWorker(in);
    if (!m.ok() || m->command != mdp::Command::kRequest) continue;
    out.clear();
    mdp::AppendReply(std::move(*m->address), m->body, &out);
    (void)zmq::send_multipart(s, out);
  }
}

// A client: `requests` requests, at most `window` outstanding.  With
// latencies != nullptr (window 1) records each round trip.
void RunClient(zmq::context_t& ctx, std::string endpoint, int requests,
               int window, std::vector<double>* latencies) {
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::rcvtimeo, 10000);
  s.connect(endpoint);
  const std::string payload(16, 'p');
  int sent = 0, received = 0;
  Frames out, in;
  Clock::time_point t0;
  auto send_one = [&] {
    out.clear();
    zmq::message_t body = Frame(payload);
    mdp::AppendClientRequest(kService, std::span<zmq::message_t>(&body, 1),
                             &out);
    if (latencies) t0 = Clock::now();
    (void)zmq::send_multipart(s, out);
    ++sent;
  };
  while (sent < requests && sent - received < window) send_one();
  while (received < requests) {
    in.clear();
    if (!zmq::recv_multipart(s, std::back_inserter(in))) {
      std::fprintf(stderr, "client: timed out after %d replies\n", received);
      std::exit(1);
    }
    ++received;
    if (latencies) {
      latencies->push_back(
          std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    if (sent < requests) send_one();
  }
}

// --- The baseline proxy
// -------------------------------------------------------

// Frontend ROUTER for clients, backend ROUTER for workers; idle workers in a
// FIFO (least recently used first), requests queued while none is idle.  It
// rewrites the frames exactly as a Majordomo broker does, with no checks.
class Proxy {
 public:
  explicit Proxy(zmq::context_t& ctx)
      : front_(ctx, zmq::socket_type::router),
        back_(ctx, zmq::socket_type::router) {
    for (auto* s : {&front_, &back_}) {
      s->set(zmq::sockopt::linger, 0);
      s->set(zmq::sockopt::router_mandatory, 1);
      s->bind(NewEndpoint());
    }
    front_endpoint_ = front_.get(zmq::sockopt::last_endpoint);
    back_endpoint_ = back_.get(zmq::sockopt::last_endpoint);
    thread_ = std::thread([this] { Run(); });
  }
  ~Proxy() {
    stop_ = true;
    thread_.join();
  }
  const std::string& front() const { return front_endpoint_; }
  const std::string& back() const { return back_endpoint_; }

 private:
  void Run() {
    zmq_pollitem_t items[] = {{back_.handle(), 0, ZMQ_POLLIN, 0},
                              {front_.handle(), 0, ZMQ_POLLIN, 0}};
    Frames in, out;
    while (!stop_) {
      if (zmq::poll(items, 2, 50ms) <= 0) continue;
      if (items[0].revents & ZMQ_POLLIN) {
        // [worker, "", MDPW01, cmd, (client, "", body...)]
        while (Recv(back_, in)) {
          if (in.size() >= 7 && View(in[3])[0] == 0x03) {
            out.clear();
            out.push_back(std::move(in[4]));
            out.emplace_back();
            out.push_back(Frame(mdp::kClientTag));
            out.push_back(Frame(kService));
            for (std::size_t i = 6; i < in.size(); ++i)
              out.push_back(std::move(in[i]));
            (void)SendFrames(front_, out);
          }
          // READY brings g_prefetch credits, a REPLY gives one back (this
          // proxy's workers send nothing else).
          const int credits = View(in[3])[0] == 0x01 ? g_prefetch : 1;
          for (int i = 0; i < credits; ++i) idle_.emplace_back().copy(in[0]);
          while (!queue_.empty() && !idle_.empty()) {
            Frames r = std::move(queue_.front());
            queue_.pop_front();
            Dispatch(r);
          }
        }
      }
      if (items[1].revents & ZMQ_POLLIN) {
        // [client, "", MDPC01, service, body...]
        while (Recv(front_, in)) {
          if (idle_.empty()) {
            queue_.push_back(std::move(in));
            in = Frames();
          } else {
            Dispatch(in);
          }
        }
      }
    }
  }

  static bool Recv(zmq::socket_t& s, Frames& in) {
    in.clear();
    return zmq::recv_multipart(s, std::back_inserter(in),
                               zmq::recv_flags::dontwait)
        .has_value();
  }

  void Dispatch(Frames& request) {
    zmq::message_t worker = std::move(idle_.front());
    idle_.pop_front();
    out_.clear();
    out_.push_back(std::move(worker));
    mdp::AppendRequest(std::move(request[0]),
                       std::span<zmq::message_t>(request).subspan(4), &out_);
    (void)SendFrames(back_, out_);
  }

  zmq::socket_t front_, back_;
  std::string front_endpoint_, back_endpoint_;
  std::deque<zmq::message_t> idle_;
  std::deque<Frames> queue_;
  Frames out_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// --- One measurement
// ----------------------------------------------------------

struct Result {
  double value;  // microseconds per trip, or requests per second
  double allocations_per_request = -1;  // broker runs only
};

enum class Middle { kBroker, kProxy };
enum class Mode { kRoundTrip, kSync, kAsync };

Result Measure(Middle middle, Mode mode, int n) {
  const int first_endpoint = g_endpoint_seq + 1;
  zmq::context_t middle_ctx_storage(1);
  zmq::context_t peer_ctx_storage(1);
  zmq::context_t& middle_ctx = middle_ctx_storage;
  zmq::context_t& peer_ctx =
      g_transport == "inproc" ? middle_ctx_storage : peer_ctx_storage;
  std::unique_ptr<ReactorThread> broker_thread;
  std::unique_ptr<MajordomoBroker> broker;
  std::unique_ptr<Proxy> proxy;
  std::string client_ep, worker_ep;
  if (middle == Middle::kBroker) {
    broker_thread = std::make_unique<ReactorThread>();
    broker_thread->Invoke([&](Reactor& r) {
      MajordomoBroker::Options options;
      options.worker_prefetch = g_prefetch;
      absl::StatusOr<std::unique_ptr<MajordomoBroker>> created =
          MajordomoBroker::Create(r, middle_ctx, options);
      if (!created.ok()) {
        std::fprintf(stderr, "%s\n", created.status().ToString().c_str());
        std::exit(2);
      }
      broker = *std::move(created);
      if (absl::Status s = broker->Bind(NewEndpoint()); !s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
        std::exit(2);
      }
      client_ep = worker_ep = broker->endpoints()[0];
    });
  } else {
    proxy = std::make_unique<Proxy>(middle_ctx);
    client_ep = proxy->front();
    worker_ep = proxy->back();
  }
  const int workers = mode == Mode::kRoundTrip ? 1 : kWorkers;
  const int clients = mode == Mode::kRoundTrip ? 1 : kClients;
  std::atomic<bool> stop{false};
  std::vector<std::thread> worker_threads;
  for (int i = 0; i < workers; ++i) {
    worker_threads.emplace_back([&] { RunWorker(peer_ctx, worker_ep, stop); });
  }
  std::this_thread::sleep_for(100ms);  // let the workers register
  // Warm-up: connections, buffers, caches.
  RunClient(peer_ctx, client_ep, 200, 1, nullptr);
  if (mode == Mode::kAsync) {
    // And the broker's request queue at its full depth, whose first growth
    // (a frame vector per queued request) is not a per-request cost.
    std::vector<std::thread> warm;
    for (int i = 0; i < clients; ++i) {
      warm.emplace_back([&] {
        RunClient(peer_ctx, client_ep, 2 * kWindow, kWindow, nullptr);
      });
    }
    for (auto& t : warm) t.join();
  }

  Result result{0};
  std::vector<double> latencies;
  latencies.reserve(n);
  if (broker_thread) {
    broker_thread->Invoke([](Reactor&) { tl_counting = true; });
  }
  const std::uint64_t allocations_before = g_allocations.load();
  const auto t0 = Clock::now();
  if (mode == Mode::kRoundTrip) {
    RunClient(peer_ctx, client_ep, n, 1, &latencies);
    std::nth_element(latencies.begin(),
                     latencies.begin() + latencies.size() / 2, latencies.end());
    result.value = latencies[latencies.size() / 2];
  } else {
    std::vector<std::thread> client_threads;
    const int window = mode == Mode::kAsync ? kWindow : 1;
    for (int i = 0; i < clients; ++i) {
      client_threads.emplace_back(
          [&] { RunClient(peer_ctx, client_ep, n, window, nullptr); });
    }
    for (auto& t : client_threads) t.join();
    const double secs =
        std::chrono::duration<double>(Clock::now() - t0).count();
    result.value = clients * n / secs;
  }
  if (broker_thread) {
    broker_thread->Invoke([](Reactor&) { tl_counting = false; });
    result.allocations_per_request =
        static_cast<double>(g_allocations.load() - allocations_before) /
        (static_cast<double>(n) * clients);
  }
  stop = true;
  for (auto& t : worker_threads) t.join();
  if (broker_thread) broker_thread->Invoke([&](Reactor&) { broker.reset(); });
  broker_thread.reset();
  proxy.reset();
  if (g_transport == "ipc") {
    // The socket files of this run (libzmq leaves them behind).
    for (int i = first_endpoint; i <= g_endpoint_seq; ++i) {
      ::unlink(("/tmp/zb-mdp-bench-" + std::to_string(getpid()) + "-" +
                std::to_string(i))
                   .c_str());
    }
  }
  return result;
}

}  // namespace
}  // namespace zb

int main(int argc, char** argv) {
  using zb::Middle;
  using zb::Mode;
  using zb::bench::IntFlag;
  using zb::bench::Median;
  using zb::bench::StringFlag;
  const int rounds = IntFlag(argc, argv, "--rounds", 5);
  zb::g_prefetch = IntFlag(argc, argv, "--prefetch", 1);
  zb::g_transport = StringFlag(argc, argv, "--transport", "tcp");
  if (zb::g_transport != "tcp" && zb::g_transport != "ipc" &&
      zb::g_transport != "inproc") {
    std::fprintf(stderr, "--transport must be tcp, ipc or inproc\n");
    return 2;
  }
  if (zb::g_prefetch < 1 ||
      zb::g_prefetch > zb::MajordomoBroker::kMaxWorkerPrefetch) {
    std::fprintf(stderr, "--prefetch must be between 1 and %d\n",
                 zb::MajordomoBroker::kMaxWorkerPrefetch);
    return 2;
  }
  const int rt_n = IntFlag(argc, argv, "--rt", 3000);
  const int sync_n = IntFlag(argc, argv, "--sync", 1000);
  const int async_n = IntFlag(argc, argv, "--async", 3000);
  struct Row {
    const char* name;
    Mode mode;
    int n;
    const char* unit;
    std::vector<double> broker, proxy;
    double allocations = 0;  // the largest per-request count seen
  };
  Row rows[] = {
      {"round trip, 1 client 1 worker (median us)",
       Mode::kRoundTrip,
       rt_n,
       "us",
       {},
       {}},
      {"sync throughput, 10 clients 2 workers (req/s)",
       Mode::kSync,
       sync_n,
       "req/s",
       {},
       {}},
      {"async throughput, 10 clients x 100 outstanding, 2 workers (req/s)",
       Mode::kAsync,
       async_n,
       "req/s",
       {},
       {}},
  };
  // --only rt|sync|async runs one scenario.
  const std::string only = StringFlag(argc, argv, "--only", "");
  auto selected = [&](const Row& row) {
    if (only.empty()) return true;
    const char* key = row.mode == Mode::kRoundTrip ? "rt"
                      : row.mode == Mode::kSync    ? "sync"
                                                   : "async";
    return only == key;
  };
  for (int r = 0; r < rounds; ++r) {
    for (Row& row : rows) {
      if (!selected(row)) continue;
      // Alternate which side goes first, so drift hits both equally.
      auto broker = [&] {
        const zb::Result b = zb::Measure(Middle::kBroker, row.mode, row.n);
        row.broker.push_back(b.value);
        row.allocations = std::max(row.allocations, b.allocations_per_request);
      };
      if (r % 2 == 0) {
        broker();
        row.proxy.push_back(zb::Measure(Middle::kProxy, row.mode, row.n).value);
      } else {
        row.proxy.push_back(zb::Measure(Middle::kProxy, row.mode, row.n).value);
        broker();
      }
      std::printf("round %d  %-66s broker %9.1f  proxy %9.1f\n", r + 1,
                  row.name, row.broker.back(), row.proxy.back());
      std::fflush(stdout);
    }
  }
  std::printf("\nmedians over %d rounds (%s, prefetch %d):\n", rounds,
              zb::g_transport.c_str(), zb::g_prefetch);
  for (const Row& row : rows) {
    if (!selected(row)) continue;
    const double b = Median(row.broker), p = Median(row.proxy);
    // Each round measures both sides back to back, so the per-round ratio
    // cancels slow drifts in machine load better than the ratio of medians.
    std::vector<double> ratios;
    for (std::size_t i = 0; i < row.broker.size(); ++i) {
      ratios.push_back(row.broker[i] / row.proxy[i]);
    }
    std::printf(
        "%-66s broker %9.1f %-5s proxy %9.1f %-5s ratio %.3f "
        "(median per-round ratio %.3f)  broker-thread allocations/request "
        "<= %.4f\n",
        row.name, b, row.unit, p, row.unit, b / p, Median(ratios),
        row.allocations);
  }
  return 0;
}
