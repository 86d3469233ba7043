#!/usr/bin/python3
# Copyright 2026 The zbrokers Authors.
"""Independent Majordomo (MDP/0.1, ZeroMQ RFC 7) peers, written from the RFC
with pyzmq only, to check that a broker speaks the standard protocol.

Commands (every one prints one summary line and exits non-zero on failure):

  mdp_peers.py worker ENDPOINT SERVICE [--heartbeat-interval 2500ms]
        [--heartbeat-liveness 3] [--delay-ms 0] [--jitter-ms 0]
        [--crash-after N] [--max-seconds S]
      An echo worker: READY, heartbeats, reconnects on silence or DISCONNECT.
      --crash-after N exits abruptly (no reply, no DISCONNECT) on request N.
      --jitter-ms J adds a random 0..J ms to each reply's delay, so that
      several workers finish out of order.
      Stops on SIGTERM/SIGINT (sends DISCONNECT) or after --max-seconds.

  mdp_peers.py client ENDPOINT SERVICE [--requests 10000] [--timeout 2500ms]
        [--retries 3] [--size 16]
      A synchronous client on a REQ socket (RFC 7's recommendation), with
      RFC 7's recovery: on a timeout, close the socket, open a new one and
      resend.  Checks that every echo reply equals its request.  Exit 1 when
      any request is lost.

  mdp_peers.py async-client ENDPOINT SERVICE [--requests 10000]
        [--window 100] [--timeout 5s] [--retries 3] [--size 16]
        [--tagged]
      An asynchronous client on a DEALER socket with up to --window requests
      outstanding.  Each body carries a unique id, which an echo worker sends
      back, so replies are matched exactly.  A request not answered within
      the timeout is resent (up to --retries); duplicates are counted, not
      errors.  Exit 1 when any request is lost.

      --tagged speaks zbrokers' request-tag extension (docs/protocols/
      mdp.md), written from that page: it asks "mmi.zb.tag" first and,
      on "200", sends "", "zb.tag.MDPC01", service, tag, body and checks
      that every reply carries the tag of the request whose body it echoes
      (a reply with another request's tag counts as wrong); without "200"
      it gives up (exit 2).

  mdp_peers.py broker ENDPOINT [--mmi] [--heartbeat-interval 2500ms]
        [--heartbeat-liveness 3]
      A minimal RFC 7 broker (MDP/0.1 only, none of zbrokers' extensions):
      least-recently-used idle worker per service, a queue per service,
      HEARTBEAT to idle workers, silent workers dropped, REPLY forwarded.
      With --mmi it answers RFC 8's mmi.service (200/404) and every other
      mmi.* with 501; without, mmi.* names are ordinary services that
      nobody serves.  Anything that is not MDPC01 or MDPW01 (e.g. a
      zb.tag.MDPC01 request) is dropped as invalid.  Prints the endpoint
      it bound ("broker: listening on ..."), then runs until SIGTERM.

  mdp_peers.py mmi ENDPOINT SERVICE [--timeout 2500ms]
      Asks mmi.service about SERVICE; prints the code.  Exit 0 on "200",
      1 on "404", 2 on anything else or no answer.

  mdp_peers.py raw ENDPOINT FRAME... [--timeout 1s]
      Sends one message of the given frames (Python escapes such as \\x01 are
      understood) on a DEALER socket and prints the reply frames, if any.

The settings have their names in docs/glossary.md: --heartbeat-interval and
--timeout take a duration with its unit ("250ms", "2.5s"), as zb-broker and
zb-latency do; --heartbeat-liveness a count of intervals.
"""

import argparse
import collections
import os
import random
import re
import signal
import sys
import time

import zmq

C_CLIENT = b"MDPC01"
C_TAGGED = b"zb.tag.MDPC01"   # zbrokers' request-tag extension
W_WORKER = b"MDPW01"
READY, REQUEST, REPLY, HEARTBEAT, DISCONNECT = (bytes([i]) for i in range(1, 6))


def now_ms():
    return time.monotonic() * 1000.0


# --- worker -------------------------------------------------------------------

class Worker:
    def __init__(self, ctx, endpoint, service, heartbeat_ms, liveness):
        self.ctx = ctx
        self.endpoint = endpoint
        self.service = service.encode()
        self.heartbeat_ms = heartbeat_ms
        self.liveness = liveness
        self.socket = None
        self.poller = zmq.Poller()
        self.reconnects = -1
        self.connect()

    def send(self, command, *frames):
        self.socket.send_multipart([b"", W_WORKER, command] + list(frames))
        self.last_sent = now_ms()

    def connect(self):
        if self.socket is not None:
            self.poller.unregister(self.socket)
            self.socket.close(linger=0)
        self.socket = self.ctx.socket(zmq.DEALER)
        self.socket.linger = 0
        self.socket.connect(self.endpoint)
        self.poller.register(self.socket, zmq.POLLIN)
        self.reconnects += 1
        self.send(READY, self.service)
        self.last_heard = now_ms()

    def close(self):
        try:
            self.send(DISCONNECT)
        finally:
            self.socket.close(linger=100)


