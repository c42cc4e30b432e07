"""orjson, imported with ctrl-c held off until its module is made.

orjson's module initialisation does not check the imports it makes: a ctrl-c whose
``KeyboardInterrupt`` lands in one of them crashes the process with a segmentation
fault (ijl/orjson#310; adversary round 52 saw it in a cold ``search`` interrupted in
its first 0.3 s). SIGINT is blocked on the main thread for the import and delivered
right after, where it is an ordinary ``KeyboardInterrupt``.
"""

from __future__ import annotations

import signal
import threading

__all__ = ["orjson"]


def _load():  # type: ignore[no-untyped-def]
    block = getattr(signal, "pthread_sigmask", None)
    if block is None or threading.current_thread() is not threading.main_thread():
        import orjson as module

        return module
    held = block(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        import orjson as module
    finally:
        block(signal.SIG_SETMASK, held)
    return module


orjson = _load()
