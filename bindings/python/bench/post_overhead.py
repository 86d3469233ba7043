#!/usr/bin/env python3
# Copyright 2026 The zbrokers Authors.
"""What one Reactor.post() + its callback costs through ctypes, against a
plain Python append + call as the baseline (medians of 5 runs).

    PYTHONPATH=bindings/python python3 bindings/python/bench/post_overhead.py
"""

import statistics
import time

import zbrokers

N = 50000


def main():
    reactor = zbrokers.Reactor()

    def zb_posts():
        count = [0]

        def cb():
            count[0] += 1

        t = time.perf_counter()
        for _ in range(N):
            reactor.post(cb)
        reactor.run_until(lambda: count[0] == N, 60)
        return (time.perf_counter() - t) / N * 1e9

    def py_calls():
        count = [0]

        def cb():
            count[0] += 1

        queue = []
        t = time.perf_counter()
        for _ in range(N):
            queue.append(cb)
        for f in queue:
            f()
        return (time.perf_counter() - t) / N * 1e9

    zb, py = [], []
    for _ in range(5):
        zb.append(zb_posts())
        py.append(py_calls())
    reactor.close()
    print(f"post()+callback through the C ABI: {statistics.median(zb):.0f} ns"
          f"; plain Python append+call: {statistics.median(py):.0f} ns; "
          f"ratio {statistics.median(zb) / statistics.median(py):.1f}")


if __name__ == "__main__":
    main()
