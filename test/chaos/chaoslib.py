# Copyright 2026 The zbrokers Authors.
"""Shared parts of the chaos suite (chaos_test.py): child processes started
and killed by PID, zb-broker start and restart on the same ports, the
broker's RSS from /proc, a strict parser for the Prometheus text format and
a sampler that watches RSS and /metrics in the background.

Everything here talks to 127.0.0.1 only.  Every child gets
PR_SET_PDEATHSIG(SIGKILL), so that none outlives the test even if the test
itself is killed; kill_all() kills and reaps the rest at the end.
"""

import ctypes
import math
import os
import re
import signal
import socket
import subprocess
import threading
import time

PYTHON = "/usr/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))

_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


# --- processes ----------------------------------------------------------------

_live = []


class Proc:
    """A child process; its stdout+stderr lines are collected by a thread."""

    def __init__(self, argv, name, env=None):
        self.name = name
        self.argv = [str(a) for a in argv]
        self.lines = []
        self.cond = threading.Condition()
        self.p = subprocess.Popen(self.argv, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True,
                                  errors="replace", env=env,
                                  preexec_fn=_die_with_parent)
        self.pid = self.p.pid
        _live.append(self)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.p.stdout:
            with self.cond:
                # Keep memory bounded for chatty children.
                if len(self.lines) < 20000:
                    self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def text(self):
        with self.cond:
            return "\n".join(self.lines)

    def wait_line(self, pattern, timeout):
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self.cond:
            seen = 0
            while True:
                for line in self.lines[seen:]:
                    m = rx.search(line)
                    if m:
                        return m
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if left <= 0 or (self.p.poll() is not None and
                                 not self.reader.is_alive()):
                    return None
                self.cond.wait(min(left, 0.1))

    def alive(self):
        return self.p.poll() is None

    def kill9(self):
        """kill -9 by PID, then reap."""
        if self.p.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
        self.p.wait()
        if self in _live:
            _live.remove(self)

    def wait(self, timeout):
        try:
            code = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self.reader.join(5)
        if self in _live:
            _live.remove(self)
        return code

    def tail(self, n=30):
        with self.cond:
            return "\n".join(self.lines[-n:])


def kill_all():
    for p in list(_live):
        p.kill9()


# --- zb-broker ----------------------------------------------------------------

class Broker:
    """zb-broker with a Majordomo and a consensus endpoint and /metrics on
    127.0.0.1; restart() kills it with SIGKILL and starts it again on the
    same three ports."""

    def __init__(self, exe, extra=()):
        self.exe = exe
        self.extra = list(extra)
        self.mdp_port = self.ccp_port = self.metrics_port = 0
        self.proc = None
        self.starts = 0
        self._start()

    def _start(self):
        args = [self.exe,
                "--majordomo", f"tcp://127.0.0.1:{self.mdp_port or '*'}",
                "--consensus", f"tcp://127.0.0.1:{self.ccp_port or '*'}",
                "--metrics", f"127.0.0.1:{self.metrics_port}",
                "--stats-interval", "0s"] + self.extra
        deadline = time.monotonic() + 20
        while True:
            proc = Proc(args, "zb-broker")
            m = proc.wait_line(r"\bready:|\berror\b|zb-broker: ", 20)
            if m is not None and "ready:" in m.group(0):
                break
            # The old process's ports can take a moment to be free again.
            text = proc.text()
            proc.kill9()
            check("in use" in text and time.monotonic() < deadline,
                  "zb-broker did not start:\n" + text[-3000:])
            time.sleep(0.2)
        self.proc = proc
        self.starts += 1
        self.mdp_port = int(proc.wait_line(
            r"majordomo: listening on tcp://[^:]+:(\d+)", 1).group(1))
        self.ccp_port = int(proc.wait_line(
            r"consensus: listening on tcp://[^:]+:(\d+)", 1).group(1))
        self.metrics_port = int(proc.wait_line(
            r"metrics: listening on http://[^:]+:(\d+)/", 1).group(1))

    @property
    def pid(self):
        return self.proc.pid

    @property
    def mdp(self):
        return f"tcp://127.0.0.1:{self.mdp_port}"

    @property
    def ccp(self):
        return f"tcp://127.0.0.1:{self.ccp_port}"

    def restart(self):
        self.proc.kill9()
        self._start()

    def stop(self):
        self.proc.kill9()


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