def run_worker(args):
    ctx = zmq.Context()
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    w = Worker(ctx, args.endpoint, args.service, args.heartbeat_interval,
               args.heartbeat_liveness)
    requests = replies = disconnects = malformed = 0
    started = time.monotonic()
    while not stop:
        if args.max_seconds and time.monotonic() - started > args.max_seconds:
            break
        try:
            events = dict(w.poller.poll(args.heartbeat_interval / 4))
        except zmq.ZMQError:
            continue  # EINTR on a signal
        if w.socket in events:
            frames = w.socket.recv_multipart()
            w.last_heard = now_ms()
            if len(frames) < 3 or frames[0] != b"" or frames[1] != W_WORKER:
                malformed += 1
                continue
            command = frames[2]
            if command == REQUEST:
                # "", MDPW01, 0x02, client address, "", body...
                if len(frames) < 6 or frames[4] != b"":
                    malformed += 1
                    continue
                requests += 1
                if args.crash_after and requests >= args.crash_after:
                    print(f"worker: crashing on request {requests}",
                          flush=True)
                    os._exit(3)
                delay = args.delay_ms
                if args.jitter_ms:
                    delay += random.uniform(0, args.jitter_ms)
                if delay:
                    time.sleep(delay / 1000.0)
                w.send(REPLY, frames[3], b"", *frames[5:])
                replies += 1
            elif command == HEARTBEAT:
                pass
            elif command == DISCONNECT:
                disconnects += 1
                w.connect()
            else:
                malformed += 1
        if now_ms() - w.last_heard > w.heartbeat_ms * w.liveness:
            w.connect()  # the broker went silent: start a new conversation
        if now_ms() - w.last_sent >= w.heartbeat_ms:
            w.send(HEARTBEAT)
    w.close()
    ctx.term()
    print(f"worker: service={args.service} requests={requests} "
          f"replies={replies} reconnects={w.reconnects} "
          f"disconnects={disconnects} malformed={malformed}", flush=True)
    return 0 if malformed == 0 else 1


# --- synchronous client -------------------------------------------------------

def run_client(args):
    ctx = zmq.Context()
    service = args.service.encode()
    sock = None

    def open_socket():
        s = ctx.socket(zmq.REQ)
        s.linger = 0
        s.connect(args.endpoint)
        return s

    sock = open_socket()
    ok = lost = retries = bad = 0
    started = time.monotonic()
    for i in range(args.requests):
        body = (b"%d:" % i).ljust(args.size, b".")
        done = False
        for attempt in range(args.retries + 1):
            if attempt:
                retries += 1
            # REQ adds the empty frame: "MDPC01", service, body
            sock.send_multipart([C_CLIENT, service, body])
            if sock.poll(args.timeout, zmq.POLLIN):
                reply = sock.recv_multipart()
                if (len(reply) >= 3 and reply[0] == C_CLIENT and
                        reply[1] == service and reply[2] == body):
                    ok += 1
                else:
                    bad += 1
                done = True
                break
            # RFC 7: close the socket, open a new one, resend.
            sock.close(linger=0)
            sock = open_socket()
        if not done:
            lost += 1
    elapsed = time.monotonic() - started
    sock.close(linger=0)
    ctx.term()
    rate = args.requests / elapsed if elapsed > 0 else 0.0
    print(f"client: requests={args.requests} ok={ok} lost={lost} bad={bad} "
          f"retries={retries} seconds={elapsed:.3f} rate={rate:.0f}/s",
          flush=True)
    return 0 if lost == 0 and bad == 0 else 1


# --- asynchronous client ------------------------------------------------------

