#!/usr/bin/python3
# Copyright 2026 The zbrokers Authors.
"""The chaos suite: zb-broker as a separate process, real peer processes
started and killed by PID, loopback only, every run bounded in time.

  chaos_test.py --broker PATH/zb-broker --lib PATH/libzbrokers.so
                [--long] [--json FILE] SCENARIO...

Scenarios (docs/reliability.md describes each and how to read the table):

  mdp        4 Majordomo workers and 4 clients, each its own process (the
             zbrokers Python package); workers kill -9'ed and replaced
             while requests flow, and the broker kill -9'ed once and
             restarted on the same port.
  consensus  the same with 3 consensus workers (every request goes to all
             of them).
  flood      a normal client/worker pair on each broker while hostile raw
             pyzmq peers flood it: thousands of service names (a third
             not UTF-8), READY with absurd heartbeats from sockets that
             close at once, huge frames, a hundred thousand consensus
             client ids from one socket, a greedy client with a huge
             backlog on the pair's own service, workers joining and
             leaving as fast as they can.
  greedy     the greedy client of flood alone (so that it builds its
             backlog as fast as it can), next to the normal pairs.
  slow       a client that never reads its (large) replies, on each
             broker, with the normal pairs alongside.
  all        every scenario.

Every request of the normal clients is accounted for from the client
library's view: success (answered once, with the body that names it),
failure, timeout; wrong (another request's answer), duplicate and lost must
be 0.  flood and slow also watch the broker: VmRSS (/proc/PID/status) every
100 ms, with a ceiling during the run and after it, and /metrics parsed
strictly every 500 ms (valid UTF-8, the exposition grammar, a bounded
number of service labels per broker, the same services in zb_workers and
zb_queue_depth).

The default is the short version run by `scripts/test` (meson suite
`chaos`, about two minutes for all five, run two at a time); --long is what `scripts/chaos`
runs (ten times the requests and kills, three broker kills, 512 MiB
frames).  The last lines are a table: requests, kills, outcomes, RSS
before/peak/after.
"""

import argparse
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chaoslib as cl  # noqa: E402

PEERS = os.path.join(cl.HERE, "peers.py")

SHORT = {
    "requests": 10_000, "worker_kills": 20, "broker_kills": 1,
    "run_seconds": 10,
    "flood_seconds": 12, "services": 20_000, "heartbeats": 2_000,
    "huge_size": 256 << 20, "huge_count": 3, "clientids": 200_000,
    "greedy": 200_000, "churn": 1_000, "pair_requests": 1_000,
    "slow_seconds": 8, "slow_count": 20_000, "slow_size": 64 << 10,
    "greedy_seconds": 8, "settle": 5,
}
LONG = {
    "requests": 100_000, "worker_kills": 200, "broker_kills": 3,
    "run_seconds": 90,
    "flood_seconds": 60, "services": 50_000, "heartbeats": 10_000,
    "huge_size": 512 << 20, "huge_count": 3, "clientids": 1_000_000,
    "greedy": 1_600_000, "churn": 10_000, "pair_requests": 5_000,
    "slow_seconds": 60, "slow_count": 100_000, "slow_size": 64 << 10,
    "greedy_seconds": 30, "settle": 8,
}

# RSS ceilings (MiB) of the broker in flood and slow, and the most service
# label values /metrics may show per broker: zb-broker's default
# metrics_max_services (1,000) and _other (docs/daemon.md, "Service
# labels").  Overridable by flags.
CEILING_DURING_MIB = 256
CEILING_AFTER_MIB = 64
MAX_SERVICE_LABELS = 1001


