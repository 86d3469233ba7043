# Copyright 2026 The zbrokers Authors.
"""One worker registered with several brokers at once (issue 14): endpoint=
takes a comma-separated str or a sequence of str, every broker gets the
worker, each request is answered through the broker it came from, and a
broker killed with kill -9 does not stop the worker serving the others; it
re-registers when that broker comes back on the same port."""

import os
import sys
import time
import unittest

import zbrokers

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "test", "testing"))
import zb_process as zp  # noqa: E402  (the suite's process harness)

try:
    import zmq  # raw pyzmq: a Majordomo client written here, not ours
except ImportError:  # the pyenv python3 on PATH has no pyzmq
    zmq = None

WAIT = 10.0
HEARTBEAT = 0.2


class InProcessTest(unittest.TestCase):
    """Two in-process brokers of each protocol on one reactor."""

    def setUp(self):
        self.reactor = zbrokers.Reactor()
        self.reported = []
        self.reactor.error_handler = lambda e, where: self.reported.append(
            (where, e))

    def tearDown(self):
        self.reactor.close()
        self.assertEqual(self.reported, [])

    def wait(self, pred, what):
        self.assertTrue(self.reactor.run_until(pred, WAIT), what)

    def test_mdp_worker_takes_a_sequence_and_serves_both(self):
        a = zbrokers.MdpBroker(self.reactor, "tcp://127.0.0.1:*",
                               heartbeat_interval=HEARTBEAT)
        b = zbrokers.MdpBroker(self.reactor, "tcp://127.0.0.1:*",
                               heartbeat_interval=HEARTBEAT)
        seen = []

        def handler(frames):
            seen.append(frames[0])
            return [b"echo:" + frames[0]]
        w = zbrokers.MdpWorker(self.reactor, [a.endpoint, b.endpoint],
                               b"echo", handler, heartbeat_interval=HEARTBEAT,
                               reconnect_delay=0.05)
        self.assertEqual(w.endpoint, a.endpoint + "," + b.endpoint)
        self.wait(lambda: a.worker_count(b"echo") == 1
                  and b.worker_count(b"echo") == 1,
                  "the worker did not register with both brokers")
        for broker, body in ((a, b"via-a"), (b, b"via-b")):
            client = zbrokers.MdpClient(self.reactor, broker.endpoint,
                                        timeout=5.0)
            results = []
            client.request(b"echo", [body], results.append)
            self.wait(lambda: results, "no reply")
            self.assertTrue(results[0].ok, results[0])
            self.assertEqual(results[0].frames, [b"echo:" + body])
            client.close()
        self.assertEqual(sorted(seen), [b"via-a", b"via-b"])
        w.close()
        self.wait(lambda: a.worker_count(b"echo") == 0
                  and b.worker_count(b"echo") == 0,
                  "closing the worker did not disconnect it from both")

    def test_consensus_worker_takes_a_comma_separated_str(self):
        a = zbrokers.ConsensusBroker(self.reactor, "tcp://127.0.0.1:*")
        b = zbrokers.ConsensusBroker(self.reactor, "tcp://127.0.0.1:*")
        w = zbrokers.ConsensusWorker(
            self.reactor, f"{a.endpoint}, {b.endpoint}", b"echo",
            lambda frames: frames, heartbeat_interval=HEARTBEAT)
        self.wait(lambda: a.worker_count(b"echo") == 1
                  and b.worker_count(b"echo") == 1,
                  "the worker did not register with both brokers")
        for broker, body in ((a, b"via-a"), (b, b"via-b")):
            client = zbrokers.ConsensusClient(self.reactor, broker.endpoint)
            results = []
            client.request(b"echo", [body], results.append, timeout=5.0)
            self.wait(lambda: results, "no answer")
            self.assertTrue(results[0].ok, results[0])
            self.assertEqual(results[0].frames, [body])
            client.close()
        w.close()

    def test_bad_endpoint_lists(self):
        ep = "tcp://127.0.0.1:5999"
        for cls in (zbrokers.MdpWorker, zbrokers.ConsensusWorker):
            for bad in ([ep, ep], [ep, ""], f"{ep},", []):
                with self.assertRaises(zbrokers.ZbError, msg=repr(bad)):
                    cls(self.reactor, bad, b"svc", lambda f: f)
            for bad in (None, 5, [ep, 5], [b"tcp://127.0.0.1:1"]):
                with self.assertRaises(TypeError, msg=repr(bad)):
                    cls(self.reactor, bad, b"svc", lambda f: f)


@unittest.skipUnless(os.environ.get("ZB_BROKER"),
                     "ZB_BROKER is not set (meson sets it to zb-broker)")
@unittest.skipIf(zmq is None, "pyzmq is not installed for this python3 "
                 "(the suite runs /usr/bin/python3, which has it)")