def run_async_client(args):
    ctx = zmq.Context()
    service = args.service.encode()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.sndhwm = 0
    sock.rcvhwm = 0
    sock.connect(args.endpoint)
    outstanding = {}  # id -> (deadline_ms, attempts)
    next_id = 0
    ok = lost = dup = bad = retries = wrong = 0
    answered = set()
    started = time.monotonic()

    if args.tagged:
        # Negotiate first (the extension allows plain requests meanwhile;
        # this peer simply waits).
        sock.send_multipart([b"", C_CLIENT, b"mmi.zb.tag", b"?"])
        answer = None
        if sock.poll(args.timeout, zmq.POLLIN):
            answer = sock.recv_multipart()
        if answer != [b"", C_CLIENT, b"mmi.zb.tag", b"200"]:
            print(f"async-client: the broker does not speak request tags: "
                  f"{answer!r}", flush=True)
            return 2

    def body_of(i):
        return (b"%d:" % i).ljust(args.size, b".")

    def tag_of(i):
        return b"t%d" % i

    def send(i):
        # DEALER: the empty frame is ours to add.
        if args.tagged:
            sock.send_multipart([b"", C_TAGGED, service, tag_of(i),
                                 body_of(i)])
        else:
            sock.send_multipart([b"", C_CLIENT, service, body_of(i)])

    while next_id < args.requests or outstanding:
        while next_id < args.requests and len(outstanding) < args.window:
            send(next_id)
            outstanding[next_id] = (now_ms() + args.timeout, 0)
            next_id += 1
        if sock.poll(50, zmq.POLLIN):
            while True:
                try:
                    reply = sock.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                tag = None
                if args.tagged and len(reply) >= 5 and reply[1] == C_TAGGED:
                    tag = reply[3]
                    reply = reply[:3] + reply[4:]
                    reply[1] = C_CLIENT
                if (len(reply) < 4 or reply[0] != b"" or
                        reply[1] != C_CLIENT or reply[2] != service or
                        (args.tagged and tag is None)):
                    bad += 1
                    continue
                try:
                    i = int(reply[3].split(b":", 1)[0])
                except ValueError:
                    bad += 1
                    continue
                if tag is not None and tag != tag_of(i):
                    wrong += 1  # another request's reply under this tag
                    continue
                if i in outstanding:
                    if reply[3] != body_of(i):
                        bad += 1
                    del outstanding[i]
                    answered.add(i)
                    ok += 1
                elif i in answered:
                    dup += 1
                else:
                    bad += 1
        t = now_ms()
        for i, (deadline, attempts) in list(outstanding.items()):
            if t < deadline:
                continue
            if attempts < args.retries:
                retries += 1
                send(i)
                outstanding[i] = (t + args.timeout, attempts + 1)
            else:
                lost += 1
                del outstanding[i]
    elapsed = time.monotonic() - started
    sock.close(linger=0)
    ctx.term()
    rate = args.requests / elapsed if elapsed > 0 else 0.0
    print(f"async-client: requests={args.requests} ok={ok} lost={lost} "
          f"bad={bad} wrong={wrong} duplicates={dup} retries={retries} "
          f"seconds={elapsed:.3f} rate={rate:.0f}/s", flush=True)
    return 0 if lost == 0 and bad == 0 and wrong == 0 else 1


# --- a minimal RFC 7 broker ---------------------------------------------------

def run_broker(args):
    ctx = zmq.Context()
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    sock = ctx.socket(zmq.ROUTER)
    sock.linger = 0
    sock.bind(args.endpoint)
    print("broker: listening on " +
          sock.getsockopt(zmq.LAST_ENDPOINT).decode(), flush=True)
    workers = {}  # identity -> [service, last heard (ms)]
    idle = collections.defaultdict(collections.deque)   # service -> ids
    queue = collections.defaultdict(collections.deque)  # service -> requests
    requests = replies = invalid = 0
    last_beat = now_ms()

    def dispatch(service):
        while idle[service] and queue[service]:
            worker = idle[service].popleft()
            if worker not in workers:
                continue
            client, body = queue[service].popleft()
            sock.send_multipart([worker, b"", W_WORKER, REQUEST, client, b""] +
                                body)

    def forget(worker):
        info = workers.pop(worker, None)
        if info is not None and worker in idle[info[0]]:
            idle[info[0]].remove(worker)

    while not stop:
        try:
            events = sock.poll(args.heartbeat_interval / 4)
        except zmq.ZMQError:
            continue  # EINTR on a signal
        while events:
            try:
                frames = sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            sender = frames[0]
            if len(frames) < 3 or frames[1] != b"":
                invalid += 1
                continue
            if frames[2] == C_CLIENT and len(frames) >= 5:
                service, body = frames[3], frames[4:]
                requests += 1
                if args.mmi and service.startswith(b"mmi."):
                    code = b"501"
                    if service == b"mmi.service":
                        code = (b"200" if any(w[0] == body[0]
                                             for w in workers.values())
                                else b"404")
                    sock.send_multipart([sender, b"", C_CLIENT, service, code])
                    replies += 1
                    continue
                queue[service].append((sender, body))
                dispatch(service)
            elif frames[2] == W_WORKER and len(frames) >= 4:
                command = frames[3]
                info = workers.get(sender)
                if info is not None:
                    info[1] = now_ms()
                if command == READY and len(frames) == 5 and info is None:
                    workers[sender] = [frames[4], now_ms()]
                    idle[frames[4]].append(sender)
                    dispatch(frames[4])
                elif command == REPLY and info is not None and len(frames) >= 7:
                    sock.send_multipart([frames[4], b"", C_CLIENT, info[0]] +
                                        frames[6:])
                    replies += 1
                    idle[info[0]].append(sender)
                    dispatch(info[0])
                elif command == HEARTBEAT and info is not None:
                    pass
                elif command == DISCONNECT:
                    forget(sender)
                else:
                    sock.send_multipart([sender, b"", W_WORKER, DISCONNECT])
                    forget(sender)
            else:
                invalid += 1  # e.g. zb.tag.MDPC01: not RFC 7
        t = now_ms()
        if t - last_beat >= args.heartbeat_interval:
            last_beat = t
            for worker, info in list(workers.items()):
                expiry_ms = args.heartbeat_interval * args.heartbeat_liveness
                if t - info[1] > expiry_ms:
                    forget(worker)
                elif worker in idle[info[0]]:
                    sock.send_multipart([worker, b"", W_WORKER, HEARTBEAT])
    sock.close(linger=0)
    ctx.term()
    print(f"broker: requests={requests} replies={replies} "
          f"invalid={invalid}", flush=True)
    return 0


