#!/usr/bin/python3
# Copyright 2026 The zbrokers Authors.
"""Titanic (RFC 9) under kill -9, as real processes.

zb-broker (Majordomo), zb-titanic and two echo workers (the independent
pyzmq peers of test/interop/mdp_peers.py) run as child processes; this
script is the client, written here from RFC 7 and RFC 9 with pyzmq only (a
peer the C++ code did not produce).  It submits N requests to
titanic.request, reads each reply with titanic.reply and closes it with
titanic.close, while it kills -9 Titanic, the broker or a worker (by PID,
chosen at random with --seed) and restarts it.  It checks:

  * every ACCEPTED request (a "200" + UUID came back) is eventually answered
    with "200" and exactly its own echo, and every later titanic.reply
    gives the same answer (one stored reply, never replaced);
  * no accepted request is ever "400" (unknown) before it is closed;
  * after titanic.close, titanic.reply says "400" and the store file holds
    no accepted request any more; what rows remain are orphans -- requests
    stored whose "200" never reached us because the process died in
    between, so we sent them again -- and there are at most as many as
    submissions we had to resend;
  * zb-titanic exits 0 on SIGTERM at the end.

Every wait is bounded (--budget seconds for the whole run), only 127.0.0.1
is used, and every child dies with this script (zb_process).

With --in-daemon, Titanic is zb-broker's own ([titanic] in its TOML file,
in front of its Majordomo broker): the kills are of the daemon (Titanic and
the broker at once) and of the workers, the same checks hold, the daemon's
/metrics must agree with the file at the end (zb_titanic_stored_requests is
the orphan rows, zb_titanic_pending_requests 0), and zb-broker exits 0 on
SIGTERM.

  titanic_process_test.py --broker zb-broker --titanic zb-titanic \
      [--requests 60] [--kills 6] [--seed S] [--budget 150]
  titanic_process_test.py --broker zb-broker --in-daemon [...]
"""

import argparse
import os
import random
import shutil
import socket
import sqlite3
import sys
import tempfile
import threading
import time

import zmq

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "test", "testing"))
import zb_process as zp  # noqa: E402

MDP_CLIENT = b"MDPC01"
PEERS = os.path.join(HERE, "..", "..", "test", "interop", "mdp_peers.py")
HEARTBEAT_MS = 250


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MdpClient:
    """One request at a time on a DEALER socket; on a timeout the socket is
    closed and a new one opened (RFC 7's recovery), so a late reply can
    never be taken for the answer to a later request."""

    def __init__(self, ctx, endpoint):
        self.ctx = ctx
        self.endpoint = endpoint
        self.socket = None
        self.reopen()

    def reopen(self):
        if self.socket is not None:
            self.socket.close(linger=0)
        self.socket = self.ctx.socket(zmq.DEALER)
        self.socket.linger = 0
        self.socket.connect(self.endpoint)

    def call(self, service, frames, timeout_ms):
        """The reply body (list of bytes), or None after timeout_ms."""
        self.socket.send_multipart([b"", MDP_CLIENT, service] + frames)
        deadline = time.monotonic() + timeout_ms / 1000.0
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self.socket.poll(int(left * 1000) + 1):
                self.reopen()
                return None
            reply = self.socket.recv_multipart()
            zp.check(len(reply) >= 3 and reply[0] == b"" and
                     reply[1] == MDP_CLIENT and reply[2] == service,
                     f"malformed MDP reply to {service!r}: {reply!r}")
            return reply[3:]


