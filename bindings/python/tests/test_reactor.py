# Copyright 2026 The zbrokers Authors.
"""Reactor, timers, post and stop through the Python package."""

import concurrent.futures
import contextlib
import io
import threading
import time
import unittest

import zbrokers
from zbrokers import _native

# Every wait is bounded by this, so a bug fails a test instead of hanging it.
WAIT = 10.0


class TimerTest(unittest.TestCase):

    def setUp(self):
        self.reactor = zbrokers.Reactor()

    def tearDown(self):
        self.reactor.close()

    def test_after_fires_once(self):
        fired = []
        timer = self.reactor.after(0.001, fired.append, "x")
        self.assertIsInstance(timer, zbrokers.Timer)
        self.assertTrue(timer.active)
        self.assertTrue(self.reactor.run_until(lambda: fired, WAIT))
        # Give it the chance to fire again: it must not.
        self.reactor.run_once(0.02)
        self.assertEqual(fired, ["x"])
        self.assertFalse(timer.active)
        self.assertFalse(self.reactor.cancel(timer))  # already fired

    def test_every_until_cancelled(self):
        ticks = []
        timer = self.reactor.every(0.001, lambda: ticks.append(1))
        self.assertTrue(self.reactor.run_until(lambda: len(ticks) >= 5, WAIT))
        self.assertTrue(self.reactor.cancel(timer))
        self.assertFalse(timer.active)
        count = len(ticks)
        self.reactor.run_once(0.02)
        self.assertEqual(len(ticks), count)
        self.assertFalse(timer.cancel())  # second cancel: nothing left

    def test_cancel_before_it_fires(self):
        fired = []
        timer = self.reactor.after(0.01, fired.append, 1)
        self.assertTrue(timer.cancel())
        done = []
        self.reactor.after(0.05, done.append, 1)
        self.assertTrue(self.reactor.run_until(lambda: done, WAIT))
        self.assertEqual(fired, [])

    def test_cancel_by_id_and_unknown_id(self):
        timer = self.reactor.after(10, lambda: None)
        self.assertTrue(self.reactor.cancel(timer.id))
        self.assertFalse(self.reactor.cancel(123456789))

    def test_periodic_timer_cancels_itself(self):
        ticks = []
        holder = {}

        def tick():
            ticks.append(1)
            if len(ticks) == 3:
                self.assertTrue(self.reactor.cancel(holder["t"]))

        holder["t"] = self.reactor.every(0.001, tick)
        self.reactor.after(0.1, self.reactor.stop)
        self.reactor.run()
        self.assertEqual(len(ticks), 3)

    def test_timers_fire_in_deadline_order(self):
        order = []
        self.reactor.after(0.03, order.append, 3)
        self.reactor.after(0.01, order.append, 1)
        self.reactor.at(time.monotonic() + 0.02, order.append, 2)
        self.assertTrue(self.reactor.run_until(lambda: len(order) == 3, WAIT))
        self.assertEqual(order, [1, 2, 3])

    def test_timer_delay_is_respected(self):
        fired = []
        start = time.monotonic()
        self.reactor.after(0.05, lambda: fired.append(time.monotonic()))
        self.assertTrue(self.reactor.run_until(lambda: fired, WAIT))
        self.assertGreaterEqual(fired[0] - start, 0.045)

    def test_bad_arguments_raise(self):
        with self.assertRaises(zbrokers.InvalidArgumentError) as cm:
            self.reactor.after(-1, lambda: None)
        self.assertIn("negative delay", str(cm.exception))
        with self.assertRaises(ValueError):  # InvalidArgumentError is one
            self.reactor.every(0, lambda: None)
        with self.assertRaises(TypeError):
            self.reactor.after("soon", lambda: None)

    def test_callbacks_are_released(self):
        # Every registered callback leaves the registry once C lets go of it:
        # fired one-shots, cancelled timers, and what the reactor drops.
        base = len(_native._callbacks)
        reactor = zbrokers.Reactor()
        reactor.after(0, lambda: None)
        cancelled = reactor.every(1, lambda: None)
        reactor.every(1, lambda: None)  # dropped by close()
        reactor.post(lambda: None)
        self.assertEqual(len(_native._callbacks), base + 4)
        reactor.cancel(cancelled)
        reactor.run_until(lambda: len(_native._callbacks) == base + 1, WAIT)
        self.assertEqual(len(_native._callbacks), base + 1)
        reactor.close()
        self.assertEqual(len(_native._callbacks), base)


