# Copyright 2026 The zbrokers Authors.
"""The fail-over pair (docs/ha.md) served to the project's OWN clients.

ha_process_test.py drives the pair with lazy-pirate clients written in raw
pyzmq.  This one gives the Python package's ConsensusClient and MdpClient
(over libzbrokers.so, so the C++ clients underneath) the two-endpoint list
"primary,backup" with the default endpoint_policy="failover", and kills the
active broker with kill -9 while they run:

  1. kill -9 the active primary: the backup must take over and serve the
     clients (each client stops at hold points until the test lets it
     on, so that requests are in flight at each kill or sent after it); the time from the kill to the first reply a client got that
     the backup's worker session served is measured and printed;
  2. restart the primary: it comes back PASSIVE (no fail-back);
  3. kill -9 the backup while requests flow: the primary becomes ACTIVE
     again and the clients (whose failover cycles through the list) are
     served by it.

Workers are raw pyzmq (ha_process_test.Worker: one session per broker), so
that the test knows which broker served each request.  Each client keeps
--window requests in flight, each with a unique body; every request must
end exactly once (success, failure or timeout by the client's rules), a
success must carry its own body (no foreign reply), and by default every
request must succeed (--retries covers the fail-over).  Each client's
failovers counter must have moved at each kill.  Processes are signalled
only by the PID the test started; only 127.0.0.1.

  ha_client_process_test.py --broker build/brokers/daemon/zb-broker \\
      --lib build/bindings/c/libzbrokers.so --pythonpath bindings/python \\
      --requests 1000 [--budget 150]
"""

import argparse
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "testing"))
import client_streams as cs  # noqa: E402  (streams, clients, workers)
import ha_process_test as ha  # noqa: E402  (the pair)
import zb_process as zp  # noqa: E402
import zmq  # noqa: E402


def describe(clients, workers):
    """Where each stream is, for a failure message."""
    out = []
    for s in clients.streams:
        w = workers[s.protocol]
        with w.lock:
            by = [sum(1 for v in w.served_by.values() if i in v)
                  for i in (0, 1)]
        out.append(f"{s.protocol}: sent {s.sent} done {s.done} ok {s.ok} "
                   f"failed {s.failed} timeouts {s.timeouts} in flight "
                   f"{len(s.in_flight)} failovers "
                   f"{clients.failovers.get(s.protocol)} served by "
                   f"primary/backup {by} reasons {s.reasons}")
    return "; ".join(out)


def wait_done(clients, fraction, deadline, what):
    zp.wait_for(lambda: clients.error is not None or all(
        s.done >= s.total * fraction for s in clients.streams),
        max(1, deadline - time.monotonic()), what)
    zp.check(clients.error is None, f"client thread: {clients.error}")


