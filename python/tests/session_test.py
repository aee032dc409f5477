"""actorflow's plan functions and Session from Python: every call, kernel
libraries, the dtype table, zero-copy fetches, Python kernels, errors word
for word, garbage collection and Ctrl-C mid-run."""

import gc
import os
import signal
import subprocess
import sys
import threading
import time
import unittest

import sanitizers
from thread_count import threads_after_join, threads_now

sanitizers.preload_if_asked()

import numpy  # noqa: E402
import torch  # noqa: E402

import actorflow  # noqa: E402

QUICKSTART = "examples/plans/quickstart.pbtxt"
FEED_FETCH = "examples/python/feed_fetch.pbtxt"
AFFINE = "examples/plugin/affine.pbtxt"



def passthrough_plan(dtype_name, shape):
    """feed 'in' -> fetch 'out' for one blob of `dtype_name`."""
    dims = ", ".join(str(d) for d in shape)
    return f"""
task {{ task_id: 1 name: "in" stream {{ stream_index: 0 }}
  kernel {{ op_type: "feed" }}
  produced_regst_desc {{ key: "out" value {{ regst_desc_id: 10
    producer_task_id: 1 consumer_task_id: [2] register_num: 2
    blob {{ name: "x" data_type: DT_{dtype_name.upper()} shape: [{dims}] }} }} }} }}
task {{ task_id: 2 name: "out" stream {{ stream_index: 1 }}
  kernel {{ op_type: "fetch" }}
  consumed_regst_desc_id {{ key: "in" value {{ regst_desc_id: [10] }} }} }}
"""


def ctrl_c_latency(test, call):
    """Sends this process SIGINT 0.3 s into `call`, checks that `call`
    raises KeyboardInterrupt, and returns how long after the signal."""
    sent = []

    def interrupt():
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(0.3, interrupt)
    timer.start()
    with test.assertRaises(KeyboardInterrupt):
        call()
    latency = time.monotonic() - sent[0]
    timer.join()
    return latency


class PlanTest(unittest.TestCase):
    def test_import_starts_no_thread(self):
        # In a fresh interpreter, against numpy alone: numpy (and torch)
        # start OpenBLAS's threads when imported.
        code = ("import os, numpy; a = len(os.listdir('/proc/self/task')); "
                "import actorflow, actorflow.pipeline, actorflow.fn; "
                "print(a, len(os.listdir('/proc/self/task')))")
        out = subprocess.run([sys.executable, "-c", code], check=True,
                             capture_output=True, text=True,
                             env=dict(os.environ,
                                      PYTHONPATH=os.pathsep.join(sys.path)))
        before, after = out.stdout.split()
        self.assertEqual(after, before)

    def test_load_validate_dot_run(self):
        plan = actorflow.load_plan(QUICKSTART)
        self.assertEqual(plan.tasks, ["source", "double", "triple", "add", "sink"])
        self.assertEqual(actorflow.validate(plan), [])
        self.assertEqual(actorflow.validate(QUICKSTART), [])
        self.assertIn("digraph plan", actorflow.dot(plan))
        summary = actorflow.run(plan)
        self.assertEqual(summary["status"], "ok")
        self.assertEqual(summary["pieces"], 1000)
        self.assertEqual(summary["sinks"], {"sink": {
            "pieces": 1000, "checksum": 640640000, "in_order": True}})
        self.assertEqual(actorflow.run(plan.text(), pieces=10)["pieces"], 10)
        # The text round-trips.
        self.assertEqual(actorflow.load_plan(plan.text()).text(), plan.text())

    def test_run_timeout(self):
        plan = actorflow.load_plan(QUICKSTART)
        summary = actorflow.run(plan, pieces=5, timeout=30)
        self.assertEqual(summary["pieces"], 5)
        with self.assertRaisesRegex(ValueError, "timeout must be > 0"):
            actorflow.run(plan, timeout=0)

    def test_bad_plans(self):
        with self.assertRaises(ValueError) as caught:
            actorflow.load_plan("nowhere.pbtxt")
        self.assertEqual(str(caught.exception),
                         "nowhere.pbtxt: cannot open: No such file or directory")
        with self.assertRaises(ValueError) as caught:
            actorflow.load_plan("task { nonsense: 1 }")
        self.assertTrue(str(caught.exception).startswith("<plan text>:1:"),
                        caught.exception)
        text = actorflow.load_plan(QUICKSTART).text().replace(
            'op_type: "scale"', 'op_type: "no_such_kernel"', 1)
        problems = actorflow.validate(text)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("task 'double' (task_id 2)", problems[0])
        self.assertIn("no_such_kernel", problems[0])
        with self.assertRaises(ValueError) as caught:
            actorflow.run(text)
        self.assertIn(problems[0], str(caught.exception))
        with self.assertRaises(ValueError) as caught:
            actorflow.load_plan(42)
        self.assertEqual(str(caught.exception),
                         "a plan is an actorflow.Plan, a path or a plan's "
                         "text, not <class 'int'>")

    def test_save(self):
        plan = actorflow.load_plan(QUICKSTART)
        path = os.path.join(os.environ.get("TEST_TMPDIR", "/tmp"), "q.pb")
        plan.save(path)
        self.assertEqual(actorflow.load_plan(path).text(), plan.text())