class RunStopPostTest(unittest.TestCase):

    def setUp(self):
        self.reactor = zbrokers.Reactor()

    def tearDown(self):
        self.reactor.close()

    def test_stop_from_callback(self):
        self.reactor.after(0.001, self.reactor.stop)
        start = time.monotonic()
        self.reactor.run()
        self.assertLess(time.monotonic() - start, WAIT)

    def test_stop_before_run_returns_at_once(self):
        self.reactor.stop()
        self.reactor.run()  # would block forever otherwise

    def test_stop_from_another_thread(self):
        started = threading.Event()
        self.reactor.post(started.set)
        stopper = threading.Thread(
            target=lambda: started.wait(WAIT) and self.reactor.stop())
        stopper.start()
        self.reactor.run()
        stopper.join(WAIT)
        self.assertTrue(started.is_set())

    def test_post_from_python_threads(self):
        seen = []
        owner = threading.get_ident()
        threads_on = set()

        def record(source, i):
            threads_on.add(threading.get_ident())
            seen.append((source, i))

        def producer(source):
            for i in range(200):
                self.reactor.post(record, source, i)

        producers = [threading.Thread(target=producer, args=(s,))
                     for s in ("a", "b")]
        for p in producers:
            p.start()
        self.assertTrue(self.reactor.run_until(lambda: len(seen) == 400,
                                               WAIT))
        for p in producers:
            p.join(WAIT)
        # Everything ran on the reactor's thread, each producer's posts in
        # the order they were posted.
        self.assertEqual(threads_on, {owner})
        for source in ("a", "b"):
            self.assertEqual([i for s, i in seen if s == source],
                             list(range(200)))

    def test_post_wakes_a_blocked_loop(self):
        got = []

        def later():
            time.sleep(0.05)
            self.reactor.post(got.append, 1)
            self.reactor.post(self.reactor.stop)

        t = threading.Thread(target=later)
        t.start()
        self.reactor.run()  # no timers: only the posts can end this
        t.join(WAIT)
        self.assertEqual(got, [1])

    def test_reactor_thread_only_methods_refuse_other_threads(self):
        errors = []

        def other():
            try:
                self.reactor.after(1, lambda: None)
            except zbrokers.ZbError as e:
                errors.append(e)

        t = threading.Thread(target=other)
        t.start()
        t.join(WAIT)
        self.assertEqual(len(errors), 1)
        self.assertIsInstance(errors[0], zbrokers.WrongThreadError)
        self.assertIn("does not own the reactor", str(errors[0]))

    def test_callback_exception_is_reported_and_loop_goes_on(self):
        reported = []
        self.reactor.error_handler = lambda exc, where: reported.append(
            (type(exc), str(exc), where))

        def boom():
            raise RuntimeError("boom")

        after = []
        self.reactor.after(0.001, boom)
        self.reactor.post(boom)
        self.reactor.after(0.01, after.append, 1)
        self.assertTrue(self.reactor.run_until(lambda: after, WAIT))
        self.assertIn((RuntimeError, "boom", "timer"), reported)
        self.assertIn((RuntimeError, "boom", "post"), reported)

    def test_default_error_handler_prints_traceback(self):
        stderr = io.StringIO()

        def boom():
            raise KeyError("missing-key")

        done = []
        self.reactor.after(0, boom)
        self.reactor.after(0.005, done.append, 1)
        with contextlib.redirect_stderr(stderr):
            self.assertTrue(self.reactor.run_until(lambda: done, WAIT))
        text = stderr.getvalue()
        self.assertIn("Traceback", text)
        self.assertIn("missing-key", text)
        self.assertIn("timer callback", text)

    def test_keyboard_interrupt_in_callback_ends_run(self):
        def interrupt():
            raise KeyboardInterrupt()

        self.reactor.after(0.001, interrupt)
        with self.assertRaises(KeyboardInterrupt):
            self.reactor.run()
        # The loop is still usable afterwards.
        self.reactor.after(0, self.reactor.stop)
        self.reactor.run()

    def test_closed_reactor_raises(self):
        reactor = zbrokers.Reactor()
        reactor.close()
        reactor.close()  # idempotent
        with self.assertRaises(zbrokers.StateError):
            reactor.after(1, lambda: None)
        with self.assertRaises(zbrokers.StateError):
            reactor.post(lambda: None)

    def test_close_inside_callback_is_refused(self):
        errors = []

        def close_me():
            try:
                self.reactor.close()
            except zbrokers.StateError as e:
                errors.append(e)
            self.reactor.stop()

        self.reactor.post(close_me)
        self.reactor.run()
        self.assertEqual(len(errors), 1)
        self.assertFalse(self.reactor.closed)


class ReactorThreadTest(unittest.TestCase):

    def test_invoke_runs_on_the_reactor_thread(self):
        with zbrokers.ReactorThread() as rt:
            ident = rt.invoke(lambda r: threading.get_ident())
            self.assertNotEqual(ident, threading.get_ident())
            fired = threading.Event()
            rt.invoke(lambda r: r.after(0.001, fired.set))
            self.assertTrue(fired.wait(WAIT))
            with self.assertRaises(ZeroDivisionError):
                rt.invoke(lambda r: 1 / 0)

    def test_invoke_after_stop_raises_instead_of_hanging(self):
        # Issue 10 item 9 in Python: the task was posted to a reactor whose
        # run() had returned, dropped unrun when the thread closed it, and
        # invoke() waited for it forever.  Now it raises StateError, at any
        # moment of the shutdown (before or after the thread closed the
        # reactor), and never needs its timeout.
        for i in range(50):
            rt = zbrokers.ReactorThread()
            rt.stop()
            if i % 2:
                rt.join()
            started = time.monotonic()
            try:
                rt.invoke(lambda r: 42, timeout=WAIT)
            except zbrokers.StateError:
                pass  # refused or dropped: reported, not hung
            except concurrent.futures.TimeoutError:
                self.fail(f"invoke() after stop() hung (round {i})")
            self.assertLess(time.monotonic() - started, WAIT)
            rt.join()


if __name__ == "__main__":
    unittest.main()