# --- MMI and raw ----------------------------------------------------------------

def run_mmi(args):
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REQ)
    sock.linger = 0
    sock.connect(args.endpoint)
    sock.send_multipart([C_CLIENT, b"mmi.service", args.service.encode()])
    code = None
    if sock.poll(args.timeout, zmq.POLLIN):
        reply = sock.recv_multipart()
        if len(reply) >= 3 and reply[0] == C_CLIENT and reply[1] == b"mmi.service":
            code = reply[2].decode(errors="replace")
    sock.close(linger=0)
    ctx.term()
    print(f"mmi: service={args.service} code={code}", flush=True)
    return {"200": 0, "404": 1}.get(code, 2)


def run_raw(args):
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(args.endpoint)
    frames = [f.encode().decode("unicode_escape").encode("latin-1")
              for f in args.frames]
    sock.send_multipart(frames)
    got = []
    if sock.poll(args.timeout, zmq.POLLIN):
        got = sock.recv_multipart()
    sock.close(linger=0)
    ctx.term()
    print("raw: reply=" + repr(got), flush=True)
    return 0


def duration_ms(text):
    """A duration flag ("250ms", "2.5s", "1m") in milliseconds (at least 1)."""
    m = re.fullmatch(r"(\d+(?:\.\d*)?)(us|ms|s|m)", text)
    if not m:
        raise argparse.ArgumentTypeError(
            'expected a duration like "500ms" or "5s", got "%s"' % text)
    scale = {"us": 0.001, "ms": 1, "s": 1000, "m": 60000}[m.group(2)]
    ms = float(m.group(1)) * scale
    if ms <= 0:
        raise argparse.ArgumentTypeError("a duration must be > 0: " + text)
    return max(1, int(round(ms)))


def main(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    w = sub.add_parser("worker")
    w.add_argument("endpoint")
    w.add_argument("service")
    w.add_argument("--heartbeat-interval", type=duration_ms, default=2500)
    w.add_argument("--heartbeat-liveness", type=int, default=3)
    w.add_argument("--delay-ms", type=int, default=0)
    w.add_argument("--jitter-ms", type=float, default=0)
    w.add_argument("--crash-after", type=int, default=0)
    w.add_argument("--max-seconds", type=float, default=0)
    w.set_defaults(run=run_worker)

    for name, fn, timeout in (("client", run_client, 2500),
                              ("async-client", run_async_client, 5000)):
        c = sub.add_parser(name)
        c.add_argument("endpoint")
        c.add_argument("service")
        c.add_argument("--requests", type=int, default=10000)
        c.add_argument("--timeout", type=duration_ms, default=timeout)
        c.add_argument("--retries", type=int, default=3)
        c.add_argument("--size", type=int, default=16)
        if name == "async-client":
            c.add_argument("--window", type=int, default=100)
            c.add_argument("--tagged", action="store_true")
        c.set_defaults(run=fn)

    b = sub.add_parser("broker")
    b.add_argument("endpoint")
    b.add_argument("--mmi", action="store_true")
    b.add_argument("--heartbeat-interval", type=duration_ms, default=2500)
    b.add_argument("--heartbeat-liveness", type=int, default=3)
    b.set_defaults(run=run_broker)

    m = sub.add_parser("mmi")
    m.add_argument("endpoint")
    m.add_argument("service")
    m.add_argument("--timeout", type=duration_ms, default=2500)
    m.set_defaults(run=run_mmi)

    r = sub.add_parser("raw")
    r.add_argument("endpoint")
    r.add_argument("frames", nargs="+")
    r.add_argument("--timeout", type=duration_ms, default=1000)
    r.set_defaults(run=run_raw)

    args = p.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
