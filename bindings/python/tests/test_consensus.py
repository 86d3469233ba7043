# Copyright 2026 The zbrokers Authors.
"""Consensus round trips through the C++ broker, from Python."""

import threading
import unittest

import zbrokers
from zbrokers import _native

WAIT = 10.0


class ConsensusTest(unittest.TestCase):

    def setUp(self):
        self.reactor = zbrokers.Reactor()
        self.reported = []
        self.reactor.error_handler = lambda e, where: self.reported.append(
            (where, e))
        self.broker = zbrokers.ConsensusBroker(self.reactor,
                                               "tcp://127.0.0.1:*")
        self.endpoint = self.broker.endpoint
        self.client = zbrokers.ConsensusClient(self.reactor, self.endpoint)

    def tearDown(self):
        self.reactor.close()

    def worker(self, service, handler, **kwargs):
        kwargs.setdefault("heartbeat_interval", 0.2)
        return zbrokers.ConsensusWorker(self.reactor, self.endpoint, service,
                                        handler, **kwargs)

    def wait_workers(self, service, count):
        self.assertTrue(self.reactor.run_until(
            lambda: self.broker.worker_count(service) == count, WAIT),
            f"{count} worker(s) for {service!r} never registered")

    def request(self, service, frames, timeout=5.0, retries=0):
        results = []
        self.client.request(service, frames, results.append,
                            timeout=timeout, retries=retries)
        self.assertTrue(self.reactor.run_until(lambda: results, WAIT))
        self.assertEqual(len(results), 1)
        return results[0]

    def test_round_trips_with_two_workers(self):
        self.worker(b"echo", lambda frames: [b"a:" + frames[0]])
        self.worker("echo", lambda frames: [b"b:" + f for f in frames])
        self.wait_workers(b"echo", 2)
        for i in range(50):
            body = f"hello {i}".encode()
            result = self.request(b"echo", [body])
            self.assertTrue(result.ok, result)
            self.assertEqual(result.reason, "")
            self.assertIsNone(result.failed_by)
            self.assertEqual(result.attempts, 1)
            self.assertEqual(sorted(result.frames),
                             [b"a:" + body, b"b:" + body])
        self.assertEqual(self.client.open_requests, 0)
        self.assertEqual(self.reported, [])

    def test_multipart_binary_and_empty_payloads(self):
        self.worker(b"echo", lambda frames: frames)
        self.wait_workers(b"echo", 1)
        frames = [b"\x00\xff", b"", bytes(range(256)) * 100]
        self.assertEqual(self.request(b"echo", frames).frames, frames)
        # No payload travels as one empty frame; None answers one too.
        self.worker(b"none", lambda frames: None)
        self.wait_workers(b"none", 1)
        result = self.request(b"none", [])
        self.assertTrue(result.ok)
        self.assertEqual(result.frames, [b""])

    def test_handler_exception_fails_the_request(self):
        def handler(frames):
            raise ValueError("bad input " + frames[0].decode())

        self.worker(b"strict", handler)
        self.wait_workers(b"strict", 1)
        result = self.request(b"strict", [b"42"])
        self.assertFalse(result.ok)
        self.assertEqual(result.outcome, "failure")
        self.assertEqual(result.failed_by, "worker")
        self.assertEqual(result.reason, "ValueError: bad input 42")
        # A handler failure is the worker's answer, not a bug to report.
        self.assertEqual(self.reported, [])

    def test_worker_error_chooses_the_frames(self):
        def handler(frames):
            raise zbrokers.WorkerError(b"out-of-stock", "item 7")

        self.worker(b"shop", handler)
        self.wait_workers(b"shop", 1)
        result = self.request(b"shop", [b"buy"])
        self.assertEqual(result.failed_by, "worker")
        self.assertEqual(result.reason, "out-of-stock")
        self.assertEqual(result.frames, [b"out-of-stock", b"item 7"])

    def test_one_failing_worker_fails_the_consensus(self):
        self.worker(b"vote", lambda frames: [b"yes"])

        def no(frames):
            raise zbrokers.WorkerError(b"no")

        self.worker(b"vote", no)
        self.wait_workers(b"vote", 2)
        result = self.request(b"vote", [b"?"])
        self.assertFalse(result.ok)
        self.assertEqual(result.reason, "no")

    def test_no_workers_is_a_broker_failure(self):
        result = self.request(b"nobody-serves-this", [b"x"])
        self.assertFalse(result.ok)
        self.assertEqual(result.failed_by, "broker")
        self.assertEqual(result.reason, "zb:no-workers")
        self.assertEqual(result.frames[0], b"zb:no-workers")
        self.assertEqual(len(result.frames), 2)

    def test_retry_no_workers_waits_for_a_late_worker(self):
        # Issue 10.3: a client started together with its workers.
        results = []
        self.client.request(b"late", [b"x"], results.append, timeout=5.0,
                            retry_no_workers=True)
        workers = []
        self.reactor.after(0.1, lambda: workers.append(
            self.worker(b"late", lambda frames: [b"served:" + frames[0]])))
        self.assertTrue(self.reactor.run_until(lambda: results, WAIT))
        result = results[0]
        self.assertTrue(result.ok, result)
        self.assertEqual(result.frames, [b"served:x"])
        self.assertGreaterEqual(result.attempts, 2)
        # Without it: the broker's immediate answer.
        result = self.request(b"nobody", [b"x"])
        self.assertEqual(result.reason, "zb:no-workers")
        self.assertEqual(result.attempts, 1)

    def test_timeout_with_retries_then_late_answers(self):
        kept = []
        self.worker(b"slow", lambda frames, reply: kept.append(reply),
                    with_reply=True)
        self.wait_workers(b"slow", 1)
        result = self.request(b"slow", [b"x"], timeout=0.05, retries=1)
        self.assertFalse(result.ok)
        self.assertTrue(result.timed_out)
        self.assertEqual(result.outcome, "timeout")
        self.assertEqual(result.attempts, 2)
        self.assertEqual(result.reason, "timeout")
        self.assertEqual(len(kept), 2)  # the worker saw both attempts
        # Answering after the client gave up is harmless.
        self.assertTrue(kept[0].succeed([b"late"]))
        self.assertFalse(kept[0].succeed([b"twice"]))
        kept[1].discard()
        self.reactor.run_once(0.02)

    def test_deferred_reply_from_another_thread(self):
        threads = []

        def handler(frames, reply):
            t = threading.Thread(
                target=lambda: reply.succeed([frames[0] + b" (threaded)"]))
            threads.append(t)
            t.start()

        self.worker(b"async", handler, with_reply=True)
        self.wait_workers(b"async", 1)
        for i in range(10):
            body = str(i).encode()
            result = self.request(b"async", [body])
            self.assertTrue(result.ok, result)
            self.assertEqual(result.frames, [body + b" (threaded)"])
        for t in threads:
            t.join(WAIT)

    def test_exception_before_deferred_answer_fails(self):
        def handler(frames, reply):
            raise KeyError("oops")

        self.worker(b"broken", handler, with_reply=True)
        self.wait_workers(b"broken", 1)
        result = self.request(b"broken", [b"x"])
        self.assertEqual(result.failed_by, "worker")
        self.assertIn("KeyError", result.reason)

    def test_dropped_reply_answers_unanswered(self):
        self.worker(b"drop", lambda frames, reply: None, with_reply=True)
        self.wait_workers(b"drop", 1)
        result = self.request(b"drop", [b"x"])
        self.assertFalse(result.ok)
        self.assertEqual(result.reason, "worker:unanswered")

    def test_bad_handler_return_value_is_reported(self):
        self.worker(b"wrong", lambda frames: "a str is not frames")
        self.wait_workers(b"wrong", 1)
        result = self.request(b"wrong", [b"x"])
        self.assertFalse(result.ok)
        self.assertIn("TypeError", result.reason)
        self.assertEqual([w for w, _ in self.reported], ["consensus handler"])

    def test_ping(self):
        pongs = []
        self.client.ping(pongs.append, timeout=5.0)
        self.assertTrue(self.reactor.run_until(lambda: pongs, WAIT))
        self.assertEqual(pongs, [True])

    def test_ping_without_broker_times_out(self):
        lonely = zbrokers.ConsensusClient(self.reactor, "tcp://127.0.0.1:1")
        pongs = []
        lonely.ping(pongs.append, timeout=0.05)
        self.assertTrue(self.reactor.run_until(lambda: pongs, WAIT))
        self.assertEqual(pongs, [False])

    def test_closing_a_client_ends_open_requests(self):
        kept = []
        self.worker(b"slow", lambda frames, reply: kept.append(reply),
                    with_reply=True)
        self.wait_workers(b"slow", 1)
        results = []
        self.client.request(b"slow", [b"x"], results.append, timeout=5.0)
        self.assertEqual(self.client.open_requests, 1)
        self.reactor.run_until(lambda: kept, WAIT)
        self.client.close()
        self.assertEqual(len(results), 1)
        self.assertEqual(results[0].failed_by, "client")
        self.assertEqual(results[0].reason, "zb:client-closed")
        self.assertTrue(self.client.closed)
        with self.assertRaises(zbrokers.StateError):
            self.client.request(b"slow", [b"x"], results.append)

    def test_client_closed_inside_its_callback(self):
        results = []

        def on_reply(result):
            results.append(result)
            self.client.close()

        self.client.request(b"nobody", [b"x"], on_reply)
        self.assertTrue(self.reactor.run_until(lambda: results, WAIT))
        self.reactor.run_once(0.01)
        self.assertTrue(self.client.closed)
        self.assertEqual(self.reported, [])

    def test_worker_closed_inside_its_handler(self):
        holder = {}

        def handler(frames):
            holder["w"].close()
            return [b"last answer"]

        holder["w"] = self.worker(b"once", handler)
        self.wait_workers(b"once", 1)
        result = self.request(b"once", [b"x"])
        self.assertTrue(result.ok, result)
        self.wait_workers(b"once", 0)

    def test_bad_endpoints_raise_with_the_message(self):
        with self.assertRaises(zbrokers.ZmqError) as cm:
            zbrokers.ConsensusClient(self.reactor, "not-an-endpoint")
        self.assertIn("not-an-endpoint", str(cm.exception))
        with self.assertRaises(zbrokers.ZmqError) as cm:
            zbrokers.ConsensusWorker(self.reactor, "tcp://", b"svc",
                                     lambda f: f)
        self.assertIn("zb_consensus_worker_new", str(cm.exception))
        with self.assertRaises(zbrokers.ZmqError) as cm:
            self.broker.bind(self.endpoint)  # already bound here
        self.assertIn("in use", str(cm.exception))

    def test_bad_arguments(self):
        with self.assertRaises(zbrokers.InvalidArgumentError):
            self.client.request(b"echo", [b"x"], lambda r: None, timeout=0)
        with self.assertRaises(TypeError):
            self.client.request(b"echo", ["str"], lambda r: None)
        with self.assertRaises(zbrokers.InvalidArgumentError):
            self.worker(b"x", lambda f: f, heartbeat_liveness=1000)

    def test_worker_on_its_own_reactor_thread(self):
        with zbrokers.ReactorThread() as rt:
            handled_on = []

            def handler(frames):
                handled_on.append(threading.get_ident())
                return [b"from thread"]

            rt.invoke(lambda r: zbrokers.ConsensusWorker(
                r, self.endpoint, b"remote", handler, heartbeat_interval=0.2))
            self.wait_workers(b"remote", 1)
            result = self.request(b"remote", [b"x"])
            self.assertTrue(result.ok, result)
            self.assertEqual(result.frames, [b"from thread"])
            self.assertNotEqual(handled_on[0], threading.get_ident())

    def test_callbacks_run_by_close_may_use_the_reactor(self):
        reactor = zbrokers.Reactor()
        client = zbrokers.ConsensusClient(reactor, "tcp://127.0.0.1:1")
        seen = []

        def on_reply(result):
            seen.append(result.reason)
            reactor.stop()  # allowed (and harmless) while closing
            reactor.post(seen.append, "never runs")
            with self.assertRaises(zbrokers.StateError):
                reactor.after(1, lambda: None)  # the reactor is going

        client.request(b"svc", [b"x"], on_reply)
        reactor.close()
        self.assertEqual(seen, ["zb:client-closed"])

    def test_everything_is_released_on_close(self):
        base = len(_native._callbacks)
        reactor = zbrokers.Reactor()
        broker = zbrokers.ConsensusBroker(reactor, "tcp://127.0.0.1:*",
                                          log=lambda level, line: None)
        zbrokers.ConsensusWorker(reactor, broker.endpoint, b"s", lambda f: f)
        client = zbrokers.ConsensusClient(reactor, broker.endpoint)
        results = []
        client.request(b"s", [b"x"], results.append)
        self.assertGreater(len(_native._callbacks), base)
        reactor.close()
        self.assertEqual(len(results), 1)  # ended by the close
        self.assertEqual(results[0].reason, "zb:client-closed")
        self.assertTrue(broker.closed and client.closed)
        self.assertEqual(len(_native._callbacks), base)


if __name__ == "__main__":
    unittest.main()
