#!/usr/bin/python3
# Copyright 2026 The zbrokers Authors.
"""Peer processes for the chaos suite (chaos_test.py starts and kills them).

Normal peers use the project's own Python package (zbrokers, over
libzbrokers.so; ZBROKERS_LIB and PYTHONPATH say where):

  peers.py mdp-worker ENDPOINT SERVICE NAME [--heartbeat S] [--delay-ms D]
  peers.py ccp-worker ENDPOINT SERVICE NAME [--heartbeat S] [--delay-ms D]
  peers.py mdp-client ENDPOINT SERVICE NAME --requests N [--window W]
                      [--timeout S] [--retries R] [--pace-ms P]
  peers.py ccp-client ENDPOINT SERVICE NAME --requests N ...

A worker answers each request with one frame b"re:" + request + b"|" +
NAME (after D ms, on its reactor), so a reply names the request it answers
and the worker that answered.  A client sends N requests, at most W
outstanding (one every P ms when pacing), each body b"NAME:i" naming it, and
accounts for every one from the library's view: answered once with the right
body (success), answered with a failure, timed out, answered with a body
that belongs to another request (wrong), answered twice (duplicate), or not
answered at all when the client stops (lost).  Its last line is
"RESULT {json}".

Hostile peers are raw pyzmq, written from the wire protocols (RFC 7 and
docs/protocols/ccp.md), independent of the project's libraries:

  peers.py hostile KIND --mdp ENDPOINT --ccp ENDPOINT [--count N]
           [--size BYTES] [--seconds S]

KIND: services, heartbeats, huge, clientids, greedy, churn, slow (see
chaos_test.py's flood and slow scenarios).  The last line is
"HOSTILE {json}".
"""

import argparse
import json
import os
import random
import struct
import sys
import time


def _result(tag, obj):
    print(tag + " " + json.dumps(obj, sort_keys=True), flush=True)


# --- normal peers (zbrokers) ----------------------------------------------------

def _zbrokers():
    import zbrokers  # noqa: E402  (needs ZBROKERS_LIB / PYTHONPATH)
    return zbrokers


def run_worker(args, kind):
    zb = _zbrokers()
    reactor = zb.Reactor()
    name = args.name.encode()
    delay = args.delay_ms / 1000.0

    def answer(frames):
        body = frames[0] if frames else b""
        return [b"re:" + body + b"|" + name]

    if kind == "mdp":
        def handler(frames, reply):
            out = answer(frames)
            if delay > 0:
                reactor.after(delay, lambda: reply.send(out))
            else:
                reply.send(out)
        zb.MdpWorker(reactor, args.endpoint, args.service, handler,
                     with_reply=True, heartbeat_interval=args.heartbeat,
                     heartbeat_liveness=3, reconnect_delay=0.1)
    else:
        def handler(frames, reply):
            out = answer(frames)
            if delay > 0:
                reactor.after(delay, lambda: reply.succeed(out))
            else:
                reply.succeed(out)
        zb.ConsensusWorker(reactor, args.endpoint, args.service, handler,
                           with_reply=True, heartbeat_interval=args.heartbeat,
                           heartbeat_liveness=3)
    print("WORKER ready", flush=True)
    reactor.run()


