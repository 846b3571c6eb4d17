"""Round trips to the server, counted from libpq's own trace.

:func:`round_trips` is the one reading of ``PQtrace`` that ``benchmarks/bench_pg.py`` and
``tests/stores/test_pg_round_trips.py`` share (they parsed it each their own way before; the duplicate
finder flagged them): a round trip is the client's messages (``F`` lines) followed by the
server's answer (``B`` lines). It lives under ``core.stores.postgres`` because only the
back-end's modules may import psycopg (``pyproject.toml``, import-linter).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

from psycopg.pq import Trace

__all__ = ["round_trips"]


def round_trips(conn: Any, call: Callable[[], object]) -> int:
    """How many times the client sent messages to the server and then read its answer while
    ``call`` ran on ``conn`` (a ``psycopg.Connection``; for resolver this thread's pooled
    connection, held open so the store's calls use it). The trace goes to a temporary file
    (mode 0600), removed after. Raises what ``call`` raises, the trace stopped first."""

    with tempfile.TemporaryDirectory(prefix="resolver-pg-trace-") as folder:
        path = Path(folder) / "trace"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        conn.pgconn.trace(fd)
        conn.pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS | Trace.REGRESS_MODE)
        try:
            call()
        finally:
            conn.pgconn.untrace()
            os.close(fd)
        sides = [line.split("\t", 1)[0] for line in path.read_text().splitlines()]
    return sum(1 for a, b in pairwise(sides) if (a, b) == ("F", "B"))
