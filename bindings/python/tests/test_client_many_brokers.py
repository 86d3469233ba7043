# Copyright 2026 The zbrokers Authors.
"""Clients given several brokers (issue 14): ConsensusClient and MdpClient
take endpoint= as a comma-separated str or a sequence of str, and
endpoint_policy="failover" (the default: one broker at a time, the next one
when the client gives up on it; counted in .failovers) or "spread"
(round-robin over the live brokers).  In-process brokers on one reactor;
test/ha/ha_client_process_test.py runs the clients against a real
fail-over pair killed with kill -9."""

import unittest

import zbrokers

WAIT = 10.0
HEARTBEAT = 0.2


class ClientManyBrokersTest(unittest.TestCase):

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

    def dead_endpoint(self, cls):
        """An endpoint nobody listens on: a port the system gave a broker
        that is closed again."""
        b = cls(self.reactor, "tcp://127.0.0.1:*")
        ep = b.endpoint
        b.close()
        return ep

    def counting_consensus(self, served, name):
        broker = zbrokers.ConsensusBroker(self.reactor, "tcp://127.0.0.1:*")

        def handler(frames):
            served.append(name)
            return frames
        zbrokers.ConsensusWorker(self.reactor, broker.endpoint, b"echo",
                                 handler, heartbeat_interval=HEARTBEAT)
        self.wait(lambda: broker.worker_count(b"echo") == 1,
                  "the consensus worker did not register")
        return broker

    def counting_mdp(self, served, name):
        broker = zbrokers.MdpBroker(self.reactor, "tcp://127.0.0.1:*",
                                    heartbeat_interval=HEARTBEAT)

        def handler(frames):
            served.append(name)
            return frames
        zbrokers.MdpWorker(self.reactor, broker.endpoint, b"echo", handler,
                           heartbeat_interval=HEARTBEAT, reconnect_delay=0.05)
        self.wait(lambda: broker.worker_count(b"echo") == 1,
                  "the MDP worker did not register")
        return broker

    def test_policy_is_checked(self):
        ep = "tcp://127.0.0.1:5999"
        for make in (
                lambda **kw: zbrokers.ConsensusClient(self.reactor, ep, **kw),
                lambda **kw: zbrokers.MdpClient(self.reactor, ep, **kw)):
            for bad in ("Spread", "round-robin", ""):
                with self.assertRaises(ValueError) as cm:
                    make(endpoint_policy=bad)
                self.assertIn(repr(bad), str(cm.exception))
                self.assertIn('"failover"', str(cm.exception))
                self.assertIn('"spread"', str(cm.exception))
            with self.assertRaises(TypeError):
                make(endpoint_policy=1)
            for good in ("failover", "spread"):
                c = make(endpoint_policy=good)
                self.assertEqual(c.endpoint_policy, good)
                self.assertEqual(c.failovers, 0)
                c.close()
            with self.assertRaises(zbrokers.StateError):
                c.failovers

    def test_bad_endpoint_lists(self):
        ep = "tcp://127.0.0.1:5999"
        for cls in (zbrokers.ConsensusClient, zbrokers.MdpClient):
            # (bogus://: a later broker libzmq refuses fails here, not at
            # the client's first failover.)
            for bad in ([ep, ep], [ep, ""], f"{ep},", [], [ep, "bogus://x"]):
                with self.assertRaises(zbrokers.ZbError, msg=repr(bad)):
                    cls(self.reactor, bad)
            for bad in (None, 5, [ep, 5], [b"tcp://127.0.0.1:1"]):
                with self.assertRaises(TypeError, msg=repr(bad)):
                    cls(self.reactor, bad)
            c = cls(self.reactor, (ep, "tcp://127.0.0.1:5998"))
            self.assertEqual(c.endpoint, ep + ",tcp://127.0.0.1:5998")
            self.assertEqual(c.endpoint_policy, "failover")
            c.close()

    def test_consensus_failover_past_a_dead_broker(self):
        dead = self.dead_endpoint(zbrokers.ConsensusBroker)
        served = []
        live = self.counting_consensus(served, "live")
        client = zbrokers.ConsensusClient(self.reactor, [dead, live.endpoint])
        # Two attempts time out on the dead broker (the reopen rule), the
        # third is sent to the live one.
        r = client.call(b"echo", [b"over"], timeout=0.3, retries=4)
        self.assertTrue(r.ok, r)
        self.assertEqual(r.frames, [b"over"])
        self.assertGreaterEqual(r.attempts, 3)
        self.assertEqual(client.failovers, 1)
        r = client.call(b"echo", [b"again"], timeout=0.3)
        self.assertTrue(r.ok, r)
        self.assertEqual(r.attempts, 1)
        self.assertEqual(client.failovers, 1)
        self.assertEqual(served, ["live", "live"])

    def test_mdp_failover_past_a_dead_broker(self):
        dead = self.dead_endpoint(zbrokers.ConsensusBroker)
        served = []
        live = self.counting_mdp(served, "live")
        client = zbrokers.MdpClient(self.reactor, f"{dead}, {live.endpoint}",
                                    timeout=0.3, retries=3,
                                    endpoint_policy="failover")
        r = client.call(b"echo", [b"over"])
        self.assertTrue(r.ok, r)
        self.assertEqual(r.frames, [b"over"])
        self.assertGreaterEqual(client.failovers, 1)
        self.assertEqual(served, ["live"])

    def test_spread_uses_every_broker(self):
        served = []
        a = self.counting_consensus(served, "a")
        b = self.counting_consensus(served, "b")
        client = zbrokers.ConsensusClient(self.reactor, [a.endpoint,
                                                         b.endpoint],
                                          endpoint_policy="spread")
        for i in range(10):
            r = client.call(b"echo", [b"%d" % i], timeout=2.0)
            self.assertTrue(r.ok, r)
            self.assertEqual(r.frames, [b"%d" % i])
        self.assertEqual(len(served), 10)
        self.assertGreaterEqual(served.count("a"), 3)
        self.assertGreaterEqual(served.count("b"), 3)

        mserved = []
        ma = self.counting_mdp(mserved, "a")
        mb = self.counting_mdp(mserved, "b")
        mclient = zbrokers.MdpClient(self.reactor, [ma.endpoint, mb.endpoint],
                                     timeout=2.0, endpoint_policy="spread")
        for i in range(10):
            r = mclient.call(b"echo", [b"%d" % i])
            self.assertTrue(r.ok, r)
            self.assertEqual(r.frames, [b"%d" % i])
        self.assertEqual(len(mserved), 10)
        self.assertGreaterEqual(mserved.count("a"), 3)
        self.assertGreaterEqual(mserved.count("b"), 3)


if __name__ == "__main__":
    unittest.main()