def run_client(args, kind):
    zb = _zbrokers()
    reactor = zb.Reactor()
    name = args.name.encode()
    n = args.requests
    if kind == "mdp":
        client = zb.MdpClient(reactor, args.endpoint, timeout=args.timeout,
                              retries=args.retries)
    else:
        client = zb.ConsensusClient(reactor, args.endpoint)
    calls = [0] * n
    outcome = [None] * n
    examples = []
    counts = {"success": 0, "failure": 0, "timeout": 0, "wrong": 0,
              "duplicate": 0, "lost": 0, "cancelled": 0}
    reasons = {}
    state = {"next": 0, "done": 0}

    def check_body(i, frames):
        want = b"re:" + name + b":" + str(i).encode() + b"|"
        if kind == "mdp":
            return len(frames) == 1 and frames[0].startswith(want)
        # Consensus: one frame from each worker that answered, each a
        # different worker.
        if not frames or not all(f.startswith(want) for f in frames):
            return False
        workers = [f[len(want):] for f in frames]
        return len(set(workers)) == len(workers)

    def on_reply(i, res):
        calls[i] += 1
        if calls[i] > 1:
            counts["duplicate"] += 1
            if len(examples) < 5:
                examples.append(f"request {i} answered again: {res!r}")
            return
        if res.ok:
            if check_body(i, res.frames):
                o = "success"
            else:
                o = "wrong"
                if len(examples) < 5:
                    examples.append(f"request {i} got {res.frames!r}")
        elif res.outcome == "timeout":
            o = "timeout"
        elif res.outcome == "cancelled":
            o = "cancelled"
        else:
            o = "failure"
            key = res.reason.split(":")[0:2]
            key = ":".join(key)[:40]
            reasons[key] = reasons.get(key, 0) + 1
        outcome[i] = o
        counts[o] += 1
        state["done"] += 1
        if args.pace_ms <= 0:
            send_next()

    def send_next():
        i = state["next"]
        if i >= n:
            return
        state["next"] = i + 1
        body = name + b":" + str(i).encode()
        cb = lambda res, i=i: on_reply(i, res)
        if kind == "mdp":
            client.request(args.service, [body], cb)
        else:
            client.request(args.service, [body], cb, timeout=args.timeout,
                           retries=args.retries)

    if args.pace_ms > 0:
        def tick():
            if state["next"] - state["done"] < args.window:
                send_next()
        reactor.every(args.pace_ms / 1000.0, tick)
    else:
        for _ in range(min(args.window, n)):
            send_next()
    # Every request ends within its timeout x (retries + 1); the bound is
    # generous on a loaded machine.
    per_request = args.timeout * (args.retries + 1)
    budget = args.deadline or (n / max(args.window, 1) * per_request + 30)
    start = time.monotonic()
    reactor.run_until(lambda: state["done"] >= n, timeout=budget)
    elapsed = time.monotonic() - start
    # What the library never answered by now: closing the client must
    # answer it (cancelled); anything still silent after that is lost.
    client.close()
    reactor.run_until(lambda: state["done"] >= state["next"], timeout=2)
    for i in range(state["next"]):
        if calls[i] == 0:
            counts["lost"] += 1
            if len(examples) < 5:
                examples.append(f"request {i} never answered")
    counts["sent"] = state["next"]
    counts["unsent"] = n - state["next"]
    counts["seconds"] = round(elapsed, 2)
    counts["reasons"] = reasons
    counts["examples"] = examples
    _result("RESULT", counts)
    reactor.close()


# --- hostile peers (raw pyzmq) --------------------------------------------------

def _mdp_request(service, body):
    return [b"", b"MDPC01", service] + body


def _ccp(type_byte, *frames):
    return [b"", b"CCp100", bytes([type_byte])] + list(frames)


def _seq(sequence, client_id):
    return struct.pack(">III", sequence >> 32, sequence & 0xffffffff,
                       client_id)


def _bad_name(i):
    # A third of the names are not UTF-8.
    if i % 3 == 0:
        return b"\xfe\xff bad utf8 " + str(i).encode()
    if i % 3 == 1:
        return b'svc "quoted" \\ back\nslash ' + str(i).encode()
    return b"svc-" + str(i).encode()