class SessionTest(unittest.TestCase):
    def test_feed_fetch_and_runs(self):
        with actorflow.Session(FEED_FETCH) as session:
            for i in range(3):
                session.feed("in", numpy.arange(4, dtype=numpy.float32) + i)
            got = [session.fetch("out") for _ in range(3)]
            for i, array in enumerate(got):
                numpy.testing.assert_array_equal(
                    array, 2 * (numpy.arange(4, dtype=numpy.float32) + i))
                self.assertTrue(array.flags.owndata or array.base is not None)
                self.assertTrue(array.flags.writeable)
            session.close_feed("in")
            stats = session.wait()
            self.assertEqual(stats["pieces"], 3)
            with self.assertRaises(EOFError) as caught:
                session.fetch("out")
            self.assertEqual(str(caught.exception),
                             "fetch 'out': end of data: every piece has been "
                             "fetched")
            # The next feed starts the next run; piece ids keep counting.
            session.feed("in", numpy.ones(4, numpy.float32))
            session.close_feeds()
            numpy.testing.assert_array_equal(session.fetch("out"),
                                             numpy.full(4, 2, numpy.float32))
            self.assertEqual(session.wait()["first_piece"], 3)
            self.assertFalse(session.running)
            self.assertIn("progress", session.stats())
        self.assertTrue(session.closed)

    def test_run_and_sinks(self):
        session = actorflow.Session(QUICKSTART, stats=True)
        stats = session.run(100)
        self.assertEqual(stats["pieces"], 100)
        self.assertIn("add", stats["tasks"])
        session.run(100)
        self.assertEqual(session.sinks()["sink"]["pieces"], 200)
        session.close()

    def test_checkpoint_and_restore(self):
        where = os.path.join(os.environ.get("TEST_TMPDIR", "/tmp"),
                             "session_checkpoints")
        whole = actorflow.Session(QUICKSTART)
        whole.run(100)
        session = actorflow.Session(QUICKSTART)
        session.run(40)
        info = session.checkpoint(where, keep_last=2,
                                  user={"epoch": numpy.array([3])})
        self.assertEqual(info["piece"], 40)
        self.assertTrue(os.path.isdir(info["path"]))
        self.assertGreater(info["bytes"], 0)
        restored = actorflow.Session(QUICKSTART, restore_from=where)
        self.assertEqual(restored.restored["piece"], 40)
        numpy.testing.assert_array_equal(restored.restored["user"]["epoch"],
                                         [3])
        self.assertEqual(restored.run(60)["first_piece"], 40)
        self.assertEqual(restored.sinks(), whole.sinks())
        with self.assertRaises(RuntimeError) as caught:
            restored.restore(where)
        self.assertIn("Restore: this session has run already",
                      str(caught.exception))
        for s in (whole, session, restored):
            s.close()

    def test_dtype_table_round_trips(self):
        table = dict(actorflow.dtypes())
        self.assertEqual(sorted(table), sorted(
            ["float32", "float64", "int8", "uint8", "int32", "int64", "bool"]))
        for name, dtype in table.items():
            self.assertEqual(numpy.dtype(name), dtype)
            values = (numpy.arange(6) % 2 == 1) if name == "bool" else \
                numpy.arange(-3, 3)
            array = values.astype(dtype).reshape(2, 3)
            if name == "uint8":
                array = numpy.arange(250, 256, dtype=numpy.uint8).reshape(2, 3)
            with actorflow.Session(passthrough_plan(name, [2, 3])) as session:
                session.feed("in", array)
                back = session.fetch("out")
                self.assertEqual(back.dtype, dtype, name)
                numpy.testing.assert_array_equal(back, array)
        with actorflow.Session(passthrough_plan("float32", [2])) as session:
            with self.assertRaises(ValueError) as caught:
                session.feed("in", numpy.ones(2, numpy.float16))
            self.assertEqual(str(caught.exception),
                             "feed 'in': numpy dtype float16 has no actorflow "
                             "data type (these do: float32, float64, int8, "
                             "uint8, int32, int64, bool)")

    def test_zero_copy_fetch(self):
        with actorflow.Session(FEED_FETCH) as session:
            session.feed("in", numpy.full(4, 1, numpy.float32))
            held = session.fetch("out", copy=False)
            view = held.array
            self.assertFalse(view.flags.writeable)
            tensor = torch.from_dlpack(held)
            self.assertEqual(view.ctypes.data, tensor.data_ptr())
            self.assertEqual(held.array.ctypes.data, view.ctypes.data)
            # More pieces flow through the other register meanwhile; the
            # held one stays as it was.
            for value in (5, 7, 9):
                session.feed("in", numpy.full(4, value, numpy.float32))
                numpy.testing.assert_array_equal(
                    session.fetch("out"), numpy.full(4, 2 * value))
            numpy.testing.assert_array_equal(view, numpy.full(4, 2))
            self.assertEqual(tensor.tolist(), [2.0] * 4)
            held.release()
            self.assertTrue(held.released)
            with self.assertRaises(RuntimeError) as caught:
                held.array
            self.assertEqual(str(caught.exception),
                             "the fetched piece was released")
            # The released register is back in the plan.
            for value in (11, 13, 15):
                session.feed("in", numpy.full(4, value, numpy.float32))
                with session.fetch("out", copy=False) as piece:
                    numpy.testing.assert_array_equal(piece.array,
                                                     numpy.full(4, 2 * value))

    def test_close_with_a_view_held(self):
        session = actorflow.Session(FEED_FETCH)
        session.feed("in", numpy.full(4, 3, numpy.float32))
        held = session.fetch("out", copy=False)
        view = held.array
        session.close()
        # The registers stay until the view goes.
        numpy.testing.assert_array_equal(view, numpy.full(4, 6))
        with self.assertRaises(RuntimeError):
            session.feed("in", numpy.ones(4, numpy.float32))
        del view, held
        gc.collect()

    def test_errors(self):
        session = actorflow.Session(FEED_FETCH)
        with self.assertRaises(ValueError) as caught:
            session.feed("in", numpy.ones(4, numpy.int32))
        self.assertEqual(str(caught.exception),
                         "feed 'in': blob 'x': the tensor is int32, the blob "
                         "float32")
        with self.assertRaises(ValueError) as caught:
            session.feed("nope", numpy.ones(4, numpy.float32))
        self.assertEqual(str(caught.exception),
                         "no feed task named 'nope' (feed tasks: 'in')")
        session.close_feed("in")
        with self.assertRaises(RuntimeError) as caught:
            session.feed("in", numpy.ones(4, numpy.float32))
        self.assertEqual(str(caught.exception),
                         "feed 'in' is closed for this run; Wait() for the run "
                         "to end, then Feed starts the next")
        session.wait()
        with self.assertRaises(RuntimeError) as caught:
            session.run(1)
        self.assertIn("feed", str(caught.exception))
        session.close()
        with self.assertRaises(RuntimeError) as caught:
            session.feed("in", numpy.ones(4, numpy.float32))
        self.assertEqual(str(caught.exception), "the session is closed")
        session.close()  # twice is fine
        with self.assertRaises(ValueError) as caught:
            actorflow.Session(FEED_FETCH, kernels={"nope": abs})
        self.assertEqual(str(caught.exception),
                         "kernels: the plan has no task 'nope' (its tasks: in, "
                         "double, out)")
        with self.assertRaises(ValueError) as caught:
            actorflow.Session(FEED_FETCH, kernels={"double": 3})
        self.assertEqual(str(caught.exception),
                         "kernels['double']: not callable (<class 'int'>)")