# --- /metrics -------------------------------------------------------------------

def http_get(port, path="/metrics", timeout=5):
    """GET over plain HTTP/1.1; returns the body as bytes (not decoded, so
    that the strict parser sees exactly what a scraper gets)."""
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
    check(head.startswith(b"HTTP/1.1 200"),
          "metrics GET: " + head[:200].decode("latin-1"))
    if b"transfer-encoding: chunked" in head.lower():
        out, rest = [], body
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.strip() or b"0", 16)
            if size == 0:
                break
            out.append(rest[:size])
            rest = rest[size + 2:]
        body = b"".join(out)
    return body


_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
_TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def _value(text, where):
    # The format takes what Go's strconv.ParseFloat takes, so the special
    # values are case-insensitive (prometheus-cpp writes "Nan").
    special = text.lower().lstrip("+")
    if special in ("inf", "infinity"):
        return math.inf
    if special in ("-inf", "-infinity"):
        return -math.inf
    if special == "nan":
        return math.nan
    check(re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text)
          is not None, f"{where}: bad value {text!r}")
    return float(text)


def parse_metrics_strict(body):
    """Parses the Prometheus text exposition format (version 0.0.4) as a
    strict scraper does, raising Failure on the first breach: the page must
    be UTF-8; every line is blank, a comment, # HELP / # TYPE, or a sample
    `name{label="value",...} value [timestamp]`; names and label names match
    the format's grammar; label values use only the escapes \\\\, \\" and
    \\n; a family's TYPE comes before its samples and once; no series
    appears twice.  Returns {(name, ((label, value), ...)): float}."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Failure(f"/metrics is not valid UTF-8 at byte {e.start}: "
                      f"{body[max(0, e.start - 60):e.start + 20]!r}")
    samples = {}
    typed = {}
    seen_samples_of = set()
    for n, line in enumerate(text.split("\n"), 1):
        where = f"/metrics line {n}"
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 2 and parts[1] in ("HELP", "TYPE"):
                check(len(parts) >= 3 and _NAME.match(parts[2]),
                      f"{where}: bad {parts[1]} line {line!r}")
                if parts[1] == "TYPE":
                    check(len(parts) == 4 and parts[3] in _TYPES,
                          f"{where}: bad TYPE {line!r}")
                    check(parts[2] not in typed,
                          f"{where}: second TYPE for {parts[2]}")
                    check(parts[2] not in seen_samples_of,
                          f"{where}: TYPE after samples of {parts[2]}")
                    typed[parts[2]] = parts[3]
            continue
        i = 0
        while i < len(line) and line[i] not in "{ \t":
            i += 1
        name = line[:i]
        check(_NAME.match(name), f"{where}: bad metric name {name!r}")
        labels = []
        if i < len(line) and line[i] == "{":
            i += 1
            while True:
                while i < len(line) and line[i] in " \t":
                    i += 1
                check(i < len(line), f"{where}: unterminated labels")
                if line[i] == "}":
                    i += 1
                    break
                j = line.find("=", i)
                check(j > 0, f"{where}: label without '='")
                lname = line[i:j].strip()
                check(_LABEL.match(lname), f"{where}: bad label {lname!r}")
                check(j + 1 < len(line) and line[j + 1] == '"',
                      f"{where}: label value not quoted")
                k = j + 2
                value = []
                while True:
                    check(k < len(line), f"{where}: unterminated label value")
                    c = line[k]
                    if c == "\\":
                        check(k + 1 < len(line) and line[k + 1] in '\\"n',
                              f"{where}: bad escape in label value "
                              f"{line[k:k + 2]!r}")
                        value.append({"\\": "\\", '"': '"',
                                      "n": "\n"}[line[k + 1]])
                        k += 2
                    elif c == '"':
                        k += 1
                        break
                    else:
                        value.append(c)
                        k += 1
                check(lname not in dict(labels),
                      f"{where}: label {lname} twice")
                labels.append((lname, "".join(value)))
                i = k
                while i < len(line) and line[i] in " \t":
                    i += 1
                check(i < len(line) and line[i] in ",}",
                      f"{where}: expected ',' or '}}' after a label")
                if line[i] == ",":
                    i += 1
        rest = line[i:].split()
        check(1 <= len(rest) <= 2, f"{where}: expected value [timestamp]")
        v = _value(rest[0], where)
        if len(rest) == 2:
            check(re.fullmatch(r"-?\d+", rest[1]) is not None,
                  f"{where}: bad timestamp")
        family = name
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and name[:-len(suffix)] in typed:
                family = name[:-len(suffix)]
        seen_samples_of.add(family)
        key = (name, tuple(sorted(labels)))
        check(key not in samples, f"{where}: series {key} twice")
        samples[key] = v
    return samples


def service_label_count(samples):
    return len({v for (_, labels) in samples for (k, v) in labels
                if k == "service"})


class Sampler:
    """Samples the broker's RSS every `period` seconds and parses /metrics
    strictly every `scrape_period`, in a thread.  Failures (an invalid page,
    more service labels than `max_services_labels`) are collected, not
    raised, so the run goes on and reports them all."""

    def __init__(self, broker, period=0.1, scrape_period=0.5,
                 max_service_labels=None):
        self.broker = broker
        self.period = period
        self.scrape_period = scrape_period
        self.max_service_labels = max_service_labels
        self.peak_kib = 0
        self.samples = []  # (t, kib)
        self.scrapes = 0
        self.scrape_errors = 0  # connection errors (e.g. during a restart)
        self.failures = []
        self.last_metrics = {}
        self.max_series = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        next_scrape = 0.0
        t0 = time.monotonic()
        while not self._stop.is_set():
            kib = rss_kib(self.broker.pid)
            now = time.monotonic()
            if kib is not None:
                self.peak_kib = max(self.peak_kib, kib)
                self.samples.append((now - t0, kib))
            if now >= next_scrape:
                next_scrape = now + self.scrape_period
                self.scrape_once()
            self._stop.wait(self.period)

    def scrape_once(self):
        try:
            body = http_get(self.broker.metrics_port)
        except (OSError, Failure):
            self.scrape_errors += 1
            return
        try:
            m = parse_metrics_strict(body)
        except Failure as e:
            if len(self.failures) < 5:
                self.failures.append(str(e))
            return
        self.scrapes += 1
        self.last_metrics = m
        self.max_series = max(self.max_series, len(m))
        n = service_label_count(m)
        if self.max_service_labels is not None and \
                n > self.max_service_labels and len(self.failures) < 5:
            self.failures.append(f"/metrics has {n} service label values "
                                 f"(cap {self.max_service_labels})")

    def stop(self):
        self._stop.set()
        self._t.join(10)


def metric(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))))


# --- reporting ------------------------------------------------------------------

def table(rows, headers):
    widths = [max(len(str(r[i])) for r in rows + [headers])
              for i in range(len(headers))]
    line = lambda r: "  ".join(str(c).rjust(w) if i else str(c).ljust(w)
                               for i, (c, w) in enumerate(zip(r, widths)))
    return "\n".join([line(headers), line(["-" * w for w in widths])] +
                     [line(r) for r in rows])


def mib(kib):
    return "-" if kib is None else f"{kib / 1024:.1f}"
