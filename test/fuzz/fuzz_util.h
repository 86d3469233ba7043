// Copyright 2026 The zbrokers Authors.
//
// What the libFuzzer targets share.  The codec fuzzers
// (brokers/{consensus,majordomo}/codec_fuzz.cc) turn an input into frames
// with SplitFrames(); the broker fuzzers (broker_fuzz.cc beside them) share
// the peer set they inject messages from, the sockets that read back what
// the broker sends, the input-driven pieces of a message that do not depend
// on the protocol, and how an invariant breach is reported.  Header only
// (frames and cppzmq, no reactor: a codec fuzzer links zb_frames alone);
// each fuzzer is its own program and includes it once.
//
// Every helper consumes exactly what the fuzzers consumed before these
// helpers existed, in the same order, so that the seed corpora in
// test/fuzz/corpus/ still steer the same paths.
//
// Single-threaded, like libFuzzer's calls into a target.

#ifndef TEST_FUZZ_FUZZ_UTIL_H_
#define TEST_FUZZ_FUZZ_UTIL_H_

#include <errno.h>  // program_invocation_short_name (glibc)
#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <zmq.hpp>

#include "zbrokers/frames/frames.h"

namespace zb::fuzz {

// The input cut into frames at every 0xff 0x00 byte pair (the pair itself
// is dropped), so that the fuzzer can grow and shrink frame counts easily;
// an input without the pair is one frame.
inline zb::Frames SplitFrames(std::string_view input) {
  zb::Frames frames;
  std::size_t start = 0;
  for (std::size_t i = 0; i + 1 < input.size(); ++i) {
    if (input[i] == '\xff' && input[i + 1] == '\0') {
      frames.push_back(zb::Frame(input.substr(start, i - start)));
      start = i + 2;
      ++i;
    }
  }
  frames.push_back(zb::Frame(input.substr(start)));
  return frames;
}

// The identities broker fuzzers' messages come from.  The first kConnected have
// a DEALER connected to the broker, so that what it sends them can be read
// back; the last has none, so that every send to it fails with EHOSTUNREACH
// (ZMQ_ROUTER_MANDATORY), the path of a peer that is gone.
inline constexpr std::size_t kConnected = 4;
inline constexpr std::array<std::string_view, 5> kIdentities = {
    "w0", "w1", "c0", "c1", "x0"};
// Service names from a small set, so that workers and requests meet; one is
// not UTF-8.
inline constexpr std::array<std::string_view, 4> kServices = {
    "echo", "other", "\xfe\xff bad utf8", "s"};
// Operations per input at most.
inline constexpr std::size_t kMaxOps = 256;

// Reports a broken invariant and aborts, so that libFuzzer keeps the input.
[[noreturn]] inline void Fail(const std::string& what) {
  std::fprintf(stderr, "%s: invariant broken: %s\n",
               program_invocation_short_name, what.c_str());
  std::abort();
}

inline void Check(bool ok, const char* what) {
  if (!ok) Fail(what);
}

// The context for the next input.  libzmq closes sockets asynchronously,
// on the context's reaper thread, which on a loaded machine falls behind a
// fast loop of inputs; a fresh context every 128 inputs waits for it
// (zmq_ctx_term) so that closed sockets never pile up to the socket limit.
inline zmq::context_t& NextContext() {
  static zmq::context_t* context = nullptr;
  static int inputs = 0;
  if (context == nullptr || ++inputs % 128 == 0) {
    delete context;
    context = new zmq::context_t;
    context->set(zmq::ctxopt::max_sockets, 4096);
  }
  return *context;
}

// A DEALER with routing id `identity`, connected to `endpoint`; it never
// lingers and queues whatever the broker sends it.
inline std::unique_ptr<zmq::socket_t> ConnectPeer(zmq::context_t& context,
                                                  const std::string& identity,
                                                  const std::string& endpoint) {
  auto dealer =
      std::make_unique<zmq::socket_t>(context, zmq::socket_type::dealer);
  dealer->set(zmq::sockopt::routing_id, identity);
  dealer->set(zmq::sockopt::linger, 0);
  dealer->set(zmq::sockopt::rcvhwm, 0);
  dealer->connect(endpoint);
  return dealer;
}

// recv that retries when a signal interrupts it (libFuzzer's timers
// deliver SIGALRM).  False when nothing is there (dontwait).
inline bool Receive(zmq::socket_t& socket, zmq::message_t& frame,
                    zmq::recv_flags flags) {
  while (true) {
    try {
      return socket.recv(frame, flags).has_value();
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
    }
  }
}

// Calls on_message(frames) for every whole message already queued on
// `socket`, without waiting for more.
template <typename OnMessage>
void ReceiveQueued(zmq::socket_t& socket, OnMessage&& on_message) {
  zb::Frames frames;
  while (true) {
    frames.clear();
    zmq::message_t frame;
    if (!Receive(socket, frame, zmq::recv_flags::dontwait)) return;
    frames.push_back(std::move(frame));
    while (frames.back().more()) {
      zmq::message_t next;
      Check(Receive(socket, next, zmq::recv_flags::none), "recv");
      frames.push_back(std::move(next));
    }
    on_message(frames);
  }
}

// A service name: one of kServices, or (one time in eight) any bytes up to
// 300 long.
inline std::string Service(FuzzedDataProvider& in) {
  if (in.ConsumeIntegralInRange(0, 7) == 0) {
    return in.ConsumeRandomLengthString(300);
  }
  return std::string(in.PickValueInArray(kServices));
}

// Appends min to 3 frames of any bytes (up to 64 each).
inline void AppendBody(FuzzedDataProvider& in, zb::Frames& out, int min) {
  const int n = in.ConsumeIntegralInRange(min, 3);
  for (int i = 0; i < n; ++i) {
    out.push_back(zb::Frame(in.ConsumeRandomLengthString(64)));
  }
}

// Appends 0 to 9 frames of any bytes (up to 32 each): a message of no
// protocol at all.
inline void AppendArbitraryFrames(FuzzedDataProvider& in, zb::Frames& out) {
  const int n = in.ConsumeIntegralInRange(0, 9);
  for (int i = 0; i < n; ++i) {
    out.push_back(zb::Frame(in.ConsumeRandomLengthString(32)));
  }
}

// One time in eight damages one frame of `f` after the first (the
// identity): cuts it, extends it, or changes one byte.
inline void MaybeDamageOneFrame(FuzzedDataProvider& in, zb::Frames& f) {
  if (f.size() <= 1 || in.ConsumeIntegralInRange(0, 7) != 0) return;
  const std::size_t i = in.ConsumeIntegralInRange<std::size_t>(1, f.size() - 1);
  std::string bytes(zb::View(f[i]));
  const int how = in.ConsumeIntegralInRange(0, 2);
  if (how == 0 && !bytes.empty()) {
    bytes.resize(in.ConsumeIntegralInRange<std::size_t>(0, bytes.size() - 1));
  } else if (how == 1) {
    bytes += in.ConsumeRandomLengthString(4);
  } else if (!bytes.empty()) {
    bytes[in.ConsumeIntegralInRange<std::size_t>(0, bytes.size() - 1)] =
        in.ConsumeIntegral<char>();
  }
  f[i] = zb::Frame(bytes);
}

}  // namespace zb::fuzz

#endif  // TEST_FUZZ_FUZZ_UTIL_H_
