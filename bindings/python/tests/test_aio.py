# Copyright 2026 The zbrokers Authors.
"""zbrokers.aio: a reactor driven by an asyncio event loop, no thread."""

import asyncio
import threading
import time
import unittest

import zbrokers
import zbrokers.aio

WAIT = 10.0


def run(coro):
    """Runs a test coroutine, bounded."""
    return asyncio.run(asyncio.wait_for(coro, 60))


async def eventually(predicate, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


class AioTest(unittest.TestCase):

    def setUp(self):
        self.reactor = zbrokers.Reactor()
        self.reported = []
        self.reactor.error_handler = lambda e, where: self.reported.append(
            (where, e))

    def tearDown(self):
        self.reactor.close()
        self.assertEqual(self.reported, [])

    def test_consensus_round_trips_and_ping(self):
        async def main():
            async with zbrokers.aio.attach(self.reactor) as driver:
                self.assertIs(self.reactor._driver, driver)
                broker = zbrokers.ConsensusBroker(self.reactor,
                                                  "tcp://127.0.0.1:*")
                zbrokers.ConsensusWorker(self.reactor, broker.endpoint,
                                         b"echo", lambda f: [b"e:" + f[0]],
                                         heartbeat_interval=0.2)
                client = zbrokers.ConsensusClient(self.reactor,
                                                  broker.endpoint)
                self.assertTrue(await eventually(
                    lambda: broker.worker_count(b"echo") == 1))
                self.assertTrue(await zbrokers.aio.ping(client, timeout=5))
                results = await asyncio.gather(*[
                    zbrokers.aio.request(client, b"echo", [b"%d" % i],
                                         timeout=5.0)
                    for i in range(50)])
                self.assertEqual([r.frames for r in results],
                                 [[b"e:%d" % i] for i in range(50)])
                self.assertTrue(all(r.ok for r in results))
                failed = await zbrokers.aio.request(client, b"nobody", [b"x"])
                self.assertFalse(failed.ok)
                self.assertEqual(failed.reason, "zb:no-workers")
            self.assertIsNone(self.reactor._driver)
        run(main())

    def test_majordomo_round_trip(self):
        async def main():
            async with zbrokers.aio.attach(self.reactor):
                broker = zbrokers.MdpBroker(self.reactor, "tcp://127.0.0.1:*",
                                            heartbeat_interval=0.2)
                zbrokers.MdpWorker(self.reactor, broker.endpoint, b"echo",
                                   lambda f: f, heartbeat_interval=0.2)
                client = zbrokers.MdpClient(self.reactor, broker.endpoint,
                                            timeout=5.0)
                self.assertTrue(await eventually(
                    lambda: broker.worker_count(b"echo") == 1))
                result = await zbrokers.aio.request(client, b"echo",
                                                    [b"over asyncio"])
                self.assertTrue(result.ok, result)
                self.assertEqual(result.frames, [b"over asyncio"])
        run(main())

    def test_timers_coroutines_and_posts_interleave_without_spinning(self):
        async def main():
            async with zbrokers.aio.attach(self.reactor) as driver:
                steps = []
                real_step = driver._step
                driver._step = lambda: (steps.append(1), real_step())
                # Re-register with the counting step.
                loop = asyncio.get_running_loop()
                loop.remove_reader(driver._fd)
                loop.add_reader(driver._fd, driver._step)

                fired = asyncio.Event()
                self.reactor.after(0.3, fired.set)
                ticks = 0

                async def ticker():
                    nonlocal ticks
                    while not fired.is_set():
                        ticks += 1
                        await asyncio.sleep(0.02)

                await asyncio.wait_for(asyncio.gather(fired.wait(), ticker()),
                                       WAIT)
                # The loop ran coroutines all along (ticks), and the
                # reactor did a handful of steps for 300 ms of waiting:
                # one per event, not a busy poll.
                self.assertGreater(ticks, 5)
                self.assertLess(len(steps), 10, len(steps))

                # A post from another thread wakes the loop at once.
                posted = asyncio.Event()
                t = threading.Thread(
                    target=lambda: self.reactor.post(posted.set))
                t.start()
                await asyncio.wait_for(posted.wait(), WAIT)
                t.join()
        run(main())

    def test_a_send_from_a_coroutine_does_not_strand_a_queued_message(self):
        # The edge-triggered ZMQ_FD: b has a message queued when the
        # coroutine sends on b, which consumes b's signal.  The driver must
        # still deliver it.
        async def main():
            async with zbrokers.aio.attach(self.reactor):
                a = self.reactor.socket("PAIR")
                b = self.reactor.socket("PAIR")
                a.bind("inproc://zb-aio-edge")
                b.connect("inproc://zb-aio-edge")
                got_a, got_b = [], []
                a.on_readable(got_a.append)
                await asyncio.sleep(0.05)
                a.send([b"to b"])
                await asyncio.sleep(0.1)  # queued at b, nobody reads b yet
                b.on_readable(got_b.append)
                b.send([b"to a"])
                self.assertTrue(await eventually(
                    lambda: got_a and got_b, timeout=5))
                self.assertEqual(got_b, [[b"to b"]])
                self.assertEqual(got_a, [[b"to a"]])
        run(main())

    def test_run_until_stop_and_errors(self):
        async def main():
            self.reactor.after(0.05, self.reactor.stop)
            await asyncio.wait_for(zbrokers.aio.run(self.reactor), WAIT)
            self.assertIsNone(self.reactor._driver)
            # The stop was consumed: a later run() does not return at once.
            self.reactor.after(0.05, self.reactor.stop)
            start = time.monotonic()
            self.reactor.run()
            self.assertGreaterEqual(time.monotonic() - start, 0.04)

            client = zbrokers.ConsensusClient(self.reactor,
                                              "tcp://127.0.0.1:1")
            with self.assertRaisesRegex(RuntimeError, "not attached"):
                await zbrokers.aio.request(client, b"x", [b"y"])
            async with zbrokers.aio.attach(self.reactor):
                with self.assertRaisesRegex(RuntimeError, "already attached"):
                    zbrokers.aio.attach(self.reactor)
                with self.assertRaisesRegex(RuntimeError, "block the asyncio"):
                    client.call(b"x", [b"y"], timeout=0.1)
        run(main())

    def test_closing_the_reactor_detaches_it(self):
        async def main():
            driver = zbrokers.aio.attach(self.reactor)
            self.reactor.every(0.01, lambda: None)
            await asyncio.sleep(0.05)
            self.reactor.close()
            self.assertTrue(driver.closed)
            await asyncio.sleep(0.05)  # no step touches the closed reactor
        run(main())


if __name__ == "__main__":
    unittest.main()