class PythonKernelTest(unittest.TestCase):
    def test_returning_and_filling(self):
        seen = []

        def triple(x):
            seen.append(x.flags.writeable)
            return x * 3

        with actorflow.Session(FEED_FETCH, kernels={"double": triple}) as s:
            s.feed("in", numpy.arange(4, dtype=numpy.float32))
            numpy.testing.assert_array_equal(s.fetch("out"),
                                             3 * numpy.arange(4))
        self.assertEqual(seen, [False])

        def fill(x, out):
            out[0][:] = x + 1

        with actorflow.Session(FEED_FETCH, kernels={"double": fill}) as s:
            s.feed("in", numpy.arange(4, dtype=numpy.float32))
            numpy.testing.assert_array_equal(s.fetch("out"),
                                             numpy.arange(4) + 1)

    def test_failures_name_task_and_piece(self):
        def fails_at_third(x):
            if x[0] == 2:
                raise ValueError("boom")
            return x

        s = actorflow.Session(FEED_FETCH, kernels={"double": fails_at_third})
        # One at a time: pieces not fetched when the run fails are dropped.
        for i in range(2):
            s.feed("in", numpy.full(4, i, numpy.float32))
            s.fetch("out")
        s.feed("in", numpy.full(4, 2, numpy.float32))
        with self.assertRaises(RuntimeError) as caught:
            s.fetch("out")
        message = str(caught.exception)
        self.assertTrue(message.startswith(
            "task 'double' (task_id 2) failed at piece 2: the Python kernel "
            "raised:\nTraceback (most recent call last):\n"), message)
        self.assertIn("in fails_at_third", message)
        self.assertTrue(message.endswith("ValueError: boom"), message)
        # Every later call says the same.
        with self.assertRaises(RuntimeError) as again:
            s.feed("in", numpy.ones(4, numpy.float32))
        self.assertEqual(str(again.exception), message)
        s.close()

    def test_wrong_outputs(self):
        cases = [
            (lambda x: x.astype(numpy.int64),
             "output 0 ('x') wants float32 [4], the function returned int64 [4]"),
            (lambda x: x[:2], "output 0 ('x') wants shape [4], the function "
                              "returned [2]"),
            (lambda x: (x, x), "the Python kernel returned 2 arrays for 1 "
                               "output blobs"),
            (lambda x: "text", "output 0 ('x') wants float32 [4], the "
                               "function returned <U4 []"),
            (lambda x: object(), "output 0 ('x') wants float32 [4], the "
                                 "function returned object []"),
        ]
        for fn, expected in cases:
            with actorflow.Session(FEED_FETCH, kernels={"double": fn}) as s:
                s.feed("in", numpy.ones(4, numpy.float32))
                with self.assertRaises(RuntimeError) as caught:
                    s.fetch("out")
                self.assertEqual(
                    str(caught.exception),
                    "task 'double' (task_id 2) failed at piece 0: " + expected)


class LifetimeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # The first blocking call starts the one interrupter thread (for
        # Ctrl-C), which lives until exit: start it before counting.
        actorflow.run(QUICKSTART, pieces=1)

    def test_collected_mid_run_joins_threads(self):
        before = threads_now()
        session = actorflow.Session(FEED_FETCH,
                                    kernels={"double": lambda x: x + 1})
        for _ in range(2):
            session.feed("in", numpy.ones(4, numpy.float32))
        self.assertGreater(threads_now(), before)
        del session  # pieces in flight, the run open
        gc.collect()
        self.assertEqual(threads_after_join(before), before)

    def test_ctrl_c_while_blocked(self):
        before = threads_now()
        session = actorflow.Session(FEED_FETCH)
        # Nothing was fed: fetch blocks until Ctrl-C.
        latency = ctrl_c_latency(self, lambda: session.fetch("out"))
        print(f"KeyboardInterrupt {latency * 1000:.0f} ms after SIGINT")
        self.assertLess(latency, 1.0)
        with self.assertRaises(RuntimeError) as caught:
            session.feed("in", numpy.ones(4, numpy.float32))
        self.assertEqual(str(caught.exception), "interrupted (Ctrl-C)")
        session.close()
        self.assertEqual(threads_after_join(before), before)


class InterruptTest(unittest.TestCase):
    def test_ctrl_c_during_a_run_of_python_kernels(self):
        """Ctrl-C while run() waits on Python kernels that keep taking the
        GIL: KeyboardInterrupt within a second, the session closable."""
        calls = []

        def slow(x):
            calls.append(1)
            time.sleep(0.01)  # 1000 pieces: 10 s uninterrupted
            return x * 2

        session = actorflow.Session("examples/plans/quickstart.pbtxt",
                                    kernels={"double": slow})
        latency = ctrl_c_latency(self, session.run)
        print(f"run(): KeyboardInterrupt {latency * 1000:.0f} ms after SIGINT, "
              f"{len(calls)} kernel calls")
        self.assertLess(latency, 1.0)
        self.assertLess(len(calls), 1000)
        session.close()


