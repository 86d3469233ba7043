// Copyright 2026 The zbrokers Authors.
//
// consensus_alloc_bench: counts heap allocations made on the consensus
// broker's reactor thread per client -> broker -> N workers -> broker ->
// client round trip, in steady state.
//
// The global operator new and (when not built with a sanitizer, which owns
// malloc itself) malloc/calloc/realloc/memalign are replaced by counting
// versions.  Counting is switched on only for the broker's reactor thread, so
// the client and worker sockets driven by the main thread, and libzmq's I/O
// threads, do not pollute the figure: what is left is what the broker's own
// code (reactor, codec, broker) and the libzmq calls it makes allocate.
//
//   ./consensus_alloc_bench [--round_trips=N]
//
// Prints one line per (workers, payload size) case.  Arguments it does not
// know (scripts/bench passes Google Benchmark flags to every *_bench) are
// ignored.

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "zbrokers/consensus/broker.h"
#include "zbrokers/consensus/codec.h"
#include "zbrokers/reactor/reactor_thread.h"

// --- Counting allocator
// ---------------------------------------------------------

namespace {

thread_local bool tl_counting = false;
thread_local bool tl_in_new = false;
std::atomic<std::uint64_t> g_new_calls{0};
std::atomic<std::uint64_t> g_malloc_calls{0};

// The callers of the first counted allocations, to tell which library made
// them (printed with dladdr at the end).
constexpr int kMaxCallers = 256;
void* g_callers[kMaxCallers];
std::atomic<int> g_caller_count{0};
std::uint64_t g_probe_allocs = 0;  // self-check allocations, main thread only

void NoteCaller(void* caller) {
  const int i = g_caller_count.fetch_add(1, std::memory_order_relaxed);
  if (i < kMaxCallers) g_callers[i] = caller;
}

void* CountedNew(std::size_t n, void* caller) {
  if (tl_counting) {
    g_new_calls.fetch_add(1, std::memory_order_relaxed);
    NoteCaller(caller);
  }
  if (n == 0) n = 1;
  tl_in_new = true;
  void* p = std::malloc(n);
  tl_in_new = false;
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void* CountedNewAligned(std::size_t n, std::align_val_t align, void* caller) {
  if (tl_counting) {
    g_new_calls.fetch_add(1, std::memory_order_relaxed);
    NoteCaller(caller);
  }
  if (n == 0) n = 1;
  void* p = nullptr;
  if (posix_memalign(&p,
                     std::max(sizeof(void*), static_cast<std::size_t>(align)),
                     n) != 0) {
    throw std::bad_alloc();
  }
  return p;
}

}  // namespace

void* operator new(std::size_t n) {
  return CountedNew(n, __builtin_return_address(0));
}
void* operator new[](std::size_t n) {
  return CountedNew(n, __builtin_return_address(0));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return CountedNew(n, __builtin_return_address(0));
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return CountedNew(n, __builtin_return_address(0));
  } catch (...) {
    return nullptr;
  }
}
void* operator new(std::size_t n, std::align_val_t a) {
  return CountedNewAligned(n, a, __builtin_return_address(0));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return CountedNewAligned(n, a, __builtin_return_address(0));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

// glibc lets a program interpose malloc and reach the real one through
// __libc_*.  Sanitizers interpose malloc themselves, so skip it there.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define ZB_COUNT_MALLOC 1
namespace {
inline void CountMalloc(void* caller) {
  if (!tl_counting) return;
  g_malloc_calls.fetch_add(1, std::memory_order_relaxed);
  if (!tl_in_new) NoteCaller(caller);
}
}  // namespace

extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);

