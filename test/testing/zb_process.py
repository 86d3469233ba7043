# Copyright 2026 The zbrokers Authors.
"""The process harness of the suite's Python tests: zb-broker (and any other
program) as a child process of the test, its log lines collected as they
come, waits that always end, kill -9 by PID, and a scrape of /metrics.

A test script finds this module beside its own folder tree:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "..", "test", "testing"))   # from brokers/daemon/
    import zb_process as zp

Contract:
  * Every child gets PR_SET_PDEATHSIG(SIGKILL): none outlives the test, even
    when the test itself is killed.  kill_all() kills and reaps every child
    not yet reaped; call it in the script's `finally`.
  * Processes are only ever signalled by the PID this module started.
  * Every wait takes a timeout and returns None (or raises Failure) when it
    runs out; nothing here blocks without bound.
  * Only 127.0.0.1 is used (the metrics scrape).
  * Not thread-safe across one Proc except for the reader thread that this
    module runs itself: a Proc is used by the test's main thread.

Failure is the exception every test script reports as a failed check;
check(cond, what) raises it.
"""

import ctypes
import os
import re
import signal
import socket
import sys
from signal import SIGTERM
import subprocess
import threading
import time

PYTHON = "/usr/bin/python3"

_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


def die_with_parent():
    """preexec_fn for subprocess: the child gets SIGKILL when we die."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class Failure(Exception):
    """A failed check in a test."""


def check(cond, what):
    if not cond:
        raise Failure(what)


def wait_for(pred, timeout, what, period=0.02):
    """Polls pred() until it is true; raises Failure(what) after timeout
    seconds."""
    deadline = time.monotonic() + timeout
    while not pred():
        check(time.monotonic() < deadline, what)
        time.sleep(period)


# --- child processes ----------------------------------------------------------

_live = []  # every Proc not yet reaped


class Proc:
    """A child process whose output lines are collected by a thread.

    By default stdout and stderr are one stream of text lines (`lines`).
    With stdout_apart=True the lines are stderr's, kept as bytes in
    `raw_lines` as well (for tests that check the exact bytes a log line
    holds), and stdout is read whole into `out` (bytes).  max_lines bounds
    what is kept of a chatty child (later lines are dropped)."""

    def __init__(self, argv, name=None, env=None, max_lines=None,
                 stdout_apart=False):
        self.argv = [str(a) for a in argv]
        self.name = name or os.path.basename(self.argv[0])
        self.lines = []
        self.raw_lines = []
        self.out = b""
        self._max_lines = max_lines
        self.cond = threading.Condition()
        if stdout_apart:
            self.p = subprocess.Popen(self.argv, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, env=env,
                                      preexec_fn=die_with_parent)
            self._readers = [
                threading.Thread(target=self._read_raw, args=(self.p.stderr,),
                                 daemon=True),
                threading.Thread(target=self._read_out, daemon=True)]
        else:
            self.p = subprocess.Popen(self.argv, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True,
                                      errors="replace", env=env,
                                      preexec_fn=die_with_parent)
            self._readers = [threading.Thread(target=self._read, daemon=True)]
        self.pid = self.p.pid
        _live.append(self)
        for r in self._readers:
            r.start()

    def _keep(self, line, raw=None):
        with self.cond:
            if self._max_lines is None or len(self.lines) < self._max_lines:
                self.lines.append(line)
                if raw is not None:
                    self.raw_lines.append(raw)
            self.cond.notify_all()

    def _read(self):
        for line in self.p.stdout:
            self._keep(line.rstrip("\n"))
        with self.cond:
            self.cond.notify_all()

    def _read_raw(self, stream):
        for raw in stream:
            raw = raw.rstrip(b"\n")
            self._keep(raw.decode("utf-8", "replace"), raw)
        with self.cond:
            self.cond.notify_all()

    def _read_out(self):
        self.out = self.p.stdout.read()

    def text(self):
        with self.cond:
            return "\n".join(self.lines)

    def tail(self, n=30):
        with self.cond:
            return "\n".join(self.lines[-n:])

    def line_count(self):
        with self.cond:
            return len(self.lines)

    def describe(self):
        return f"--- {self.name}: {' '.join(self.argv)}\n{self.text()}"

    def wait_line(self, pattern, timeout=10, after=0):
        """The first match of `pattern` in lines[after:], waiting up to
        timeout seconds; None when the process ended (and all its output
        was read) or the time ran out."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self.cond:
            seen = after
            while True:
                for line in self.lines[seen:]:
                    m = rx.search(line)
                    if m:
                        return m
                seen = max(seen, len(self.lines))
                left = deadline - time.monotonic()
                if left <= 0 or (self.p.poll() is not None and
                                 not self._readers[0].is_alive()):
                    return None
                self.cond.wait(min(left, 0.1))

    def alive(self):
        return self.p.poll() is None

    def wait(self, timeout):
        """The exit code, or None if still running after timeout seconds."""
        try:
            code = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        for r in self._readers:
            r.join(5)
        if self in _live:
            _live.remove(self)
        return code

    def signal(self, sig):
        if self.p.poll() is None:
            os.kill(self.pid, sig)

    def stop(self, sig=SIGTERM, timeout=10):
        """Sends `sig` and waits for the exit code; after timeout seconds
        kills the process (SIGKILL) and returns None."""
        self.signal(sig)
        code = self.wait(timeout)
        if code is None:
            self.kill9()
        return code

    def kill9(self):
        """kill -9 by PID, then reap."""
        self.signal(signal.SIGKILL)
        self.wait(10)

    kill = kill9


