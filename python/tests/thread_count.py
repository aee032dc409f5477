"""The process's threads, as tests that check a session or pipeline joins
every thread it started count them."""

import os
import time


def threads_now():
    return len(os.listdir("/proc/self/task"))


def threads_after_join(expected):
    """The process's thread count once joined threads are gone from /proc.
    A joined thread has finished running, but the kernel may list it a
    moment longer while it reaps the task; a thread left running stays, and
    the count then differs after the deadline."""
    deadline = time.monotonic() + 2.0
    count = threads_now()
    while count != expected and time.monotonic() < deadline:
        time.sleep(0.001)  # the kernel's reaping, not ours to signal
        count = threads_now()
    return count
