# Copyright 2026 The zbrokers Authors.
"""The request streams of the HA process tests that drive the Python
package's own clients: ha_client_process_test.py (a fail-over pair,
endpoint_policy "failover") and many_brokers_process_test.py (independent
brokers, "spread").  Kept here, not in either script, so that what "every
request ended exactly once" means is written once.

Contract:
  * RecordingWorker is ha_process_test.Worker (raw pyzmq, one session per
    broker) that also records which session (the index of the broker in
    the list it was given) served each request body.
  * A Stream sends `total` requests with unique bodies "PROTOCOL-N",
    `window` at a time, from the Clients reactor thread only; it stops at
    each hold point (HOLDS, fractions of `total`) until the test's main
    thread calls release(step).  Every outcome the client reports is
    counted once: ok (its own body back), foreign (a success with any other
    body), timeouts, failed; a second outcome for one request counts as a
    duplicate and nothing else.
  * Clients runs both package clients (MdpClient, ConsensusClient) on one
    Reactor in its own thread, on the endpoint_policy it is given (by
    default the clients' own, "failover"); an exception there is kept in
    `error` for the main thread to report, never raised on that thread.
  * check_ended_once(stream) is the end-of-run check both tests make of
    every stream; each test adds its own (how many must have succeeded,
    which timeouts are allowed).
  * shut_down(...) belongs in the scenario's `finally`: it releases every
    hold point (a held stream would never finish), stops the clients'
    reactor and then the workers, and terminates the zmq context; every
    join is bounded.
  * add_arguments(ap, ...) defines the flags both scripts take, and
    use_library(args) applies --lib and --pythonpath; call it before the
    Clients thread imports zbrokers.
"""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "testing"))
import ha_process_test as ha  # noqa: E402  (the raw workers)
import zb_process as zp  # noqa: E402


class RecordingWorker(ha.Worker):
    """ha_process_test's raw echo worker (a session per broker) that
    records which broker (0 primary, 1 backup) served each body."""

    def __init__(self, *args):
        super().__init__(*args)
        self.served_by = {}  # body -> list of session indexes
        self.lock = threading.Lock()

    def answer(self, s, frames):
        cmd = b"\x02" if self.protocol == "mdp" else b"\x03"
        if len(frames) >= 4 and frames[2] == cmd:
            with self.lock:
                self.served_by.setdefault(frames[-1], []).append(
                    self.sessions.index(s))
        super().answer(s, frames)

    def brokers_of(self, body):
        with self.lock:
            return list(self.served_by.get(body, ()))


# Hold points, as fractions of the requests; each test releases them after
# its own steps (ha_client_process_test: after kill 1, after the old primary
# is back (before kill 2), after kill 2).
HOLDS = (1 / 2, 2 / 3, 5 / 6)


class Stream:
    """One client of the package with `window` requests in flight, `total`
    in all.  Runs on the Clients reactor thread."""

    def __init__(self, protocol, client, total, window, request):
        self.protocol, self.client = protocol, client
        self.total, self.window = total, window
        self.request = request  # request(body, on_done)
        self.sent = 0
        self.in_flight = set()
        self.done = 0
        self.ok = 0
        self.failed = 0
        self.timeouts = 0
        self.duplicates = 0   # a second outcome for one request
        self.foreign = 0      # a success that is not the request's own body
        self.reasons = {}
        self.outcomes = []    # (monotonic time, body, ok)
        # The stream stops sending at each hold point until the test
        # releases it, so that requests are always sent after each kill
        # however fast the rest ran: HOLDS[i] is released after step i.
        self.holds = {int(total * f): threading.Event() for f in HOLDS}
        self.held_at = None

    def release(self, step):
        self.holds[int(self.total * HOLDS[step])].set()

    def held(self, step):
        return self.held_at == int(self.total * HOLDS[step])

    def pump(self):
        while self.sent < self.total and len(self.in_flight) < self.window:
            hold = self.holds.get(self.sent)
            if hold is not None and not hold.is_set():
                self.held_at = self.sent
                return
            body = f"{self.protocol}-{self.sent}".encode()
            self.sent += 1
            self.in_flight.add(body)
            self.request(body, lambda r, body=body: self.ended(body, r))

    def ended(self, body, result):
        if body not in self.in_flight:
            self.duplicates += 1
            return
        self.in_flight.discard(body)
        self.done += 1
        good = result.ok and result.frames == [body]
        if result.ok and not good:
            self.foreign += 1
        elif good:
            self.ok += 1
        elif result.timed_out:
            self.timeouts += 1
        else:
            self.failed += 1
        if not result.ok:
            self.reasons[result.reason] = self.reasons.get(result.reason,
                                                           0) + 1
        self.outcomes.append((time.monotonic(), body, good))
        self.pump()

    def first_success_from(self, worker, index, after):
        for t, body, good in list(self.outcomes):
            if t >= after and good and index in worker.brokers_of(body):
                return t
        return None


