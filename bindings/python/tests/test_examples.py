# Copyright 2026 The zbrokers Authors.
"""The examples run and print what they promise."""

import os
import signal
import subprocess
import sys
import unittest

import zbrokers

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "examples")
WAIT = 60


def run_example(*args):
    return subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, args[0]), *args[1:]],
        capture_output=True, text=True, timeout=WAIT, env=os.environ.copy())


class ExamplesTest(unittest.TestCase):

    def test_timers(self):
        done = run_example("timers.py")
        self.assertEqual(done.returncode, 0, done.stderr)
        out = done.stdout
        self.assertIn("posted from another thread", out)
        self.assertIn("once, after 0.5 s", out)
        self.assertIn("cancelled the ticker: True", out)
        self.assertNotIn("never", out)
        self.assertGreaterEqual(out.count("tick"), 3)
        self.assertTrue(out.rstrip().endswith("done"))

    def test_latency_client_embedded(self):
        done = run_example("consensus_latency.py", "--embedded", "--workers",
                           "2", "-n", "200", "--warmup", "10")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("200 round trips", done.stdout)
        self.assertIn("p99", done.stdout)

    def test_worker_example_serves_until_interrupted(self):
        reactor = zbrokers.Reactor()
        try:
            broker = zbrokers.ConsensusBroker(reactor, "tcp://127.0.0.1:*")
            proc = subprocess.Popen(
                [sys.executable, os.path.join(EXAMPLES, "consensus_worker.py"),
                 broker.endpoint],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=os.environ.copy())
            try:
                self.assertTrue(reactor.run_until(
                    lambda: broker.worker_count(b"echo") == 1, WAIT))
                client = zbrokers.ConsensusClient(reactor, broker.endpoint)
                results = []
                client.request(b"echo", [b"hi"], results.append)
                self.assertTrue(reactor.run_until(lambda: results, WAIT))
                self.assertEqual(results[0].frames, [b"echo: hi"])
                proc.send_signal(signal.SIGINT)  # Ctrl-C ends it cleanly
                self.assertEqual(proc.wait(WAIT), 0,
                                 proc.stderr.read().decode())
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(WAIT)
                proc.stdout.close()
                proc.stderr.close()
        finally:
            reactor.close()


if __name__ == "__main__":
    unittest.main()