def scenario(args):
    deadline = time.monotonic() + args.budget
    ports = ha.free_ports(6)
    primary = ha.Broker(args.broker, "primary", ports[0], ports[1], ports[2],
                        ports[3]).start()
    backup = ha.Broker(args.broker, "backup", ports[4], ports[5], ports[3],
                       ports[2]).start()
    zp.check(primary.state_line("primary", "active") is not None,
             "the primary did not become active")
    zp.check(backup.state_line("backup", "passive") is not None,
             "the backup did not become passive")

    ctx = zmq.Context()
    stop = threading.Event()
    workers = {"mdp": cs.RecordingWorker(ctx, "mdp",
                                         [primary.mdp, backup.mdp], stop),
               "ccp": cs.RecordingWorker(ctx, "ccp",
                                         [primary.ccp, backup.ccp], stop)}
    for w in workers.values():
        w.start()
    for b in (primary, backup):
        for kind in ("majordomo", "consensus"):
            zp.wait_for(lambda: b.workers(kind) == 1, 10,
                        f"{b.role} has no {kind} worker")

    clients = cs.Clients(args, [primary.mdp, backup.mdp],
                         [primary.ccp, backup.ccp])
    clients.start()
    zp.check(clients.ready.wait(10) and clients.error is None,
             f"the clients did not start: {clients.error}")
    try:
        # 1. kill -9 the active primary in the middle of the run.
        wait_done(clients, 1 / 3, deadline, "no progress before the kill")
        failovers_before = dict(clients.failovers)
        t_kill = time.monotonic()
        primary.kill9()
        for s in clients.streams:
            s.release(0)
        zp.check(backup.state_line("passive", "active", timeout=20)
                 is not None, "the backup did not take over")
        served = lambda: all(  # noqa: E731
            s.first_success_from(workers[s.protocol], 1, t_kill) is not None
            for s in clients.streams)
        limit = time.monotonic() + 30
        while not served() and clients.error is None and \
                time.monotonic() < limit:
            time.sleep(0.01)
        zp.check(served(), "no reply from the backup after the kill: "
                 + describe(clients, workers))
        took = {}
        for s in clients.streams:
            t = s.first_success_from(workers[s.protocol], 1, t_kill)
            took[s.protocol] = (t - t_kill) * 1000
            print(f"{s.protocol}: kill -9 of the active -> first reply served "
                  f"by the backup: {took[s.protocol]:.0f} ms (peer_expiry "
                  f"{ha.PEER_EXPIRY}, client timeout "
                  f"{args.timeout * 1000:.0f} ms, window {args.window})",
                  flush=True)
            zp.check(took[s.protocol] < args.max_failover_ms,
                     f"{s.protocol}: the backup served only after "
                     f"{took[s.protocol]:.0f} ms (limit "
                     f"{args.max_failover_ms} ms)")
            # (clients.failovers is refreshed every 10 ms.)
            zp.wait_for(lambda: clients.failovers.get(s.protocol, 0) >
                        failovers_before.get(s.protocol, 0), 2,
                        f"{s.protocol}: the client's failovers did not move")

        # 2. the old primary returns: passive, no fail-back.
        primary.start()
        zp.check(primary.state_line("primary", "passive") is not None,
                 "the restarted primary did not become passive")
        zp.check(primary.ha_state() == "passive",
                 "zb_ha_state of the restarted primary is not passive")
        zp.check(backup.ha_state() == "active",
                 "zb_ha_state of the backup is not active")
        for kind in ("majordomo", "consensus"):
            zp.wait_for(lambda: primary.workers(kind) == 1, 15,
                        f"the restarted primary has no {kind} worker")

        # 3. kill -9 the backup while requests flow: the primary serves
        # again, the clients' failover cycling back to it.
        for s in clients.streams:
            zp.wait_for(lambda: s.held(1) or clients.error is not None,
                        max(1, deadline - time.monotonic()),
                        f"{s.protocol}: no progress before kill 2")
        zp.check(clients.error is None, f"client thread: {clients.error}")
        marks = [s.done for s in clients.streams]
        for s in clients.streams:
            s.release(1)
        zp.wait_for(lambda: all(s.done >= m + 5 or s.held(2) for s, m in
                                zip(clients.streams, marks)), 20,
                    "no requests flowing before kill 2")
        failovers_before = dict(clients.failovers)
        t_kill2 = time.monotonic()
        backup.kill9()
        for s in clients.streams:
            s.release(2)
        zp.check(primary.state_line("passive", "active", timeout=20)
                 is not None, "the primary did not take over again")
        zp.wait_for(lambda: clients.finished() or clients.error is not None,
                    max(1, deadline - time.monotonic()),
                    "the clients did not finish")
        zp.check(clients.error is None, f"client thread: {clients.error}")
        for s in clients.streams:
            t = s.first_success_from(workers[s.protocol], 0, t_kill2)
            zp.check(t is not None,
                     f"{s.protocol}: no reply from the primary after kill 2")
            print(f"{s.protocol}: kill -9 of the backup -> first reply served "
                  f"by the primary: {(t - t_kill2) * 1000:.0f} ms", flush=True)
            cs.check_ended_once(
                s, f"failovers {clients.failovers.get(s.protocol)}; ")
            zp.check(s.ok == s.total,
                     f"{s.protocol}: {s.total - s.ok} requests not answered")
            zp.wait_for(lambda: clients.failovers.get(s.protocol, 0) >
                        failovers_before.get(s.protocol, 0), 2,
                        f"{s.protocol}: the client's failovers did not move "
                        "at kill 2")
        samples, _ = zp.parse_metrics(primary.proc.metrics().decode())
        zp.check(zp.sample(samples, "zb_ha_failovers_total") == 1,
                 "the primary's zb_ha_failovers_total is not 1")
    finally:
        cs.shut_down(clients, workers, stop, ctx)


def main():
    ap = argparse.ArgumentParser()
    cs.add_arguments(ap, retries=10, retries_help="resends per request "
                     "after a timed-out attempt")
    ap.add_argument("--max-failover-ms", type=float, default=5000,
                    help="the backup must serve within this after the kill")
    args = ap.parse_args()
    cs.use_library(args)
    return zp.run_scenario("ha_client_process_test", scenario, args)


if __name__ == "__main__":
    sys.exit(main())