class Clients(threading.Thread):
    """The package's ConsensusClient and MdpClient, each given the list of
    brokers, on one reactor in this thread.  endpoint_policy None leaves
    the clients' default, which must be "failover" (the pair's test checks
    that default); "spread" is passed to both."""

    def __init__(self, args, mdp_endpoints, ccp_endpoints,
                 endpoint_policy=None):
        super().__init__(daemon=True)
        self.args = args
        self.mdp_endpoints, self.ccp_endpoints = mdp_endpoints, ccp_endpoints
        self.endpoint_policy = endpoint_policy
        self.streams = []
        self.reactor = None
        self.ready = threading.Event()
        self.error = None
        self.failovers = {}  # protocol -> the client's count, kept fresh

    def run(self):
        import zbrokers
        a = self.args
        try:
            with zbrokers.Reactor() as r:
                self.reactor = r
                policy = ({} if self.endpoint_policy is None else
                          {"endpoint_policy": self.endpoint_policy})
                mdp = zbrokers.MdpClient(r, self.mdp_endpoints,
                                         timeout=a.timeout,
                                         retries=a.retries, **policy)
                ccp = zbrokers.ConsensusClient(r, self.ccp_endpoints,
                                               **policy)
                expected = self.endpoint_policy or "failover"
                assert mdp.endpoint_policy == expected
                assert ccp.endpoint_policy == expected
                self.streams = [
                    Stream("mdp", mdp, a.requests, a.window,
                           lambda body, done: mdp.request(
                               b"echo", [body], done)),
                    Stream("ccp", ccp, a.requests, a.window,
                           lambda body, done: ccp.request(
                               b"echo", [body], done, timeout=a.timeout,
                               retries=a.retries,
                               # docs/ha.md: what a pair's consensus
                               # clients should set, in case the broker
                               # that takes over has expired the workers.
                               retry_no_workers=True))]

                def tick():
                    for s in self.streams:
                        self.failovers[s.protocol] = s.client.failovers
                        s.pump()
                tick()
                r.every(0.01, tick)
                self.ready.set()
                r.run()
                # Closing a client ends what is still open (cancelled /
                # client-closed): counted like any other outcome.
                mdp.close()
                ccp.close()
        except Exception as e:  # reported by the main thread
            self.error = repr(e)
        finally:
            self.ready.set()

    def finished(self):
        return all(s.done == s.total for s in self.streams)

    def stop(self):
        if self.reactor is not None:
            try:
                self.reactor.stop()
            except Exception:
                pass


def check_ended_once(s, note=""):
    """Prints stream `s`'s totals and checks that every request ended
    exactly once and that no success carried another request's body.
    `note` is printed before the reasons (e.g. "failovers 2; ")."""
    print(f"{s.protocol}: {s.total} requests: {s.ok} answered with "
          f"their own body, {s.failed} failed, {s.timeouts} timed "
          f"out, {s.foreign} foreign replies, {s.duplicates} "
          f"duplicate outcomes; {note}reasons {s.reasons}", flush=True)
    zp.check(s.done == s.total, f"{s.protocol}: {s.done} ended")
    zp.check(s.duplicates == 0,
             f"{s.protocol}: {s.duplicates} duplicate outcomes")
    zp.check(s.foreign == 0, f"{s.protocol}: {s.foreign} foreign replies")


def shut_down(clients, workers, stop, ctx):
    """Ends a scenario's clients and workers, after a failure too: the
    hold points are released first, as a stream held at one would keep
    its client open."""
    for s in clients.streams:
        for hold in s.holds.values():
            hold.set()
    clients.stop()
    clients.join(10)
    stop.set()
    for w in workers.values():
        w.join(5)
    ctx.term()


def add_arguments(ap, retries, retries_help):
    """The flags of both scripts; --retries differs in its default (and
    what it means with the script's endpoint_policy)."""
    ap.add_argument("--broker", required=True)
    ap.add_argument("--lib", help="libzbrokers.so (else the package's own "
                    "search)")
    ap.add_argument("--pythonpath", help="bindings/python")
    ap.add_argument("--requests", type=int, default=1000,
                    help="requests per protocol")
    ap.add_argument("--window", type=int, default=4,
                    help="requests in flight per client")
    ap.add_argument("--timeout", type=float, default=0.5,
                    help="client timeout per attempt, seconds")
    ap.add_argument("--retries", type=int, default=retries,
                    help=retries_help)
    ap.add_argument("--budget", type=float, default=150)


def use_library(args):
    """Makes the package (and the libzbrokers.so) named on the command line
    the ones the Clients thread imports."""
    if args.lib:
        os.environ["ZBROKERS_LIB"] = args.lib
    if args.pythonpath:
        sys.path.insert(0, args.pythonpath)
