#!/usr/bin/python3
# Copyright 2026 The zbrokers Authors.
"""zb-broker's consensus broker, as a separate process, against CCp100 peers
written here from the protocol description (docs/protocols/ccp.md) with raw
pyzmq sockets -- independent of zbrokers' own client and worker libraries.
The client peer behaves like the 2011 Ruby rzmq_brokers client: sequence
numbers +1 per request, the same sequence id on a resend, and a new socket
and client id only after repeated timeouts.

  ccp_peers_test.py --broker PATH/zb-broker SCENARIO [SCENARIO...]
  ccp_peers_test.py --broker PATH/zb-broker all

Scenarios (each bounded; each kills and reaps every process it started):

  zero-payload    a REQUEST without payload frames is served, workers see it
                  as sent, the client's next number is accepted
  malformed       a REQUEST with a bad service name but a readable sequence
                  id is answered zb:malformed and uses up its number
  restart-adopt   zb-broker is SIGKILLed and restarted on the same port; the
                  2011-style client, which never reopens after an answered
                  failure, goes on with its next sequence number and is
                  adopted; its old id from another socket is still refused
"""

import argparse
import os
import socket
import struct
import sys
import threading
import time

import zmq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "test", "testing"))
import zb_process as zp  # noqa: E402  (the shared process harness)
from zb_process import Failure, check, wait_for  # noqa: E402

TAG = b"CCp100"
READY, HEARTBEAT, REQUEST, SUCCESS, FAILURE, DISCONNECT, PING = (
    bytes([i]) for i in range(1, 8))

def seq_id(sequence, client_id):
    return struct.pack(">III", sequence >> 32, sequence & 0xffffffff,
                       client_id)


def parse_seq(frame):
    hi, lo, cid = struct.unpack(">III", frame)
    return (hi << 32) | lo, cid


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# --- the broker process ------------------------------------------------------

def start_broker(exe, port, extra=()):
    """zb-broker with one consensus endpoint on `port`; its log lines are
    collected."""
    return zp.ZbBroker.start(exe, ["--consensus", f"tcp://127.0.0.1:{port}",
                                   "--stats-interval", "0s", *extra],
                             timeout=10)


# --- peers ----------------------------------------------------------------------

class Worker(threading.Thread):
    """A raw CCp100 worker: READY, heartbeats, echoes every payload prefixed
    with its name; re-registers on DISCONNECT or after silence.  Records the
    body frames of every request it got."""

    def __init__(self, ctx, endpoint, service, name, interval_ms=200,
                 retries=5):
        super().__init__(daemon=True)
        self.ctx, self.endpoint, self.service = ctx, endpoint, service
        self.label = name.encode()
        self.interval_ms, self.retries = interval_ms, retries
        self.requests = []
        self.registrations = 0
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.start()

    def _open(self):
        s = self.ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.connect(self.endpoint)
        s.send_multipart([b"", TAG, READY, self.service,
                          struct.pack(">I", self.interval_ms),
                          bytes([self.retries])])
        self.registrations += 1
        return s

    def run(self):
        s = self._open()
        last_heard = last_sent = time.monotonic()
        interval = self.interval_ms / 1000
        while not self.stopping.is_set():
            if s.poll(int(interval * 500)):
                frames = s.recv_multipart()
                last_heard = time.monotonic()
                body = frames[1:]
                if len(body) >= 2 and body[1] == REQUEST:
                    with self.lock:
                        self.requests.append(body)
                    s.send_multipart([b"", TAG, SUCCESS, body[2], body[3],
                                      self.label, *body[4:]])
                    last_sent = time.monotonic()
                elif len(body) >= 2 and body[1] == DISCONNECT:
                    s.close()
                    s = self._open()
                    last_heard = last_sent = time.monotonic()
            now = time.monotonic()
            if now - last_heard > interval * self.retries:
                s.close()
                s = self._open()
                last_heard = last_sent = time.monotonic()
            elif now - last_sent >= interval:
                s.send_multipart([b"", TAG, HEARTBEAT])
                last_sent = now
        s.close()

    def stop(self):
        self.stopping.set()
        self.join(5)