class KernelLibraryTest(unittest.TestCase):
    """A kernel library built outside actorflow (examples/plugin, by its
    Makefile against the SDK) loaded into this process."""

    def test_load_kernels_runs_the_librarys_op_type(self):
        library = os.path.abspath("examples/plugin/libaffine_kernels.so")
        actorflow.load_kernels(library)
        actorflow.load_kernels(library)  # twice: nothing more happens
        result = actorflow.run(actorflow.load_plan(AFFINE))
        # 8 elements of 2p + 1 over pieces 0..9.
        self.assertEqual(result["sinks"]["checksum"]["checksum"], 800)

    def test_a_library_built_against_another_abi_is_refused(self):
        library = os.path.abspath("tests/libaffine_kernels_other_abi.so")
        with self.assertRaisesRegex(
            ValueError,
            "was built against actorflow kernel ABI 9999; this runtime has "
            "kernel ABI [0-9]+",
        ):
            actorflow.load_kernels(library)

    def test_a_library_that_cannot_load_is_a_value_error(self):
        with self.assertRaisesRegex(
            ValueError, "kernel library 'no/such/libx.so' cannot be loaded"
        ):
            actorflow.load_kernels("no/such/libx.so")


class JobTest(unittest.TestCase):
    """Jobs written in Python, compiled by the C++ compiler."""

    def diamond(self):
        job = actorflow.Job(pieces=1000)
        job.op("source", "source", shape=[256], value=1.0, step=1.0)
        job.op("double", "scale", inputs=["source"], factor=2.0)
        job.op("triple", "scale", inputs=["source"], factor=3.0)
        job.op("add", "add", inputs=["double", "triple"])
        job.op("checksum", "checksum", inputs=["add"])
        return job

    def test_a_job_runs_and_compiles_like_its_file(self):
        job = self.diamond()
        summary = actorflow.run(job)
        self.assertEqual(summary["sinks"]["checksum"]["checksum"], 640640000)
        plan = actorflow.compile(job)
        self.assertEqual(sorted(plan.tasks),
                         ["add", "checksum", "double", "source", "triple"])
        from_file = actorflow.load_plan("examples/jobs/diamond.pbtxt")
        self.assertEqual(from_file.text(), plan.text())
        self.assertEqual(job.compile().text(), plan.text())
        with actorflow.Session(job) as session:
            session.run()
            self.assertEqual(session.sinks()["checksum"]["checksum"], 640640000)

    def test_data_parallel_placement_and_signatures(self):
        job = actorflow.Job(pieces=10)
        job.op("batch", "source", blobs=[("x", "float64", [6, 4])])
        job.op("scaled", "scale", inputs=["batch"], devices=[0, 1, 2],
               input_signatures=["split(1)"], factor=2.0)
        job.op("sink", "checksum", inputs=["scaled"])
        plan = actorflow.compile(job)
        self.assertIn("scaled/2", plan.tasks)
        self.assertIn("scaled.out:concat@cpu0", plan.tasks)
        # 24 elements of value p, doubled, over pieces 0..9.
        self.assertEqual(actorflow.run(job)["sinks"]["sink"]["checksum"],
                         2 * 24 * 45)

    def test_replicas_are_towers_of_one_device(self):
        job = actorflow.Job(pieces=4)
        job.op("batch", "source", blobs=[("x", "float64", [6, 4])])
        job.op("scaled", "scale", inputs=["batch"], devices=[0], replicas=3,
               factor=2.0)
        job.op("sink", "checksum", inputs=["scaled"])
        plan = actorflow.compile(job)
        self.assertIn("scaled/2", plan.tasks)
        self.assertEqual(plan.text().count("device_index: 1"), 0)
        self.assertEqual(actorflow.run(job)["sinks"]["sink"]["checksum"],
                         2 * 24 * (0 + 1 + 2 + 3))

    def test_register_num_is_stated(self):
        job = actorflow.Job(pieces=3)
        job.op("src", "source", shape=[4], register_num={"out": 5})
        job.op("sink", "checksum", inputs=["src"])
        text = actorflow.compile(job).text()
        self.assertEqual(text.count("register_num: 5"), 1, text)
        self.assertEqual(actorflow.run(job)["sinks"]["sink"]["checksum"],
                         4 * (0 + 1 + 2))

    def test_errors_name_the_operator(self):
        job = actorflow.Job(pieces=1)
        job.op("src", "source", shape=[4])
        job.op("sink", "checksum", inputs=["scr"])
        with self.assertRaisesRegex(ValueError,
                                    "op 'sink' input 0 \\('scr'\\): no op named 'scr'"):
            actorflow.compile(job)
        with self.assertRaisesRegex(ValueError, "signature 'split'"):
            actorflow.Job().op("x", "source", input_signatures=["split"],
                               inputs=["y"])
        with self.assertRaisesRegex(TypeError, "attribute value"):
            actorflow.Job().op("x", "source", value={"a": 1})
        with self.assertRaisesRegex(ValueError, "Plan already"):
            actorflow.compile(actorflow.load_plan(QUICKSTART))


if __name__ == "__main__":
    unittest.main(verbosity=2)