class Cluster:
    """The broker, Titanic and the workers, each restartable after kill -9."""

    def __init__(self, args, workdir):
        self.args = args
        self.port = free_port()
        self.endpoint = f"tcp://127.0.0.1:{self.port}"
        self.store = os.path.join(workdir, "titanic.db")
        self.config = os.path.join(workdir, "zb-broker.toml")
        self.metrics_port = free_port()
        self.broker = None
        self.titanic = None
        self.workers = [None, None]
        self.kills = {"titanic": 0, "broker": 0, "worker": 0}

    def start_broker(self):
        args = ["--majordomo", self.endpoint,
                "--heartbeat-interval", f"{HEARTBEAT_MS}ms"]
        if self.args.in_daemon:
            # Titanic's settings from the file, as a deployment has them.
            with open(self.config, "w") as f:
                f.write("[daemon]\n"
                        f'metrics = "127.0.0.1:{self.metrics_port}"\n'
                        'stats_interval = "1s"\n'
                        "[titanic]\n"
                        f'store_path = "{self.store}"\n'
                        'request_timeout = "2s"\n'
                        'retry_delay = "200ms"\n')
            args += ["--config", self.config]
        self.broker = zp.ZbBroker.start(self.args.broker, args, busy_for=20)

    def start_titanic(self):
        if self.args.in_daemon:
            return  # zb-broker's own
        self.titanic = zp.Proc(
            [self.args.titanic, "--broker", self.endpoint,
             "--store-path", self.store,
             "--heartbeat-interval", f"{HEARTBEAT_MS}ms",
             "--request-timeout", "2s", "--retry-delay", "200ms",
             "--stats-interval", "1s"],
            name="zb-titanic", max_lines=2000)
        m = self.titanic.wait_line(r"serving|cannot start", 20)
        zp.check(m is not None and "serving" in m.group(0),
                 "zb-titanic did not start:\n" + self.titanic.describe())

    def start_worker(self, i):
        self.workers[i] = zp.Proc(
            [zp.PYTHON, PEERS, "worker", self.endpoint, "echo",
             "--heartbeat-interval", f"{HEARTBEAT_MS}ms",
             "--delay-ms", str(self.args.worker_delay_ms),
             "--jitter-ms", str(self.args.worker_delay_ms)],
            name=f"worker{i}", max_lines=100)

    def start(self):
        self.start_broker()
        self.start_titanic()
        for i in range(len(self.workers)):
            self.start_worker(i)

    def kill_one(self, rng, what):
        """kill -9 `what` (a worker at random) by PID and start it again."""
        self.kills[what] += 1
        if what == "titanic":
            self.titanic.kill9()
            time.sleep(rng.uniform(0, 0.3))
            self.start_titanic()
        elif what == "broker":
            self.broker.kill9()
            time.sleep(rng.uniform(0, 0.3))
            self.start_broker()
        else:
            i = rng.randrange(len(self.workers))
            self.workers[i].kill9()
            time.sleep(rng.uniform(0, 0.3))
            self.start_worker(i)
        return what