def run_hostile(args):
    import resource
    import zmq
    # The join floods open a socket (two file descriptors) per join.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    ctx = zmq.Context()
    ctx.set(zmq.MAX_SOCKETS, 60000)
    rnd = random.Random(args.seed)
    sent = 0
    deadline = time.monotonic() + args.seconds
    kind = args.kind

    def dealer(endpoint, hwm=0):
        s = ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.SNDHWM, hwm)
        s.setsockopt(zmq.LINGER, 2000)
        s.connect(endpoint)
        return s

    def drain(s):
        try:
            while True:
                s.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            pass

    if kind == "services":
        # Requests for many service names (MDP: each creates a queue);
        # consensus requests too (each answered zb:no-workers).
        m, c = dealer(args.mdp), dealer(args.ccp)
        for i in range(args.count):
            if time.monotonic() > deadline:
                break
            m.send_multipart(_mdp_request(_bad_name(i), [b"x"]))
            c.send_multipart(_ccp(0x03, _bad_name(i), _seq(i + 1, 77),
                                  b"x"))
            sent += 1
            if i % 256 == 0:
                drain(m)
                drain(c)
    elif kind == "heartbeats":
        # READY with the largest heartbeat a frame can say, then the
        # socket closes: the broker must not keep these forever.
        for i in range(args.count):
            if time.monotonic() > deadline:
                break
            s = dealer(args.ccp)
            s.send_multipart(_ccp(0x01, b"absurd-" + str(i % 50).encode(),
                                  struct.pack(">I", 0xffffffff), b"\xff"))
            s.close(linger=500)
            sent += 1
            if i % 200 == 199:
                time.sleep(0.05)  # let closed sockets finish
            # MDP: a worker for a service nobody asks for, whose socket
            # closes at once.
            s = dealer(args.mdp)
            s.send_multipart([b"", b"MDPW01", b"\x01", _bad_name(i)])
            s.close(linger=500)
    elif kind == "huge":
        # Frames far over any sane message size, to a service with no
        # worker (MDP queues them) and to consensus.
        payload = b"\0" * args.size
        m, c = dealer(args.mdp), dealer(args.ccp)
        for i in range(args.count):
            if time.monotonic() > deadline:
                break
            m.send_multipart(_mdp_request(b"void", [payload]), copy=False)
            c.send_multipart(_ccp(0x03, b"void", _seq(i + 1, 99), payload),
                             copy=False)
            sent += 1
        # Sending is asynchronous: wait (up to the deadline) until libzmq
        # has written everything, or the broker has cut the connection.
        left = max(1.0, deadline - time.monotonic())
        m.close(linger=int(left * 1000))
        c.close(linger=int(left * 1000))
        ctx.term()
        _result("HOSTILE", {"kind": kind, "sent": sent})
        return
    elif kind == "clientids":
        # One socket, many consensus client ids (each a record).
        c = dealer(args.ccp)
        for i in range(args.count):
            if time.monotonic() > deadline:
                break
            c.send_multipart(_ccp(0x03, b"void",
                                  _seq(1, rnd.getrandbits(32)), b"x"))
            sent += 1
            if i % 1024 == 0:
                drain(c)
        drain(c)
    elif kind == "greedy":
        # One client with a huge backlog on the normal pair's service.
        # Tight loops with prebuilt frames: the backlog must build up
        # faster than one worker drains it.
        m, c = dealer(args.mdp), dealer(args.ccp)
        cid = rnd.getrandbits(32)
        request = _mdp_request(b"echo", [b"greedy"])
        head = _ccp(0x03, b"echo")
        i = 0
        while i < args.count and time.monotonic() < deadline:
            for _ in range(min(4096, args.count - i)):
                m.send_multipart(request)
                i += 1
                c.send_multipart(head + [_seq(i, cid), b"greedy"])
            drain(m)
            drain(c)
        sent = i
        while time.monotonic() < deadline:
            drain(m)
            drain(c)
            time.sleep(0.05)
    elif kind == "churn":
        # Workers joining and leaving as fast as they can.
        for i in range(args.count):
            if time.monotonic() > deadline:
                break
            s = dealer(args.mdp)
            s.send_multipart([b"", b"MDPW01", b"\x01", b"churn"])
            s.send_multipart([b"", b"MDPW01", b"\x05"])
            s.close(linger=1000)
            s = dealer(args.ccp)
            s.send_multipart(_ccp(0x01, b"churn", struct.pack(">I", 1000),
                                  b"\x03"))
            s.send_multipart(_ccp(0x06, b"churn"))
            s.close(linger=500)
            sent += 1
            if i % 200 == 199:
                time.sleep(0.05)  # let closed sockets finish
    elif kind == "slow":
        # A client that never reads its replies (large ones).
        # Paced below what its worker serves, so that what piles up is
        # replies, not requests.
        m, c = dealer(args.mdp), dealer(args.ccp)
        m.setsockopt(zmq.RCVHWM, 10)
        c.setsockopt(zmq.RCVHWM, 10)
        body = b"s" * args.size
        cid = rnd.getrandbits(32)
        service = args.service.encode()
        for i in range(args.count):
            if time.monotonic() > deadline:
                break
            m.send_multipart(_mdp_request(service, [body]))
            c.send_multipart(_ccp(0x03, service, _seq(i + 1, cid), body))
            sent += 1
            time.sleep(0.002)
        while time.monotonic() < deadline:
            time.sleep(0.1)
    else:
        raise SystemExit(f"unknown hostile kind {kind}")
    _result("HOSTILE", {"kind": kind, "sent": sent})
    ctx.destroy(linger=0)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    for k in ("mdp-worker", "ccp-worker"):
        p = sub.add_parser(k)
        p.add_argument("endpoint")
        p.add_argument("service")
        p.add_argument("name")
        p.add_argument("--heartbeat", type=float, default=0.25)
        p.add_argument("--delay-ms", type=float, default=0)
    for k in ("mdp-client", "ccp-client"):
        p = sub.add_parser(k)
        p.add_argument("endpoint")
        p.add_argument("service")
        p.add_argument("name")
        p.add_argument("--requests", type=int, required=True)
        p.add_argument("--window", type=int, default=8)
        p.add_argument("--timeout", type=float, default=1.0)
        p.add_argument("--retries", type=int, default=3)
        p.add_argument("--pace-ms", type=float, default=0)
        p.add_argument("--deadline", type=float, default=0)
    p = sub.add_parser("hostile")
    p.add_argument("kind")
    p.add_argument("--mdp", required=True)
    p.add_argument("--ccp", required=True)
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--size", type=int, default=1 << 20)
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--service", default="echo",
                   help="service of the slow client")
    args = ap.parse_args()
    if args.cmd.endswith("-worker"):
        run_worker(args, args.cmd.split("-")[0])
    elif args.cmd.endswith("-client"):
        run_client(args, args.cmd.split("-")[0])
    else:
        run_hostile(args)


if __name__ == "__main__":
    sys.exit(main())
