"""A real Ctrl-C delivered to a long call, for the tests that it stops promptly."""

import _thread
import signal
import threading
import time

import pytest


def interrupt_during(call, after=0.5, within=2.0):
    """Runs ``call()`` with SIGINT raised in the main thread ``after`` seconds in, and
    asserts that it raises KeyboardInterrupt at most ``within`` seconds after the signal
    (the call must be calibrated to last longer than ``after``: one that ends first, or
    ignores the signal and returns, fails)."""
    fired = []

    def interrupt():
        fired.append(time.perf_counter())
        _thread.interrupt_main()

    # Python's own SIGINT handler, whatever the runner left: a shell that starts the tests
    # in the background ignores SIGINT, and interrupt_main() then does nothing.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(after, interrupt)
    start = time.perf_counter()
    timer.start()
    returned = []
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
            returned.append(True)
            time.sleep(10)  # only reached if the call ignored the interrupt and returned
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    done = time.perf_counter()
    assert not returned, f"the call ran to its end ({done - start:.2f} s): the interrupt came too late or was ignored"
    assert fired, f"the call ended before the interrupt ({done - start:.2f} s)"
    assert done - fired[0] < within, f"KeyboardInterrupt {done - fired[0]:.2f} s after Ctrl-C"
