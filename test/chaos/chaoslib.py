# Copyright 2026 The zbrokers Authors.
"""Shared parts of the chaos suite (chaos_test.py): zb-broker restarted on
the same ports, a strict parser for the Prometheus text format and a
sampler that watches RSS and /metrics in the background.  Child processes,
kill -9 by PID, the RSS read from /proc and the HTTP scrape are the suite's
shared harness, test/testing/zb_process.py.

Everything here talks to 127.0.0.1 only.  Every child gets
PR_SET_PDEATHSIG(SIGKILL), so that none outlives the test even if the test
itself is killed; kill_all() kills and reaps the rest at the end.
"""

import math
import os
import re
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testing"))
import zb_process as zp  # noqa: E402  (the shared process harness)
# Re-exported: chaos_test.py uses them as cl.NAME.
from zb_process import (PYTHON, Failure, check, kill_all,  # noqa: E402,F401
                        rss_kib)


# --- processes ----------------------------------------------------------------

class Proc(zp.Proc):
    """A child process; at most 20,000 of its lines are kept (the peers
    can be chatty)."""

    def __init__(self, argv, name, env=None):
        super().__init__(argv, name, env=env, max_lines=20000)


# --- zb-broker ----------------------------------------------------------------

class Broker:
    """zb-broker with a Majordomo and a consensus endpoint and /metrics on
    127.0.0.1; restart() kills it with SIGKILL and starts it again on the
    same three ports."""

    def __init__(self, exe, extra=()):
        self.proc = zp.ZbBroker.start(exe, self._args(0, 0, 0, extra),
                                      max_lines=20000)
        self.extra = list(extra)
        self.starts = 0
        self._started()

    @staticmethod
    def _args(mdp_port, ccp_port, metrics_port, extra):
        return ["--majordomo", f"tcp://127.0.0.1:{mdp_port or '*'}",
                "--consensus", f"tcp://127.0.0.1:{ccp_port or '*'}",
                "--metrics", f"127.0.0.1:{metrics_port}",
                "--stats-interval", "0s"] + list(extra)

    def _started(self):
        self.proc.check_no_deprecated_names()
        self.starts += 1
        self.mdp_port = self.proc.port("majordomo")
        self.ccp_port = self.proc.port("consensus")
        self.metrics_port = self.proc.metrics_port()

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
        self.proc = self.proc.restart(self._args(
            self.mdp_port, self.ccp_port, self.metrics_port, self.extra))
        self._started()

    def stop(self):
        self.proc.kill9()


# --- /metrics -------------------------------------------------------------------

def http_get(port, path="/metrics", timeout=5):
    """GET over plain HTTP/1.1; returns the body as bytes (not decoded, so
    that the strict parser sees exactly what a scraper gets)."""
    return zp.metrics_page(port, path, timeout)


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


def service_labels(samples, family):
    """{broker: set of service label values} of one family's samples."""
    out = {}
    for (name, labels) in samples:
        if name != family:
            continue
        d = dict(labels)
        if "service" in d:
            out.setdefault(d.get("broker"), set()).add(d["service"])
    return out


def service_label_problems(samples, max_per_broker):
    """What is wrong with a page's service labels: more than
    `max_per_broker` values for one broker (the daemon's cap is per broker:
    metrics_max_services labels of their own plus _other), or zb_workers
    and zb_queue_depth naming different services for one broker (the page
    would not be one snapshot)."""
    problems = []
    workers = service_labels(samples, "zb_workers")
    queued = service_labels(samples, "zb_queue_depth")
    for broker in sorted(set(workers) | set(queued), key=str):
        w = workers.get(broker, set())
        q = queued.get(broker, set())
        n = len(w | q)
        if max_per_broker is not None and n > max_per_broker:
            problems.append(f"/metrics has {n} service label values for "
                            f"broker {broker} (cap {max_per_broker})")
        if w != q:
            problems.append(f"/metrics: broker {broker}'s zb_workers and "
                            f"zb_queue_depth name different services "
                            f"({len(w - q)} only in zb_workers, "
                            f"{len(q - w)} only in zb_queue_depth)")
    return problems


class Sampler:
    """Samples the broker's RSS every `period` seconds and parses /metrics
    strictly every `scrape_period`, in a thread.  Failures (an invalid page,
    more service labels for one broker than `max_service_labels`, a page
    that is not one snapshot) are collected, not raised, so the run goes on
    and reports them all."""

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
        for problem in service_label_problems(m, self.max_service_labels):
            if len(self.failures) < 5:
                self.failures.append(problem)

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