class Client2011:
    """Behaves like the 2011 rzmq_brokers client: a DEALER; each request
    takes the next sequence number; a timed-out request is resent with the
    SAME sequence id; only `max_timeouts` timeouts in a row make it reopen
    its socket with a new client id (an answered failure never does)."""

    def __init__(self, ctx, endpoint, client_id, max_timeouts=3):
        self.ctx, self.endpoint = ctx, endpoint
        self.client_id = client_id
        self.sequence = 1
        self.max_timeouts = max_timeouts
        self.timeouts = 0
        self.reopens = 0
        self.socket = None
        self._open()

    def _open(self):
        if self.socket is not None:
            self.socket.close()
        self.socket = self.ctx.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(self.endpoint)

    def send(self, service, payload, sequence=None):
        seq = self.sequence if sequence is None else sequence
        self.socket.send_multipart([b"", TAG, REQUEST, service,
                                    seq_id(seq, self.client_id), *payload])
        return seq

    def receive(self, timeout_ms):
        """The next reply as (type, sequence, client_id, payload), or None."""
        if not self.socket.poll(timeout_ms):
            return None
        frames = self.socket.recv_multipart()
        check(frames[0] == b"" and frames[1] == TAG,
              f"not a CCp100 reply: {frames!r}")
        seq, cid = parse_seq(frames[4])
        return frames[2], seq, cid, frames[5:]

    def request(self, service, payload, timeout_ms=1000, retries=2):
        """One request, 2011 style; returns (type, payload) or None when it
        timed out (after its retries)."""
        seq = self.sequence
        self.sequence += 1
        for _ in range(retries + 1):
            self.send(service, payload, sequence=seq)
            deadline = time.monotonic() + timeout_ms / 1000
            while True:
                left = int((deadline - time.monotonic()) * 1000)
                reply = self.receive(max(left, 0)) if left > 0 else None
                if reply is None:
                    break
                kind, rseq, rcid, rpayload = reply
                if rseq == seq and rcid == self.client_id:
                    self.timeouts = 0
                    return kind, rpayload
            self.timeouts += 1
            if self.timeouts > self.max_timeouts:
                # The 2011 client's only way out: new socket, new id, 1.
                self.reopens += 1
                self.timeouts = 0
                self._open()
                self.client_id = (self.client_id * 2654435761 + 1) & 0xffffffff
                self.sequence = 1
                return None
        return None


# --- scenarios ---------------------------------------------------------------

def serve_one(client, service, payload):
    """Sends until a worker has registered (zb:no-workers comes back at once
    before that); returns the final (type, payload)."""
    deadline = time.monotonic() + 10
    while True:
        result = client.request(service, payload)
        check(result is not None, "request timed out")
        kind, body = result
        if kind == FAILURE and body[:1] == [b"zb:no-workers"] and \
                time.monotonic() < deadline:
            time.sleep(0.05)
            continue
        return kind, body


def scenario_zero_payload(exe):
    ctx = zmq.Context()
    broker = start_broker(exe, free_port())
    worker = Worker(ctx, broker.endpoint("consensus"), b"svc", "w")
    try:
        client = Client2011(ctx, broker.endpoint("consensus"), 0x1fb2297a)
        kind, body = serve_one(client, b"svc", [b"warm-up"])
        check(kind == SUCCESS, f"warm-up failed: {body!r}")
        before = len(worker.requests)
        # A message that encodes to no frames: [CCp100, 0x03, svc, seq].
        result = client.request(b"svc", [])
        check(result is not None, "a REQUEST without payload got no answer")
        kind, body = result
        check(kind == SUCCESS, f"zero-payload request failed: {body!r}")
        check(body == [b"w"], f"unexpected reply payload {body!r}")
        with worker.lock:
            got = worker.requests[before]
        check(len(got) == 4, f"the worker saw {len(got)} body frames: {got!r}")
        # Its number was not spent behind its back: the next one works.
        for i in range(5):
            kind, body = client.request(b"svc", [b"next%d" % i])
            check(kind == SUCCESS, f"request after it failed: {body!r}")
    finally:
        worker.stop()
        broker.kill()
        ctx.destroy(0)