class KillOneBrokerTest(unittest.TestCase):
    """Two zb-broker processes; one MdpWorker and one ConsensusWorker, each
    on both.  The first broker is killed with kill -9 (by PID) and later
    restarted on its port."""

    def setUp(self):
        self.ctx = zmq.Context()
        self.reactor = zbrokers.Reactor()
        self.brokers = [self.start() for _ in range(2)]

    def tearDown(self):
        self.reactor.close()
        self.ctx.destroy(linger=0)
        zp.kill_all()

    def start(self, mdp="tcp://127.0.0.1:*", ccp="tcp://127.0.0.1:*"):
        return zp.ZbBroker.start(os.environ["ZB_BROKER"], [
            "--majordomo", mdp, "--consensus", ccp,
            "--heartbeat-interval", f"{int(HEARTBEAT * 1000)}ms",
            "--stats-interval", "0s"], busy_for=20)

    def client(self, broker):
        s = self.ctx.socket(zmq.DEALER)
        s.linger = 0
        s.connect(broker.endpoint("majordomo"))
        return s

    def serve_until(self, pred, timeout=WAIT):
        """Runs the workers' reactor (this thread) until pred() holds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pred():
                return True
            self.reactor.run_once(0.01)
        return pred()

    def mdp_round_trip(self, sock, body):
        """Sends one request and runs the worker until the reply is back."""
        sock.send_multipart([b"", b"MDPC01", b"echo", body])
        got = []

        def done():
            if not got and sock.poll(0):
                got.append(sock.recv_multipart())
            return bool(got)
        if not self.serve_until(done):
            return None
        self.assertEqual(got[0][:3], [b"", b"MDPC01", b"echo"])
        return got[0][3:]

    def consensus_round_trip(self, client, body):
        results = []
        client.request(b"echo", [body], results.append, timeout=2.0)
        self.assertTrue(self.serve_until(lambda: results))
        return results[0]

    def registered(self, sock):
        """Whether the broker behind `sock` knows an "echo" worker (MMI)."""
        reply = []
        sock.send_multipart([b"", b"MDPC01", b"mmi.service", b"echo"])

        def done():
            if not reply and sock.poll(0):
                reply.append(sock.recv_multipart())
            return bool(reply)
        return self.serve_until(done, 2.0) and reply[0][3:] == [b"200"]

    def test_worker_keeps_serving_the_survivor_and_rejoins(self):
        a, b = self.brokers
        mdp_list = [a.endpoint("majordomo"), b.endpoint("majordomo")]
        ccp_list = [a.endpoint("consensus"), b.endpoint("consensus")]
        mdp_worker = zbrokers.MdpWorker(
            self.reactor, mdp_list, b"echo", lambda f: [b"mdp:" + f[0]],
            heartbeat_interval=HEARTBEAT, reconnect_delay=0.05)
        ccp_worker = zbrokers.ConsensusWorker(
            self.reactor, ccp_list, b"echo", lambda f: [b"ccp:" + f[0]],
            heartbeat_interval=HEARTBEAT)
        ca, cb = self.client(a), self.client(b)
        self.assertTrue(self.serve_until(
            lambda: self.registered(ca) and self.registered(cb)),
            "the MDP worker did not register with both brokers")
        ccp_b = zbrokers.ConsensusClient(self.reactor, b.endpoint("consensus"))
        for i in range(10):
            for sock, name in ((ca, b"a"), (cb, b"b")):
                body = name + b"%d" % i
                self.assertEqual(self.mdp_round_trip(sock, body),
                                 [b"mdp:" + body])
            r = self.consensus_round_trip(ccp_b, b"c%d" % i)
            self.assertTrue(r.ok, r)
            self.assertEqual(r.frames, [b"ccp:c%d" % i])

        mdp_port, ccp_port = a.port("majordomo"), a.port("consensus")
        a.kill9()
        ca.close()
        # The survivor serves on, through both protocols, while the worker's
        # session to the dead broker times out and reconnects.
        deadline = time.monotonic() + 4 * HEARTBEAT * 3
        n = 0
        while time.monotonic() < deadline or n < 50:
            body = b"after-kill-%d" % n
            self.assertEqual(self.mdp_round_trip(cb, body), [b"mdp:" + body])
            r = self.consensus_round_trip(ccp_b, body)
            self.assertTrue(r.ok, r)
            self.assertEqual(r.frames, [b"ccp:" + body])
            n += 1

        # The killed broker returns on the same ports; the worker finds it.
        a2 = self.start(f"tcp://127.0.0.1:{mdp_port}",
                        f"tcp://127.0.0.1:{ccp_port}")
        ca2 = self.client(a2)
        self.assertTrue(self.serve_until(lambda: self.registered(ca2), 20),
                        "the MDP worker did not re-register with the "
                        "restarted broker")
        self.assertEqual(self.mdp_round_trip(ca2, b"back"), [b"mdp:back"])
        ccp_a2 = zbrokers.ConsensusClient(self.reactor,
                                          a2.endpoint("consensus"))
        # The consensus worker re-registers on its own schedule (after
        # heartbeat_liveness silent intervals): retry until it has.
        ok = None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            ok = self.consensus_round_trip(ccp_a2, b"back")
            if ok.ok:
                break
            self.serve_until(lambda: False, 0.1)
        self.assertTrue(ok.ok, ok)
        self.assertEqual(ok.frames, [b"ccp:back"])
        # b was never disturbed: still served.
        self.assertEqual(self.mdp_round_trip(cb, b"still"), [b"mdp:still"])
        mdp_worker.close()
        ccp_worker.close()
        for s in (ca2, cb):
            s.close()


if __name__ == "__main__":
    unittest.main()