def kill_all():
    """Kills (SIGKILL) and reaps every child not reaped yet."""
    for p in list(_live):
        p.kill9()


def rss_kib(pid):
    """VmRSS of `pid` in KiB (None when the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


# --- zb-broker ----------------------------------------------------------------

# The daemon's first line that settles a start: "ready: ..." or an error.
_SETTLED = r"\bready:|\berror\b|zb-broker: "


class ZbBroker(Proc):
    """zb-broker as a child process.  The daemon logs what it bound:
    "KIND: listening on ENDPOINT[ (CURVE)]" for each broker and
    "metrics: listening on http://HOST:PORT/metrics", then "ready: ..."."""

    def __init__(self, exe, args, name="zb-broker", **kw):
        super().__init__([exe] + list(args), name, **kw)
        self.exe = exe
        self._kw = kw

    @classmethod
    def start(cls, exe, args, name="zb-broker", timeout=20, busy_for=0,
              **kw):
        """Starts zb-broker and waits until it is ready().  When it fails
        because a port is still in use (a predecessor on the same port,
        closed by the kernel a moment later), tries again for up to
        busy_for seconds."""
        deadline = time.monotonic() + busy_for
        while True:
            b = cls(exe, args, name, **kw)
            m = b.wait_line(_SETTLED, timeout)
            if m is not None and "ready:" in m.group(0):
                return b
            text = b.text()
            b.kill9()
            check("in use" in text and time.monotonic() < deadline,
                  "zb-broker did not become ready:\n" + b.describe())
            time.sleep(0.2)

    def restart(self, args=None, name=None, busy_for=20, timeout=20):
        """kill -9 (no drain, no goodbyes), then a new ZbBroker started with
        `args` (by default the same ones) and returned once ready; a port
        the old process held is waited for up to busy_for seconds."""
        self.kill9()
        return type(self).start(self.exe,
                                self.argv[1:] if args is None else args,
                                name or self.name, timeout, busy_for,
                                **self._kw)

    def ready(self, timeout=20):
        """Waits for the "ready:" line; Failure if an error came first."""
        m = self.wait_line(_SETTLED, timeout)
        check(m is not None and "ready:" in m.group(0),
              "zb-broker did not become ready:\n" + self.describe())
        return self

    def endpoint(self, kind, curve=None, timeout=1):
        """The endpoint broker `kind` ("majordomo", "consensus") is
        listening on.  curve=True/False: only a CURVE / plaintext one."""
        suffix = "" if curve is None else (r" \(CURVE\)$" if curve else "$")
        m = self.wait_line(kind + r": listening on (\S+)" + suffix, timeout)
        check(m is not None, f"no {kind} endpoint logged:\n" + self.describe())
        return m.group(1)

    def port(self, kind, timeout=1):
        """The TCP port of endpoint(kind)."""
        return int(self.endpoint(kind, timeout=timeout).rsplit(":", 1)[1])

    def metrics_port(self, timeout=1):
        m = self.wait_line(r"metrics: listening on http://[^:]+:(\d+)/",
                           timeout)
        check(m is not None, "no metrics endpoint logged:\n" + self.describe())
        return int(m.group(1))

    def metrics(self, timeout=10):
        """The /metrics page as bytes (Failure unless HTTP 200)."""
        return metrics_page(self.metrics_port(), timeout=timeout)

    def check_no_deprecated_names(self):
        """Failure when the daemon warned that a flag or key it was given
        is a deprecated alias (docs/glossary.md): a harness that means to
        test the current names must use them.  Call after ready()."""
        with self.cond:
            warned = [line for line in self.lines
                      if re.search(r" is deprecated, use ", line)]
        check(not warned, "zb-broker was given deprecated names:\n" +
              "\n".join(warned))


# --- HTTP and /metrics ----------------------------------------------------------

def http_get(port, path="/metrics", timeout=10):
    """GET http://127.0.0.1:port/path over a plain HTTP/1.1 socket:
    (head, body), head the status line and headers as text, body the bytes
    (de-chunked, not decoded: a strict parser sees what a scraper gets)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  "Connection: close\r\n\r\n".encode())
        chunks = []
        while True:
            b = s.recv(1 << 16)
            if not b:
                break
            chunks.append(b)
    raw = b"".join(chunks)
    head, _, body = raw.partition(b"\r\n\r\n")
    head = head.decode("latin-1")
    if "transfer-encoding: chunked" in head.lower():
        out, rest = [], body
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.strip() or b"0", 16)
            if size == 0:
                break
            out.append(rest[:size])
            rest = rest[size + 2:]
        body = b"".join(out)
    return head, body


