#!/usr/bin/env python3
# Copyright 2026 The zbrokers Authors.
"""Round-trip latency of the Python bindings against a pyzmq baseline.

Both sides run in one thread over loopback TCP with one worker:
  zb   Python client -> C++ consensus broker -> Python worker, on one
       zbrokers.Reactor (every hop crosses the ctypes boundary)
  raw  pyzmq DEALER client -> hand-written ROUTER forwarder -> DEALER worker,
       on one zmq.Poller (the same four hops, no consensus bookkeeping)
The two alternate five times; the medians over the runs are printed with
the zb/raw ratio.  Needs python3-zmq (Debian) for the baseline.

    PYTHONPATH=bindings/python \
        python3 bindings/python/bench/roundtrip_vs_pyzmq.py 2000
"""

import statistics
import sys
import time

import zmq

import zbrokers

N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
PAYLOAD = b"x" * 16


def zb_run():
    r = zbrokers.Reactor()
    b = zbrokers.ConsensusBroker(r, "tcp://127.0.0.1:*")
    zbrokers.ConsensusWorker(r, b.endpoint, b"echo", lambda f: f)
    r.run_until(lambda: b.worker_count(b"echo") == 1, 10)
    c = zbrokers.ConsensusClient(r, b.endpoint)
    lat = []
    st = {"n": 0, "t": 0.0}

    def send():
        st["t"] = time.perf_counter()
        c.request(b"echo", [PAYLOAD], done)

    def done(res):
        assert res.ok, res
        lat.append(time.perf_counter() - st["t"])
        st["n"] += 1
        if st["n"] < N:
            send()
        else:
            r.stop()

    send()
    t = time.perf_counter()
    r.run()
    wall = time.perf_counter() - t
    r.close()
    return lat, wall


def raw_run():
    ctx = zmq.Context()
    front = ctx.socket(zmq.ROUTER)
    port = front.bind_to_random_port("tcp://127.0.0.1")
    worker = ctx.socket(zmq.DEALER)
    worker.connect(f"tcp://127.0.0.1:{port}")
    client = ctx.socket(zmq.DEALER)
    client.connect(f"tcp://127.0.0.1:{port}")
    worker.send_multipart([b"", b"READY"])
    poller = zmq.Poller()
    for s in (front, worker, client):
        poller.register(s, zmq.POLLIN)
    worker_id = None
    while worker_id is None:
        for s, _ in poller.poll():
            if s is front:
                worker_id = front.recv_multipart()[0]
    lat = []
    t0 = sent = time.perf_counter()
    client.send_multipart([b"", PAYLOAD])
    n = 0
    while n < N:
        for s, _ in poller.poll():
            f = s.recv_multipart()
            if s is front:
                if f[0] == worker_id:  # reply [worker, "", client, body]
                    front.send_multipart([f[2], b"", f[3]])
                else:  # request [client, "", body]
                    front.send_multipart([worker_id, b"", f[0], f[2]])
            elif s is worker:  # ["", client, body]: echo it back
                worker.send_multipart(f)
            else:
                lat.append(time.perf_counter() - sent)
                n += 1
                if n < N:
                    sent = time.perf_counter()
                    client.send_multipart([b"", PAYLOAD])
    wall = time.perf_counter() - t0
    for s in (front, worker, client):
        s.close(0)
    ctx.term()
    return lat, wall


def main():
    res = {"zb": [], "raw": []}
    for _ in range(5):
        for name, fn in (("zb", zb_run), ("raw", raw_run)):
            lat, wall = fn()
            lat.sort()
            res[name].append((lat[len(lat) // 2] * 1e6,
                              lat[int(len(lat) * 0.99)] * 1e6, N / wall))
    for name in ("zb", "raw"):
        p50 = statistics.median(x[0] for x in res[name])
        p99 = statistics.median(x[1] for x in res[name])
        rps = statistics.median(x[2] for x in res[name])
        print(f"{name:4s} median of 5 runs: p50 {p50:7.1f} us  "
              f"p99 {p99:8.1f} us  {rps:6.0f} req/s")
    ratio = (statistics.median(x[0] for x in res["zb"])
             / statistics.median(x[0] for x in res["raw"]))
    print(f"zb/raw p50 ratio: {ratio:.2f}")


if __name__ == "__main__":
    main()
