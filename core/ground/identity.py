"""Where a run's unique identity (``TaskState.run_uid``) comes from.

A readable run ID (``T-65273-agent-chat-small-1``) comes back after ``resolver reset --all``, as
the lesson needs; a ``run_uid`` never does. Operation IDs, approval signatures and audit rows
are bound to the ``run_uid``, so an old decision never verifies on a new run that
reuses a readable ID, and a new run never meets an old run's idempotency keys in the register.

The source is injectable. By default it is :class:`RandomRunUids` (``uuid4``: 32 hex digits).
Tests and the demo queue use :class:`SeededRunUids`, so their operation IDs, snapshots and
screenshots are the same on every run::

    with using(SeededRunUids("demo:0")):
        home.run("T-65273")

:func:`core.engine.runner.new_state` also takes a ``run_uid`` argument, which wins over the source.
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class RunUids(Protocol):
    """A source of run identities: each call of :meth:`new` gives one never given before."""

    def new(self) -> str:
        """A new run identity (a non-empty string, 32 hex digits for the sources here)."""


class RandomRunUids:
    """Random identities: ``uuid.uuid4().hex`` (122 random bits, never reused in practice)."""

    def new(self) -> str:
        return uuid.uuid4().hex


class SeededRunUids:
    """Reproducible identities: SHA-256 of ``"{seed}:{n}"`` for n = 1, 2, 3 ... (32 hex digits).

    Two sources with the same seed give the same sequence, so use a seed that differs wherever
    the identities could meet, for instance per test home, or with the number of decisions a
    home's audit table already holds (what :func:`core.trainer.demo.build_demo` does).
    """

    def __init__(self, seed: str) -> None:
        self.seed = seed
        self._n = 0
        self._lock = threading.Lock()

    def new(self) -> str:
        with self._lock:
            self._n += 1
            n = self._n
        return hashlib.sha256(f"{self.seed}:{n}".encode()).hexdigest()[:32]


_source: RunUids = RandomRunUids()
_lock = threading.Lock()


def new_run_uid() -> str:
    """A new identity from the current source (see :func:`using`)."""
    with _lock:
        source = _source
    return source.new()


def current() -> RunUids:
    """The source :func:`new_run_uid` draws from now."""
    return _source


@contextmanager
def using(source: RunUids) -> Iterator[RunUids]:
    """Draw every new run identity from ``source`` inside the ``with`` block (every thread);
    the previous source comes back afterwards."""
    global _source
    with _lock:
        before, _source = _source, source
    try:
        yield source
    finally:
        with _lock:
            _source = before
