// Copyright 2026 The zbrokers Authors.
//
// A child process that zb-latency talks to line by line over its stdin and
// stdout (--placement processes).  The child's stderr is the parent's.
//
//   auto child = zb::latency::Subprocess::Start({"/proc/self/exe",
//                                                "--role=broker", ...});
//   (*child)->WriteLine("quit");
//   absl::StatusOr<std::string> line = (*child)->ReadLine(absl::Seconds(10));
//
// The destructor closes the child's stdin (a well-behaved child exits on
// end of input), waits up to two seconds, then kills it with SIGKILL and
// reaps it: no child outlives its Subprocess.
//
// Writing to a child that died raises SIGPIPE: the program should ignore
// that signal (zb-latency does), so that WriteLine() returns an error.
//
// Thread-compatible: one thread uses a Subprocess at a time.

#ifndef TOOLS_LATENCY_SUBPROCESS_H_
#define TOOLS_LATENCY_SUBPROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace zb::latency {

class Subprocess {
 public:
  // Starts argv[0] with the arguments argv[1..] (no shell, no PATH lookup).
  static absl::StatusOr<std::unique_ptr<Subprocess>> Start(
      const std::vector<std::string>& argv);
  ~Subprocess();

  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Writes `line` and a newline to the child's stdin.
  absl::Status WriteLine(std::string_view line);
  // Reads one line (without its newline) from the child's stdout, waiting at
  // most `timeout`.  DeadlineExceeded on timeout, Unavailable when the child
  // closed its stdout (usually: it exited).
  absl::StatusOr<std::string> ReadLine(std::chrono::milliseconds timeout);

  pid_t pid() const { return pid_; }
  // What the child's name is in messages ("broker process 1234").
  std::string Describe() const;

 private:
  Subprocess() = default;

  pid_t pid_ = -1;
  int to_child_ = -1;    // the child's stdin
  int from_child_ = -1;  // the child's stdout
  std::string name_;
  std::string buffer_;  // read but not yet returned
};

}  // namespace zb::latency

#endif  // TOOLS_LATENCY_SUBPROCESS_H_
