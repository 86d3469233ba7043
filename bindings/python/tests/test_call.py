# Copyright 2026 The zbrokers Authors.
"""The blocking call() of the consensus and Majordomo clients."""

import unittest

import zbrokers


class CallTest(unittest.TestCase):

    def setUp(self):
        self.reactor = zbrokers.Reactor()

    def tearDown(self):
        self.reactor.close()

    def test_consensus_call_with_broker_and_worker_on_the_same_reactor(self):
        broker = zbrokers.ConsensusBroker(self.reactor, "tcp://127.0.0.1:*")
        zbrokers.ConsensusWorker(self.reactor, broker.endpoint, b"echo",
                                 lambda f: [b"e:" + f[0]], heartbeat_interval=0.2)
        client = zbrokers.ConsensusClient(self.reactor, broker.endpoint)
        self.assertTrue(self.reactor.run_until(
            lambda: broker.worker_count(b"echo") == 1, 10))
        for i in range(20):
            result = client.call(b"echo", [b"%d" % i], timeout=5.0)
            self.assertTrue(result.ok, result)
            self.assertEqual(result.frames, [b"e:%d" % i])
        result = client.call(b"nobody", [b"x"])
        self.assertFalse(result.ok)
        self.assertEqual(result.reason, "zb:no-workers")
        self.assertEqual(client.open_requests, 0)

    def test_consensus_call_times_out_in_time(self):
        # Nobody listens: the call ends with its own timeout, once.
        client = zbrokers.ConsensusClient(self.reactor, "tcp://127.0.0.1:1")
        result = client.call(b"echo", [b"x"], timeout=0.2, retries=1)
        self.assertTrue(result.timed_out, result)
        self.assertEqual(result.attempts, 2)

    def test_majordomo_call(self):
        broker = zbrokers.MdpBroker(self.reactor, "tcp://127.0.0.1:*",
                                    heartbeat_interval=0.2)
        zbrokers.MdpWorker(self.reactor, broker.endpoint, b"echo",
                           lambda f: f, heartbeat_interval=0.2)
        client = zbrokers.MdpClient(self.reactor, broker.endpoint, timeout=5)
        self.assertTrue(self.reactor.run_until(
            lambda: broker.worker_count(b"echo") == 1, 10))
        result = client.call(b"echo", [b"hello"])
        self.assertTrue(result.ok, result)
        self.assertEqual(result.frames, [b"hello"])
        mmi = client.call(b"mmi.service", [b"echo"])
        self.assertEqual(mmi.frames[-1], b"200")
        gone = zbrokers.MdpClient(self.reactor, "tcp://127.0.0.1:1",
                                  timeout=0.2)
        self.assertTrue(gone.call(b"echo", [b"x"]).timed_out)

    def test_call_inside_a_callback_is_refused(self):
        client = zbrokers.ConsensusClient(self.reactor, "tcp://127.0.0.1:1")
        seen = []

        def inside():
            try:
                client.call(b"echo", [b"x"], timeout=0.1)
            except zbrokers.StateError as e:
                seen.append(e)
            self.reactor.stop()

        self.reactor.post(inside)
        self.reactor.run()
        self.assertEqual(len(seen), 1)
        self.assertIn("already running", str(seen[0]))


if __name__ == "__main__":
    unittest.main()