def metrics_page(port, path="/metrics", timeout=10):
    """The body of GET /metrics as bytes; Failure unless HTTP 200."""
    head, body = http_get(port, path, timeout)
    check(head.startswith("HTTP/1.1 200"), f"GET {path}: " + head[:200])
    return body


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)')


def parse_metrics(text):
    """A lenient reader of the Prometheus text format:
    ({(name, frozenset(labels)): value}, {family: type}).  (The strict
    parsers that check the format itself are in the tests about it.)"""
    samples, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, fam, typ = line.split(None, 3)
            types[fam] = typ
            continue
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        check(m is not None, "unparseable metrics line: " + line)
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"',
                                      m.group(2) or ""))
        samples[(m.group(1), labels)] = float(m.group(3))
    return samples, types


def sample(samples, name, **labels):
    """One value from parse_metrics()' samples, None if absent."""
    return samples.get((name, frozenset(labels.items())))


def live():
    """The children not reaped yet (e.g. to print their output on a
    failure before kill_all())."""
    return list(_live)


def run_scenario(name, scenario, *args, errors=(Failure,)):
    """Runs scenario(*args) as one test: returns 0, or 1 after printing the
    failure and the output of every child still running when one of
    `errors` was raised.  Every child is killed and reaped either way."""
    try:
        scenario(*args)
    except errors as e:
        print(f"FAIL {name}: {e}", file=sys.stderr)
        for p in live():
            print(p.describe(), file=sys.stderr)
        return 1
    finally:
        kill_all()
    return 0