def scenario_malformed(exe):
    ctx = zmq.Context()
    broker = start_broker(exe, free_port())
    worker = Worker(ctx, broker.endpoint("consensus"), b"svc", "w")
    try:
        client = Client2011(ctx, broker.endpoint("consensus"), 0x0bad0bad)
        kind, body = serve_one(client, b"svc", [b"warm-up"])
        check(kind == SUCCESS, f"warm-up failed: {body!r}")
        result = client.request(b"s" * 300, [b"x"], retries=0)
        check(result is not None, "a malformed REQUEST was not answered")
        kind, body = result
        check(kind == FAILURE and body[:1] == [b"zb:malformed"],
              f"expected zb:malformed, got {kind!r} {body!r}")
        check(b"300 bytes" in body[1], f"no explanation: {body!r}")
        kind, body = client.request(b"svc", [b"after"])
        check(kind == SUCCESS, f"the next number was refused: {body!r}")
    finally:
        worker.stop()
        broker.kill()
        ctx.destroy(0)


def scenario_restart_adopt(exe):
    ctx = zmq.Context()
    port = free_port()
    broker = start_broker(exe, port)
    worker = Worker(ctx, broker.endpoint("consensus"), b"svc", "w",
                    interval_ms=100, retries=3)
    try:
        client = Client2011(ctx, broker.endpoint("consensus"), 0x1fb2297a)
        kind, body = serve_one(client, b"svc", [b"one"])
        check(kind == SUCCESS, f"before the restart: {body!r}")
        for i in range(2):
            kind, body = client.request(b"svc", [b"more"])
            check(kind == SUCCESS, f"before the restart: {body!r}")
        number_before = client.sequence

        broker.kill()  # SIGKILL: no goodbyes
        broker = broker.restart()
        wait_for(lambda: worker.registrations >= 2, 10,
                 "the worker did not register with the new broker")
        # The new broker knows nobody.  The 2011 client goes on with its next
        # number (4 here) on the same socket: it must be adopted, not told
        # "zb:bad-sequence" forever.
        deadline = time.monotonic() + 10
        while True:
            result = client.request(b"svc", [b"after"], retries=0)
            if result is not None and result[0] == FAILURE and \
                    result[1][:1] == [b"zb:no-workers"] and \
                    time.monotonic() < deadline:
                time.sleep(0.05)  # the worker's READY is on its way
                continue
            break
        check(result is not None, "no answer after the restart")
        kind, body = result
        check(kind == SUCCESS,
              f"not adopted after the restart: {kind!r} {body!r}")
        check(client.reopens == 0, "the client had to reopen its socket")
        check(client.sequence > number_before, "sequence did not advance")
        for i in range(5):
            kind, body = client.request(b"svc", [b"again"])
            check(kind == SUCCESS, f"after adoption: {body!r}")

        # Adopted ids keep the hijack guard: the same id from another socket
        # is refused, and the owner is not disturbed.
        thief = Client2011(ctx, broker.endpoint("consensus"), client.client_id)
        thief.sequence = client.sequence
        result = thief.request(b"svc", [b"steal"], retries=0)
        check(result is not None and result[0] == FAILURE and
              result[1][:1] == [b"zb:bad-sequence"],
              f"a known id from another socket was accepted: {result!r}")
        kind, body = client.request(b"svc", [b"owner"])
        check(kind == SUCCESS, f"the owner was disturbed: {body!r}")
    finally:
        worker.stop()
        broker.kill()
        ctx.destroy(0)


SCENARIOS = {
    "zero-payload": scenario_zero_payload,
    "malformed": scenario_malformed,
    "restart-adopt": scenario_restart_adopt,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--broker", required=True)
    parser.add_argument("scenarios", nargs="+")
    args = parser.parse_args()
    names = list(SCENARIOS) if args.scenarios == ["all"] else args.scenarios
    failed = 0
    for name in names:
        start = time.monotonic()
        try:
            SCENARIOS[name](args.broker)
            print(f"PASS {name} ({time.monotonic() - start:.1f}s)")
        except Failure as e:
            failed += 1
            print(f"FAIL {name}: {e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
