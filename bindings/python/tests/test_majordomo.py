# Copyright 2026 The zbrokers Authors.
"""Majordomo round trips through the C++ broker, from Python."""

import threading
import unittest

import zbrokers
from zbrokers import _native

WAIT = 10.0
HEARTBEAT = 0.2


class MajordomoTest(unittest.TestCase):

    def setUp(self):
        self.reactor = zbrokers.Reactor()
        self.reported = []
        self.reactor.error_handler = lambda e, where: self.reported.append(
            (where, e))
        self.broker = zbrokers.MdpBroker(self.reactor, "tcp://127.0.0.1:*",
                                         heartbeat_interval=HEARTBEAT)
        self.endpoint = self.broker.endpoint
        self.client = zbrokers.MdpClient(self.reactor, self.endpoint,
                                         timeout=5.0)

    def tearDown(self):
        self.reactor.close()

    def worker(self, service, handler, **kwargs):
        return zbrokers.MdpWorker(self.reactor, self.endpoint, service,
                                  handler, heartbeat_interval=HEARTBEAT,
                                  reconnect_delay=0.05, **kwargs)

    def wait_workers(self, service, count):
        self.assertTrue(self.reactor.run_until(
            lambda: self.broker.worker_count(service) == count, WAIT))

    def request(self, service, frames, timeout=None):
        results = []
        self.client.request(service, frames, results.append, timeout=timeout)
        self.assertTrue(self.reactor.run_until(lambda: results, WAIT))
        self.assertEqual(len(results), 1)
        return results[0]

    def test_round_trips(self):
        self.worker(b"echo", lambda frames: [b"echo:" + f for f in frames])
        self.wait_workers(b"echo", 1)
        for i in range(30):
            body = f"req {i}".encode()
            result = self.request(b"echo", [body, b""])
            self.assertTrue(result.ok, result)
            self.assertEqual(result.frames, [b"echo:" + body, b"echo:"])
        self.assertEqual(self.client.outstanding, 0)

    def test_many_in_flight_spread_over_workers(self):
        served = {"a": 0, "b": 0}

        def make(name):
            def handler(frames):
                served[name] += 1
                return frames
            return handler

        self.worker(b"echo", make("a"))
        self.worker(b"echo", make("b"))
        self.wait_workers(b"echo", 2)
        results = []
        for i in range(40):
            self.client.request(b"echo", [str(i).encode()], results.append)
        self.assertTrue(self.reactor.run_until(lambda: len(results) == 40,
                                               WAIT))
        self.assertTrue(all(r.ok for r in results))
        self.assertEqual(served["a"] + served["b"], 40)
        self.assertGreater(served["a"], 0)
        self.assertGreater(served["b"], 0)

    def test_every_reply_reaches_its_own_request(self):
        # Issue 10 item 4: 4 workers answering after different delays, 50
        # requests outstanding; every reply must be the echo of its own
        # request (the client negotiates request tags with the broker).
        import random
        rng = random.Random(7)

        def handler(frames, reply):
            self.reactor.after(rng.uniform(0, 0.003), reply.send, frames)

        for _ in range(4):
            self.worker(b"echo", handler, with_reply=True)
        self.wait_workers(b"echo", 4)
        total, window = 1000, 50
        state = {"sent": 0, "ok": 0, "wrong": 0, "failed": 0}

        def send_one():
            body = b"request-%d" % state["sent"]
            state["sent"] += 1

            def done(result, body=body):
                if not result.ok:
                    state["failed"] += 1
                elif result.frames == [body]:
                    state["ok"] += 1
                else:
                    state["wrong"] += 1
                if state["sent"] < total:
                    send_one()

            self.client.request(b"echo", [body], done)

        for _ in range(window):
            send_one()
        self.assertTrue(self.reactor.run_until(
            lambda: state["ok"] + state["wrong"] + state["failed"] == total,
            60.0))
        self.assertEqual(state["wrong"], 0)
        self.assertEqual(state["failed"], 0)
        self.assertEqual(state["ok"], total)

    def test_mmi_service(self):
        self.worker(b"echo", lambda frames: frames)
        self.wait_workers(b"echo", 1)
        self.assertEqual(self.request(b"mmi.service", [b"echo"]).frames,
                         [b"200"])
        self.assertEqual(self.request("mmi.service", [b"nope"]).frames,
                         [b"404"])

    def test_handler_exception_gives_the_request_back(self):
        # Issue 10 item 6, one policy with C++ and C: a handler that raises
        # leaves its request unanswered, so the worker gives it back
        # (DISCONNECT, reconnect) and the broker redispatches it; here the
        # handler's second try succeeds.  The exception is reported.
        calls = []

        def handler(frames):
            calls.append(frames)
            if len(calls) == 1:
                raise RuntimeError("disk full")
            return [b"done"] + frames

        self.worker(b"flaky", handler)
        self.wait_workers(b"flaky", 1)
        result = self.request(b"flaky", [b"x"])
        self.assertTrue(result.ok, result)
        self.assertEqual(result.frames, [b"done", b"x"])
        self.assertEqual(len(calls), 2)
        self.assertEqual([w for w, _ in self.reported], ["majordomo handler"])
        self.assertIsInstance(self.reported[0][1], RuntimeError)
        self.reported.clear()
        # Frames that are not frames: the same.
        bad = [0]

        def wrong_type(frames):
            bad[0] += 1
            return 42 if bad[0] == 1 else frames

        self.worker(b"typed", wrong_type)
        self.wait_workers(b"typed", 1)
        result = self.request(b"typed", [b"y"])
        self.assertEqual(result.frames, [b"y"])
        self.assertIsInstance(self.reported[0][1], TypeError)
        self.reported.clear()

    def test_explicit_error_reply(self):
        def handler(frames, reply):
            reply.error(RuntimeError("disk full"))

        self.worker(b"bad", handler, with_reply=True)
        self.wait_workers(b"bad", 1)
        result = self.request(b"bad", [b"x"])
        self.assertTrue(result.ok)  # MDP itself has no failure reply
        self.assertEqual(result.frames,
                         [zbrokers.WORKER_ERROR, b"RuntimeError: disk full"])

    def test_deferred_reply_from_another_thread(self):
        threads = []

        def handler(frames, reply):
            t = threading.Thread(target=lambda: reply.send(frames[::-1]))
            threads.append(t)
            t.start()

        self.worker(b"rev", handler, with_reply=True)
        self.wait_workers(b"rev", 1)
        for i in range(10):
            result = self.request(b"rev", [b"1", str(i).encode()])
            self.assertEqual(result.frames, [str(i).encode(), b"1"])
        for t in threads:
            t.join(WAIT)

    def test_dropped_reply_gives_the_request_back(self):
        # An MdpReply dropped unsent (here: the first one) gives the request
        # back; the broker redispatches it to the reconnected worker, which
        # answers this time.  Before the fix it answered "unanswered".
        seen = []

        def handler(frames, reply):
            seen.append(frames)
            if len(seen) > 1:
                reply.send([b"second try"])

        self.worker(b"drop", handler, with_reply=True)
        self.wait_workers(b"drop", 1)
        result = self.request(b"drop", [b"x"])
        self.assertEqual(result.frames, [b"second try"])
        self.assertEqual(seen, [[b"x"], [b"x"]])

    def test_timeout_without_workers(self):
        result = self.request(b"nobody", [b"x"], timeout=0.05)
        self.assertFalse(result.ok)
        self.assertTrue(result.timed_out)
        self.assertEqual(result.reason, "timeout")
        self.assertEqual(result.frames, [])

    def test_close_cancels_outstanding(self):
        results = []
        self.client.request(b"nobody", [b"x"], results.append)
        self.assertEqual(self.client.outstanding, 1)
        self.client.close()
        self.assertEqual(len(results), 1)
        self.assertEqual(results[0].outcome, "cancelled")
        with self.assertRaises(zbrokers.StateError):
            self.client.request(b"x", [b"x"], results.append)

    def test_bad_endpoints_and_arguments(self):
        with self.assertRaises(zbrokers.ZmqError) as cm:
            zbrokers.MdpClient(self.reactor, "garbage")
        self.assertIn("garbage", str(cm.exception))
        with self.assertRaises(zbrokers.ZmqError):
            zbrokers.MdpWorker(self.reactor, "garbage", b"s", lambda f: f)
        with self.assertRaises(zbrokers.ZbError):
            self.client.request(b"", [b"x"], lambda r: None)  # no service
        with self.assertRaises(zbrokers.InvalidArgumentError):
            self.client.request(b"s", [b"x"], lambda r: None, timeout=0)

    def test_broker_log_sees_worker_joins(self):
        lines = []
        reactor = zbrokers.Reactor()
        try:
            broker = zbrokers.MdpBroker(
                reactor, "tcp://127.0.0.1:*", heartbeat_interval=HEARTBEAT,
                log=lambda level, line: lines.append((level, line)))
            zbrokers.MdpWorker(reactor, broker.endpoint, b"logged",
                               lambda f: f, heartbeat_interval=HEARTBEAT)
            self.assertTrue(reactor.run_until(lambda: lines, WAIT))
            self.assertEqual(lines[0][0], "info")
            self.assertIn("joined", lines[0][1])
            self.assertIn("logged", lines[0][1])
        finally:
            reactor.close()

    def test_everything_is_released_on_close(self):
        base = len(_native._callbacks)
        reactor = zbrokers.Reactor()
        broker = zbrokers.MdpBroker(reactor, "tcp://127.0.0.1:*")
        zbrokers.MdpWorker(reactor, broker.endpoint, b"s", lambda f: f)
        client = zbrokers.MdpClient(reactor, broker.endpoint)
        results = []
        client.request(b"s", [b"x"], results.append)
        reactor.close()
        self.assertEqual([r.outcome for r in results], ["cancelled"])
        self.assertEqual(len(_native._callbacks), base)


if __name__ == "__main__":
    unittest.main()
