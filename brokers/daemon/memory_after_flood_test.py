#!/usr/bin/python3
# Copyright 2026 The zbrokers Authors.
"""Memory comes back after a flood (issue 11, item 6).

  memory_after_flood_test.py --broker PATH/zb-broker

zb-broker runs Majordomo with a 2 s queue expiry.  A raw pyzmq client sends
50,000 requests with 4 KiB bodies to a service nobody serves: they queue
(the broker's RSS grows to ~330 MiB) and expire.  Within 15 s after the
last one expired the broker's VmRSS must be back under 40 MiB.  Before the
daemon gave free heap back to the system (malloc_trim after a burst), glibc
kept it: the same flood left 100-150 MiB resident for good (100,000 requests:
298 MiB).  Prints before/peak/after.  Bounded in time; the broker is killed
and reaped whatever happens.
"""

import argparse
import os
import sys
import threading
import time

import zmq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "test", "testing"))
import zb_process as zp  # noqa: E402  (the shared process harness)

REQUESTS = 50_000
BODY = 4096
CEILING_MIB = 40


def rss_mib(pid):
    kib = zp.rss_kib(pid)
    zp.check(kib is not None, "zb-broker is gone")
    return kib / 1024


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--broker", required=True)
    args = ap.parse_args(argv)
    ctx = zmq.Context()
    try:
        try:
            # At most 20,000 lines kept: the expiry logs of the flood are not
            # needed here.
            p = zp.ZbBroker.start(args.broker, [
                "--majordomo", "tcp://127.0.0.1:*", "--queue-expiry", "2s",
                "--max-queue-per-service", "0", "--stats-interval", "0s"],
                max_lines=20000)
            endpoint = p.endpoint("majordomo")
        except zp.Failure as e:
            print(f"FAIL: zb-broker did not start: {e}", file=sys.stderr)
            return 1
        try:
            p.check_no_deprecated_names()
        except zp.Failure as e:
            print(f"FAIL: {e}", file=sys.stderr)
            return 1
        before = rss_mib(p.pid)
        peak = [before]
        done = [False]

        def sample():
            while not done[0]:
                peak[0] = max(peak[0], rss_mib(p.pid))
                time.sleep(0.05)

        threading.Thread(target=sample, daemon=True).start()
        client = ctx.socket(zmq.DEALER)
        client.setsockopt(zmq.SNDHWM, 0)
        client.setsockopt(zmq.LINGER, 0)
        client.connect(endpoint)
        body = b"x" * BODY
        for _ in range(REQUESTS):
            client.send_multipart([b"", b"MDPC01", b"nobody", body])
        # Everything has arrived once the RSS stops growing; then 2 s of
        # expiry and up to 15 s for the memory to come back.
        last, still = 0.0, 0
        give_up = time.monotonic() + 60
        while still < 10 and time.monotonic() < give_up:
            time.sleep(0.1)
            now = rss_mib(p.pid)
            still = still + 1 if abs(now - last) < 1 else 0
            last = now
        settle = time.monotonic() + 2 + 15
        after = rss_mib(p.pid)
        while after > CEILING_MIB and time.monotonic() < settle:
            time.sleep(0.25)
            after = rss_mib(p.pid)
        done[0] = True
        print(f"memory_after_flood_test: {REQUESTS} requests x {BODY} B: "
              f"VmRSS before {before:.1f} MiB, peak {peak[0]:.1f} MiB, "
              f"after {after:.1f} MiB (ceiling {CEILING_MIB})")
        if peak[0] < 2 * CEILING_MIB:
            print("FAIL: the flood did not grow the broker; the test proves "
                  "nothing", file=sys.stderr)
            return 1
        if after > CEILING_MIB:
            print(f"FAIL: {after:.1f} MiB still resident after the flood",
                  file=sys.stderr)
            return 1
        client.close()
        code = p.stop(timeout=20)
        if code != 0:
            print(f"FAIL: zb-broker exit code {code}", file=sys.stderr)
            return 1
        return 0
    finally:
        zp.kill_all()
        ctx.destroy(linger=0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