void* malloc(std::size_t n) noexcept {
  CountMalloc(__builtin_return_address(0));
  return __libc_malloc(n);
}
void* calloc(std::size_t n, std::size_t size) noexcept {
  CountMalloc(__builtin_return_address(0));
  return __libc_calloc(n, size);
}
void* realloc(void* p, std::size_t n) noexcept {
  CountMalloc(__builtin_return_address(0));
  return __libc_realloc(p, n);
}
void* memalign(std::size_t align, std::size_t n) noexcept {
  CountMalloc(__builtin_return_address(0));
  return __libc_memalign(align, n);
}
int posix_memalign(void** out, std::size_t align, std::size_t n) noexcept {
  CountMalloc(__builtin_return_address(0));
  void* p = __libc_memalign(align, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
void* aligned_alloc(std::size_t align, std::size_t n) noexcept {
  CountMalloc(__builtin_return_address(0));
  return __libc_memalign(align, n);
}
}  // extern "C"
#else
#define ZB_COUNT_MALLOC 0
#endif

// --- The round trips
// -------------------------------------------------------------

namespace {

using zb::ccp::MessageType;

void SendBody(zmq::socket_t& s, zb::Frames& body) {
  s.send(zmq::message_t(), zmq::send_flags::sndmore);
  for (std::size_t i = 0; i < body.size(); ++i) {
    s.send(body[i], i + 1 < body.size() ? zmq::send_flags::sndmore
                                        : zmq::send_flags::none);
  }
}

// Receives one message and returns its body (after the delimiter).
zb::Frames RecvBody(zmq::socket_t& s) {
  zb::Frames frames;
  if (!zmq::recv_multipart(s, std::back_inserter(frames))) {
    std::fprintf(stderr, "recv failed\n");
    std::exit(1);
  }
  frames.erase(frames.begin());
  return frames;
}

struct Result {
  double new_per_rt;
  double malloc_per_rt;
};

Result Run(int workers, std::size_t payload_size, int round_trips) {
  zmq::context_t ctx;
  zb::ReactorThread thread;
  std::unique_ptr<zb::ConsensusBroker> broker;
  const std::string endpoint = thread.Invoke([&](zb::Reactor& r) {
    absl::StatusOr<std::unique_ptr<zb::ConsensusBroker>> made =
        zb::ConsensusBroker::Create(r, ctx, {});
    if (!made.ok()) std::exit(1);
    broker = *std::move(made);
    broker->set_log_hook([](zb::LogLevel, std::string_view) {});
    if (!broker->Bind("tcp://127.0.0.1:*").ok()) std::exit(1);
    return broker->endpoints().at(0);
  });

  std::vector<zmq::socket_t> ws;
  for (int i = 0; i < workers; ++i) {
    ws.emplace_back(ctx, zmq::socket_type::dealer);
    ws.back().set(zmq::sockopt::linger, 0);
    ws.back().connect(endpoint);
    zb::Frames ready;
    zb::ccp::AppendReady(ready, "bench", 60000, 5);
    SendBody(ws.back(), ready);
  }
  while (thread.Invoke([&](zb::Reactor&) {
    return broker->worker_count("bench");
  }) != static_cast<std::size_t>(workers)) {
  }
  zmq::socket_t client(ctx, zmq::socket_type::dealer);
  client.set(zmq::sockopt::linger, 0);
  client.connect(endpoint);

  const std::string payload(payload_size, 'p');
  std::uint64_t seq = 0;
  auto round_trip = [&] {
    zb::Frames req;
    zb::ccp::AppendHeader(req, MessageType::kRequest, "bench",
                          {++seq, 0xbe7c4});
    req.push_back(zb::Frame(payload));
    SendBody(client, req);
    for (auto& w : ws) {
      zb::Frames in = RecvBody(w);
      zb::Frames out;
      zb::ccp::AppendHeader(out, MessageType::kReplySuccess,
                            zb::View(in[zb::ccp::kServiceIndex]),
                            {seq, 0xbe7c4});
      out.push_back(zb::Frame(payload));
      SendBody(w, out);
    }
    zb::Frames reply = RecvBody(client);
    if (reply.size() < 2 || zb::View(reply[1])[0] !=
                                static_cast<char>(MessageType::kReplySuccess)) {
      std::fprintf(stderr, "round trip failed\n");
      std::exit(1);
    }
  };

  for (int i = 0; i < 2000; ++i) round_trip();  // warm-up: pools grow here
  thread.Invoke([](zb::Reactor&) { tl_counting = true; });
  const std::uint64_t new0 = g_new_calls.load();
  const std::uint64_t malloc0 = g_malloc_calls.load();
  for (int i = 0; i < round_trips; ++i) round_trip();
  thread.Invoke([](zb::Reactor&) { tl_counting = false; });
  const std::uint64_t news = g_new_calls.load() - new0;
  const std::uint64_t mallocs = g_malloc_calls.load() - malloc0;

  // Self-check: one known allocation on the broker thread must be seen.
  const std::uint64_t probe0 = g_new_calls.load();
  thread.Invoke([](zb::Reactor&) {
    tl_counting = true;
    auto probe = std::make_unique<std::vector<int>>(100);
    tl_counting = false;
  });
  g_probe_allocs += g_new_calls.load() - probe0;
  if (g_new_calls.load() - probe0 < 1) {
    std::fprintf(stderr,
                 "self-check failed: the counter missed an allocation\n");
    std::exit(1);
  }

  thread.Invoke([&](zb::Reactor&) { broker.reset(); });
  return {static_cast<double>(news) / round_trips,
          static_cast<double>(mallocs) / round_trips};
}

}  // namespace

int main(int argc, char** argv) {
  int round_trips = 20000;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.starts_with("--round_trips=")) {
      round_trips = std::atoi(argv[i] + std::strlen("--round_trips="));
    }
  }
  if (round_trips <= 0) round_trips = 20000;
  std::printf(
      "consensus broker heap allocations per round trip, reactor "
      "thread, steady state (%d round trips after 2000 warm-up)\n",
      round_trips);
  std::printf("%-8s %-10s %-14s %s\n", "workers", "payload", "operator new",
              ZB_COUNT_MALLOC ? "malloc (incl. new)" : "malloc (not counted)");
  for (int workers : {1, 4}) {
    for (std::size_t payload : {std::size_t{16}, std::size_t{1024}}) {
      const Result r = Run(workers, payload, round_trips);
      std::printf("%-8d %-10zu %-14.4f %.4f\n", workers, payload, r.new_per_rt,
                  r.malloc_per_rt);
    }
  }
  // Which objects the counted allocations came from (first 256 of them,
  // self-check probes included: those are attributed to this program).
  const int callers = std::min(g_caller_count.load(), kMaxCallers);
  std::map<std::string, int> by_object;
  for (int i = 0; i < callers; ++i) {
    Dl_info info;
    std::string where = "?";
    if (dladdr(g_callers[i], &info) != 0 && info.dli_fname != nullptr) {
      where = info.dli_fname;
    }
    ++by_object[where];
  }
  std::printf(
      "callers of counted allocations (first %d, including %d "
      "self-check probe(s) from this program):\n",
      callers, static_cast<int>(g_probe_allocs));
  for (const auto& [where, count] : by_object) {
    std::printf("  %6d  %s\n", count, where.c_str());
  }
  return 0;
}