class Run:
    def __init__(self, args):
        self.args = args
        self.env = dict(os.environ)
        self.env["ZBROKERS_LIB"] = args.lib
        self.env["PYTHONPATH"] = args.pythonpath
        self.env["PYTHONDONTWRITEBYTECODE"] = "1"
        self.p = LONG if args.long else SHORT
        self.rows = []
        self.failures = []
        self.report = {}

    def peer(self, *argv, name):
        return cl.Proc([cl.PYTHON, PEERS] + list(argv), name, env=self.env)

    def expect(self, cond, what):
        if not cond:
            self.failures.append(what)
            print("FAIL: " + what, flush=True)

    def collect(self, clients, timeout):
        results = []
        deadline = time.monotonic() + timeout
        for c in clients:
            code = c.wait(max(1, deadline - time.monotonic()))
            m = c.wait_line(r"^RESULT (.*)$", 1)
            if code is None or m is None:
                self.expect(False, f"{c.name} did not finish (exit {code}):\n"
                            + c.tail())
                c.kill9()
                continue
            results.append(json.loads(m.group(1)))
            if self.args.verbose:
                print(f"  {c.name}: {m.group(1)[:300]}")
        return results

    def account(self, scenario, results, clients, min_success):
        """Adds the clients' outcomes up and checks them."""
        total = {k: 0 for k in ("sent", "success", "failure", "timeout",
                                "wrong", "duplicate", "lost", "cancelled",
                                "unsent")}
        reasons = {}
        for r in results:
            for k in total:
                total[k] += r.get(k, 0)
            for k, v in r.get("reasons", {}).items():
                reasons[k] = reasons.get(k, 0) + v
            for e in r.get("examples", []):
                print(f"  {scenario}: {e}")
        self.expect(len(results) == clients,
                    f"{scenario}: {len(results)} of {clients} clients "
                    "reported")
        for k in ("wrong", "duplicate", "lost", "cancelled", "unsent"):
            self.expect(total[k] == 0, f"{scenario}: {total[k]} {k}")
        ended = total["success"] + total["failure"] + total["timeout"] + \
            total["wrong"] + total["cancelled"]
        self.expect(ended == total["sent"],
                    f"{scenario}: {ended} of {total['sent']} requests ended")
        if total["sent"]:
            ratio = total["success"] / total["sent"]
            self.expect(ratio >= min_success,
                        f"{scenario}: {total['success']} of {total['sent']} "
                        f"succeeded ({ratio:.1%} < {min_success:.0%})")
        if reasons:
            print(f"  {scenario}: failure reasons {reasons}")
        return total

    def row(self, scenario, total, kills="-", broker_kills="-",
            rss=(None, None, None), extra=""):
        self.rows.append([scenario, total["sent"], kills, broker_kills,
                          total["success"], total["failure"],
                          total["timeout"], total["wrong"],
                          total["duplicate"], total["lost"],
                          cl.mib(rss[0]), cl.mib(rss[1]), cl.mib(rss[2]),
                          extra])
        self.report[scenario] = dict(total, kills=kills,
                                     broker_kills=broker_kills,
                                     rss_before_kib=rss[0],
                                     rss_peak_kib=rss[1],
                                     rss_after_kib=rss[2])

    # --- (a), (b): kills ------------------------------------------------------

    def kills(self, kind):
        p = self.p
        nworkers = 4 if kind == "mdp" else 3
        nclients = 4
        per_client = p["requests"] // nclients
        run_s = p["run_seconds"]
        # Heartbeats short enough that a killed worker is noticed within a
        # second; the clients' timeout is longer than that.
        broker = cl.Broker(self.args.broker, [
            "--heartbeat-interval", "100ms", "--heartbeat-liveness", "3",
            "--request-timeout", "1500ms", "--max-redispatch", "2",
            "--log-level", "info"])
        endpoint = broker.mdp if kind == "mdp" else broker.ccp
        workers = []
        serial = [0]

        def start_worker():
            serial[0] += 1
            w = self.peer(f"{kind}-worker", endpoint, "echo",
                          f"w{serial[0]}", "--heartbeat", "0.1",
                          "--delay-ms", "2", name=f"worker{serial[0]}")
            workers.append(w)
            return w

        try:
            for _ in range(nworkers):
                start_worker()
            for w in workers:
                cl.check(w.wait_line("WORKER ready", 20), "worker start")
            time.sleep(0.5)
            pace = run_s * 1000.0 / per_client
            clients = [self.peer(f"{kind}-client", endpoint, "echo",
                                 f"c{i}", "--requests", str(per_client),
                                 "--window", "8", "--timeout", "2",
                                 "--retries", "3", "--pace-ms",
                                 f"{pace:.3f}", name=f"client{i}")
                       for i in range(nclients)]
            rnd = random.Random(7)
            total_kills = p["worker_kills"]
            interval = run_s * 0.8 / (total_kills + 1)
            broker_at = {int(total_kills * (k + 1) / (p["broker_kills"] + 1))
                         for k in range(p["broker_kills"])}
            kills = broker_kills = 0
            time.sleep(interval)
            while kills < total_kills and any(c.alive() for c in clients):
                victim = rnd.choice(workers)
                workers.remove(victim)
                victim.kill9()
                kills += 1
                start_worker()
                if kills in broker_at:
                    broker.restart()
                    broker_kills += 1
                time.sleep(interval)
            results = self.collect(clients, timeout=run_s * 3 + 60)
            self.expect(kills >= total_kills,
                        f"{kind}: only {kills} of {total_kills} worker kills "
                        "happened while clients ran")
            self.expect(broker_kills == p["broker_kills"],
                        f"{kind}: {broker_kills} broker kills")
            min_success = 0.9 if kind == "mdp" else 0.8
            total = self.account(kind, results, nclients, min_success)
            self.row("mdp" if kind == "mdp" else "consensus", total, kills,
                     broker_kills)
        finally:
            cl.kill_all()

    # --- (c), (d): hostile peers next to a normal pair ------------------------

    def pair(self, broker, requests, seconds, delay_ms):
        """A normal worker and client on each broker's "echo" service."""
        procs = []
        for kind, ep in (("mdp", broker.mdp), ("ccp", broker.ccp)):
            w = self.peer(f"{kind}-worker", ep, "echo", f"{kind}-pair-w",
                          "--delay-ms", str(delay_ms), "--heartbeat", "1",
                          name=f"{kind}-pair-worker")
            cl.check(w.wait_line("WORKER ready", 20), "pair worker start")
            procs.append(w)
        time.sleep(0.5)
        # Paced, with room for a second of requests in flight: a client
        # that a hostile peer stalls keeps sending (and sees it), rather
        # than waiting politely with a few requests outstanding.
        pace = seconds * 1000.0 / requests
        clients = []
        for kind, ep in (("mdp", broker.mdp), ("ccp", broker.ccp)):
            clients.append(self.peer(
                f"{kind}-client", ep, "echo", f"{kind}-pair-c",
                "--requests", str(requests), "--window", "64", "--timeout",
                "2", "--retries", "2", "--pace-ms", f"{pace:.3f}",
                name=f"{kind}-pair-client"))
        return clients

    def hostile_run(self, scenario, hostiles, seconds, delay_ms=1,
                    services=()):
        p = self.p
        # One-second heartbeats: on a loaded machine a Python worker can
        # stall longer than 3 x 250 ms, and a pair worker dropped for that
        # would be a false failure.  (Hostile workers whose sockets closed
        # are dropped at the first heartbeat the broker cannot route.)
        broker = cl.Broker(self.args.broker, [
            "--heartbeat-interval", "1s", "--queue-expiry", "3s",
            "--log-level", "info"])
        try:
            sampler = cl.Sampler(broker,
                                 max_service_labels=self.args.max_service_labels)
            time.sleep(0.5)
            before = cl.rss_kib(broker.pid)
            settle = p["settle"]
            for service in services:  # workers for the hostile peers
                for kind, ep in (("mdp", broker.mdp), ("ccp", broker.ccp)):
                    w = self.peer(f"{kind}-worker", ep, service,
                                  f"{kind}-{service}-w", "--heartbeat", "1",
                                  name=f"{kind}-{service}-worker")
                    cl.check(w.wait_line("WORKER ready", 20),
                             "worker start")
            clients = self.pair(broker, p["pair_requests"],
                                seconds + settle / 2, delay_ms)
            time.sleep(1.0)
            procs = []
            for kind, extra in hostiles:
                procs.append(self.peer(
                    "hostile", kind, "--mdp", broker.mdp, "--ccp", broker.ccp,
                    "--seconds", str(seconds), *extra, name=f"hostile-{kind}"))
            sent = {}
            for h in procs:
                code = h.wait(seconds + 60)
                m = h.wait_line(r"^HOSTILE (.*)$", 1)
                if m:
                    r = json.loads(m.group(1))
                    sent[r["kind"]] = r["sent"]
                else:
                    self.expect(False, f"{h.name} failed (exit {code}):\n"
                                + h.tail())
                    h.kill9()
            peak_during = sampler.peak_kib
            results = self.collect(clients, timeout=seconds + 90)
            # "After": the hostile peers are gone and what they left queued
            # has expired (queue expiry 3 s, checked every second).
            time.sleep(settle)
            after = cl.rss_kib(broker.pid)
            sampler.scrape_once()
            sampler.stop()
            # What the hostile peers registered must be gone by now: their
            # sockets are closed (Majordomo expires silent workers after
            # 3 x 250 ms; consensus must bound the heartbeat it accepts).
            try:
                final = cl.parse_metrics_strict(
                    cl.http_get(broker.metrics_port))
            except (OSError, cl.Failure) as e:
                final = None
                self.expect(False, f"{scenario}: final /metrics: {e}")
            for b in ("majordomo", "consensus") if final else ():
                workers = sum(v for (name, labels), v in final.items()
                              if name == "zb_workers" and
                              ("broker", b) in labels)
                self.expect(workers <= 4,
                            f"{scenario}: {b} still has {workers:.0f} "
                            "workers registered after the flood (the "
                            "pair has 1)")
            peak = max(peak_during, sampler.peak_kib)
            self.expect(broker.proc.alive(), f"{scenario}: zb-broker died:\n"
                        + broker.proc.tail())
            total = self.account(scenario, results, 2, 0.99)
            for f in sampler.failures:
                self.expect(False, f"{scenario}: {f}")
            self.expect(sampler.scrapes >= 3,
                        f"{scenario}: only {sampler.scrapes} good scrapes of "
                        f"/metrics ({sampler.scrape_errors} errors)")
            ceiling = self.args.ceiling_during_mib * 1024
            self.expect(peak <= ceiling,
                        f"{scenario}: broker RSS peaked at {cl.mib(peak)} "
                        f"MiB (ceiling {self.args.ceiling_during_mib})")
            ceiling = self.args.ceiling_after_mib * 1024
            self.expect(after is not None and after <= ceiling,
                        f"{scenario}: broker RSS {cl.mib(after)} MiB after "
                        f"the flood (ceiling {self.args.ceiling_after_mib})")
            extra = " ".join(f"{k}={v}" for k, v in sorted(sent.items()))
            extra += f" series={sampler.max_series}"
            self.row(scenario, total, rss=(before, peak, after), extra=extra)
        finally:
            cl.kill_all()

    def flood(self):
        p = self.p
        self.hostile_run("flood", [
            ("services", ["--count", str(p["services"])]),
            ("heartbeats", ["--count", str(p["heartbeats"])]),
            ("huge", ["--count", str(p["huge_count"]),
                      "--size", str(p["huge_size"])]),
            ("clientids", ["--count", str(p["clientids"])]),
            ("greedy", ["--count", str(p["greedy"])]),
            ("churn", ["--count", str(p["churn"])]),
        ], p["flood_seconds"])

    def greedy(self):
        # (1 ms per request at the pair's worker, the default: the greedy
        # client out-sends it, so its backlog builds up in the broker.)
        p = self.p
        self.hostile_run("greedy", [
            ("greedy", ["--count", str(p["greedy"])]),
        ], p["greedy_seconds"])

    def slow(self):
        p = self.p
        self.hostile_run("slow", [
            ("slow", ["--count", str(p["slow_count"]),
                      "--size", str(p["slow_size"]), "--service", "slow"]),
        ], p["slow_seconds"], delay_ms=0, services=["slow"])


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--broker", required=True, help="zb-broker executable")
    ap.add_argument("--lib", required=True, help="libzbrokers.so")
    ap.add_argument("--pythonpath",
                    default=os.path.join(cl.HERE, "..", "..", "bindings",
                                         "python"))
    ap.add_argument("--long", action="store_true")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="print every client's result line")
    ap.add_argument("--ceiling-during-mib", type=int,
                    default=CEILING_DURING_MIB)
    ap.add_argument("--ceiling-after-mib", type=int, default=CEILING_AFTER_MIB)
    ap.add_argument("--max-service-labels", type=int,
                    default=MAX_SERVICE_LABELS)
    ap.add_argument("scenarios", nargs="+",
                    choices=["mdp", "consensus", "flood", "greedy", "slow",
                             "all"])
    args = ap.parse_args(argv)
    run = Run(args)
    scenarios = args.scenarios
    if "all" in scenarios:
        scenarios = ["mdp", "consensus", "flood", "greedy", "slow"]
    start = time.monotonic()
    for s in scenarios:
        t = time.monotonic()
        print(f"=== {s} ({'long' if args.long else 'short'})", flush=True)
        try:
            if s == "mdp":
                run.kills("mdp")
            elif s == "consensus":
                run.kills("ccp")
            elif s == "flood":
                run.flood()
            elif s == "greedy":
                run.greedy()
            else:
                run.slow()
        except cl.Failure as e:
            run.expect(False, f"{s}: {e}")
        finally:
            cl.kill_all()
        print(f"=== {s}: {time.monotonic() - t:.1f} s", flush=True)
    print()
    if run.rows:
        print(cl.table(run.rows, [
            "scenario", "requests", "kills", "broker kills", "success",
            "failure", "timeout", "wrong", "dup", "lost", "RSS before MiB",
            "peak", "after", "hostile sent"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(run.report, f, indent=2, sort_keys=True)
    print(f"\n{len(run.failures)} failure(s) in {time.monotonic() - start:.0f}"
          " s")
    for f in run.failures:
        print("  - " + f.splitlines()[0])
    return 1 if run.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
