// Copyright 2026 The zbrokers Authors.

#include "tools/latency/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/strings/str_format.h"

extern char** environ;

namespace zb::latency {
namespace {

absl::Status Errno(std::string_view what) {
  return absl::InternalError(
      absl::StrFormat("%s: %s", what, std::strerror(errno)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(
    const std::vector<std::string>& argv) {
  if (argv.empty()) return absl::InvalidArgumentError("no program");
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return Errno("pipe");
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    return Errno("pipe");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears O_CLOEXEC on the duplicates, so only these two survive exec.
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int err = ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr,
                                args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  if (err != 0) {
    ::close(in[1]);
    ::close(out[0]);
    return absl::InternalError(
        absl::StrFormat("cannot start %s: %s", argv[0], std::strerror(err)));
  }
  std::unique_ptr<Subprocess> p(new Subprocess());
  p->pid_ = pid;
  p->to_child_ = in[1];
  p->from_child_ = out[0];
  p->name_ = argv.size() > 1 ? argv[1] : argv[0];
  return p;
}

Subprocess::~Subprocess() {
  if (to_child_ >= 0) ::close(to_child_);
  if (pid_ > 0) {
    // End of input asks the child to exit; give it a moment, then insist.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(2);
    bool reaped = false;
    while (std::chrono::steady_clock::now() < deadline) {
      int status;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_ || (r < 0 && errno == ECHILD)) {
        reaped = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!reaped) {
      ::kill(pid_, SIGKILL);
      int status;
      ::waitpid(pid_, &status, 0);
    }
  }
  if (from_child_ >= 0) ::close(from_child_);
}

std::string Subprocess::Describe() const {
  return absl::StrFormat("child %s (pid %d)", name_, pid_);
}

absl::Status Subprocess::WriteLine(std::string_view line) {
  std::string data(line);
  data.push_back('\n');
  std::size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(to_child_, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(absl::StrFormat(
          "%s: write failed: %s", Describe(), std::strerror(errno)));
    }
    off += static_cast<std::size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Subprocess::ReadLine(
    std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return absl::DeadlineExceededError(
          absl::StrFormat("%s did not answer in time", Describe()));
    }
    pollfd pfd{from_child_, POLLIN, 0};
    const int r = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (r < 0 && errno != EINTR) return Errno("poll");
    if (r <= 0) continue;
    char buf[65536];
    const ssize_t n = ::read(from_child_, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("read");
    }
    if (n == 0) {
      return absl::UnavailableError(
          absl::StrFormat("%s exited unexpectedly", Describe()));
    }
    buffer_.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace zb::latency