def stored_rows(path):
    """(uuid, first body frame) of every row of the store, read on our own
    connection (read-only; WAL lets us read while zb-titanic writes)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        rows = db.execute("SELECT uuid, body FROM requests").fetchall()
    finally:
        db.close()
    out = []
    for uuid, blob in rows:
        blob = bytes(blob)
        n = int.from_bytes(blob[:4], "big") if len(blob) >= 4 else 0
        out.append((uuid, blob[4:4 + n]))
    return out


def run(args):
    rng = random.Random(args.seed)
    # The killer thread draws from its own generator, the client from this.
    body_rng = random.Random(args.seed + 1)
    print(f"titanic_process_test: seed {args.seed}, {args.requests} requests,"
          f" {args.kills} kills"
          f"{', Titanic in zb-broker' if args.in_daemon else ''}", flush=True)
    deadline = time.monotonic() + args.budget
    workdir = tempfile.mkdtemp(prefix="zb_titanic_proc_")
    ctx = zmq.Context()
    cluster = Cluster(args, workdir)
    done = threading.Event()
    try:
        cluster.start()
        client = MdpClient(ctx, cluster.endpoint)
        # The killer thread owns the child processes while it runs (the
        # main thread only talks MDP), so kills land at random points of
        # Titanic's, the broker's and the workers' work, also between
        # storing a request and answering it.
        # The thread stays until the end (`done`): a child gets SIGKILL when
        # the THREAD that started it exits (PR_SET_PDEATHSIG), and it
        # restarts processes that must outlive the kills.
        stop = threading.Event()
        killer_error = []
        killer_idle = threading.Event()

        def killer():
            try:
                # Each kind at least once (when there are 3 kills or more),
                # the rest at random, in a random order.
                kinds = (["broker", "worker"] if args.in_daemon else
                         ["titanic", "broker", "worker"])
                plan = (kinds + [rng.choice(kinds) for _ in
                                 range(args.kills - len(kinds))])[:args.kills]
                rng.shuffle(plan)
                for what in plan:
                    if stop.wait(rng.uniform(0.2, args.kill_every)):
                        break
                    cluster.kill_one(rng, what)
                    print(f"  killed -9 and restarted {what}", flush=True)
            except Exception as e:  # reported by the main thread
                killer_error.append(e)
            killer_idle.set()
            done.wait(args.budget + 60)

        killer_thread = threading.Thread(target=killer, daemon=True)
        killer_thread.start()

        def tick():
            zp.check(not killer_error,
                     f"restart failed: {killer_error[0] if killer_error else ''}")
            zp.check(time.monotonic() < deadline,
                     f"out of time (--budget {args.budget}s): "
                     f"{len(unanswered)} accepted requests unanswered")

        t0 = time.monotonic()

        def phase(what):
            print(f"  {time.monotonic() - t0:6.1f}s {what}", flush=True)

        accepted = {}    # uuid -> body
        answers = {}     # uuid -> the "200" reply
        unanswered = []  # accepted, oldest first
        resubmitted = 0  # submissions sent again after no answer

        def poll_one():
            """One titanic.reply for the oldest unanswered request."""
            uuid = unanswered[0]
            r = client.call(b"titanic.reply", [uuid.encode()], 1500)
            if r is None:
                return
            code = r[0][:3]
            zp.check(code != b"400", f"accepted request {uuid} is unknown")
            if code == b"200":
                zp.check(r[1:] == [accepted[uuid]],
                         f"{uuid}: reply {r[1:]!r} is not its own echo "
                         f"{accepted[uuid]!r}")
                answers[uuid] = r
                unanswered.pop(0)
            else:
                time.sleep(0.02)  # "300" (pending) or "500": retry later

        # Submissions are spread over the time the kills take, and replies
        # are read as they come, so that kills land while requests are
        # being stored, dispatched, answered and read.
        pace = args.kills * args.kill_every * 0.6 / max(args.requests, 1)
        for i in range(args.requests):
            body = f"request-{i}-{body_rng.getrandbits(64):016x}".encode()
            while True:
                tick()
                r = client.call(b"titanic.request", [b"echo", body], 1500)
                if r is None:
                    resubmitted += 1
                    continue
                zp.check(len(r) >= 1, "empty titanic.request reply")
                code = r[0][:3]
                if code == b"200":
                    zp.check(len(r) == 2 and len(r[1]) == 32,
                             f"titanic.request 200 without a UUID: {r!r}")
                    uuid = r[1].decode()
                    zp.check(uuid not in accepted, f"UUID {uuid} given twice")
                    accepted[uuid] = body
                    unanswered.append(uuid)
                    break
                zp.check(code == b"500", f"titanic.request answered {r!r}")
                time.sleep(0.1)  # RFC 9: retry later
            if unanswered:
                poll_one()
            time.sleep(pace)
        phase(f"submitted {len(accepted)} ({resubmitted} resubmissions)")
        while unanswered:
            tick()
            poll_one()
        # The test must have killed what it says it killed.
        zp.check(killer_idle.wait(max(1, deadline - time.monotonic())),
                 "the kills did not finish in time")
        zp.check(not killer_error, f"restart failed: {killer_error}")
        zp.check(sum(cluster.kills.values()) == args.kills,
                 f"only {cluster.kills} of {args.kills} kills happened")
        phase(f"read {len(answers)} answers")
        # The rest runs on a quiet cluster: every process is up.
        stop.set()
        # Every answer is stable: read once more, then close.
        for uuid, first in answers.items():
            while True:
                zp.check(time.monotonic() < deadline, "out of time closing")
                r = client.call(b"titanic.reply", [uuid.encode()], 1500)
                if r is None:
                    continue
                zp.check(r == first, f"{uuid}: answer changed {first!r} -> "
                         f"{r!r}")
                r = client.call(b"titanic.close", [uuid.encode()], 1500)
                if r is not None:
                    zp.check(r == [b"200"], f"titanic.close answered {r!r}")
                    break
        phase("closed every request")
        for uuid in accepted:
            r = None
            while r is None:
                zp.check(time.monotonic() < deadline, "out of time checking")
                r = client.call(b"titanic.reply", [uuid.encode()], 1500)
            zp.check(r[0][:3] == b"400", f"closed {uuid} still answers {r!r}")

        rows = stored_rows(cluster.store)
        bodies = set(accepted.values())
        for uuid, first in rows:
            zp.check(uuid not in accepted, f"closed {uuid} still stored")
        zp.check(len(rows) <= resubmitted,
                 f"{len(rows)} rows left, more than the {resubmitted} "
                 f"resubmissions that can leave an orphan")
        for _, first in rows:
            zp.check(first in bodies, f"a stored row nobody sent: {first!r}")

        client.socket.close(linger=0)
        if args.in_daemon:
            # The daemon's metrics say what the file holds (refreshed once
            # a second).
            want = {"zb_titanic_stored_requests": len(rows),
                    "zb_titanic_pending_requests": 0}
            while True:
                _, body = zp.http_get(cluster.metrics_port)
                text = body.decode("utf-8", "replace")
                got = {}
                for line in text.splitlines():
                    for name in want:
                        prefix = name + '{broker="titanic"} '
                        if line.startswith(prefix):
                            got[name] = float(line[len(prefix):])
                if got == want:
                    break
                zp.check(time.monotonic() < deadline,
                         f"/metrics says {got}, the file {want}")
                time.sleep(0.2)
            code = cluster.broker.stop()
            zp.check(code == 0, f"zb-broker exited {code} on SIGTERM:\n"
                     + cluster.broker.tail())
        else:
            code = cluster.titanic.stop()
            zp.check(code == 0, f"zb-titanic exited {code} on SIGTERM:\n"
                     + cluster.titanic.tail())
        print(f"titanic_process_test: OK: {len(accepted)} accepted, all "
              f"answered once and closed; kills {cluster.kills}; "
              f"{resubmitted} resubmissions, {len(rows)} orphan rows",
              flush=True)
        return 0
    except zp.Failure as e:
        print(f"FAIL: {e}", flush=True)
        for p in [cluster.titanic, cluster.broker] + cluster.workers:
            if p is not None:
                print(p.describe()[-4000:], flush=True)
        return 1
    finally:
        zp.kill_all()
        done.set()
        ctx.term()
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--broker", required=True)
    p.add_argument("--titanic", default=None,
                   help="zb-titanic (not with --in-daemon)")
    p.add_argument("--in-daemon", action="store_true",
                   help="Titanic inside zb-broker ([titanic]), not zb-titanic")
    p.add_argument("--requests", type=int, default=60)
    p.add_argument("--kills", type=int, default=6)
    p.add_argument("--kill-every", type=float, default=1.5,
                   help="most seconds between two kills")
    p.add_argument("--worker-delay-ms", type=int, default=150,
                   help="each echo takes this long plus up to as much again"
                   " (slow workers: kills find requests pending)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--budget", type=float, default=150)
    args = p.parse_args(argv)
    if args.titanic is None and not args.in_daemon:
        p.error("--titanic is needed (or --in-daemon)")
    if args.seed is None:
        args.seed = random.randrange(1 << 30)
    return run(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
