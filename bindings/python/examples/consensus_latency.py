#!/usr/bin/env python3
# Copyright 2026 The zbrokers Authors.
"""Measures consensus round-trip latency from Python.

Sends requests one after another (each one when the previous answered) and
prints latency percentiles.

    # against a running broker and workers (e.g. consensus_worker.py):
    python3 consensus_latency.py --endpoint tcp://127.0.0.1:5556 -n 10000
    # self-contained: broker and N workers on a second reactor thread
    python3 consensus_latency.py --embedded --workers 2 -n 10000
"""

import argparse
import statistics
import sys
import time

import zbrokers


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", default="tcp://127.0.0.1:5556")
    parser.add_argument("--service", default="echo")
    parser.add_argument("-n", "--requests", type=int, default=10000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--size", type=int, default=16,
                        help="payload bytes per request")
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--embedded", action="store_true",
                        help="run a broker and workers in this process")
    parser.add_argument("--workers", type=int, default=1,
                        help="workers to start with --embedded")
    args = parser.parse_args()

    server = None
    endpoint = args.endpoint
    if args.embedded:
        # Broker and workers on their own reactor thread, as they would be in
        # another process: the client's reactor only runs the client.
        server = zbrokers.ReactorThread()

        def start(reactor):
            broker = zbrokers.ConsensusBroker(reactor, "tcp://127.0.0.1:*")
            for _ in range(args.workers):
                zbrokers.ConsensusWorker(reactor, broker.endpoint,
                                         args.service.encode(),
                                         lambda frames: frames)
            return broker

        broker = server.invoke(start)
        endpoint = broker.endpoint
        deadline = time.monotonic() + 10
        while server.invoke(lambda r: broker.worker_count(
                args.service.encode())) < args.workers:
            if time.monotonic() > deadline:
                sys.exit("the embedded workers did not register")
            time.sleep(0.01)

    reactor = zbrokers.Reactor()
    client = zbrokers.ConsensusClient(reactor, endpoint)
    payload = [b"x" * args.size]
    total = args.warmup + args.requests
    latencies = []
    failures = []
    state = {"sent": 0, "t0": 0.0}

    def send():
        state["t0"] = time.perf_counter()
        state["sent"] += 1
        client.request(args.service, payload, on_reply, timeout=args.timeout)

    def on_reply(result):
        elapsed = time.perf_counter() - state["t0"]
        if not result.ok:
            failures.append(result.reason)
        elif state["sent"] > args.warmup:
            latencies.append(elapsed)
        if state["sent"] < total and len(failures) < 10:
            send()
        else:
            reactor.stop()

    send()
    started = time.perf_counter()
    reactor.run()
    wall = time.perf_counter() - started
    reactor.close()
    if server is not None:
        server.stop()
        server.join()

    if failures:
        print(f"{len(failures)} failed request(s), e.g. {failures[0]!r}")
    if not latencies:
        sys.exit("no successful round trips")
    latencies.sort()
    us = [x * 1e6 for x in latencies]

    def pct(p):
        return us[min(len(us) - 1, int(p / 100 * len(us)))]

    print(f"{len(us)} round trips over {endpoint} "
          f"({args.workers if args.embedded else '?'} worker(s)), "
          f"{len(us) / wall:.0f} req/s")
    print(f"latency us: mean {statistics.fmean(us):.1f}  p50 {pct(50):.1f}  "
          f"p90 {pct(90):.1f}  p99 {pct(99):.1f}  max {us[-1]:.1f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
