"""The conformance suite of the store contract: every test here runs once per back-end of
:data:`core.stores.BACKENDS` (``sqlite`` and ``postgresql``) and once on the tests' own
in-memory back-end (``memory``: :mod:`memory_backend`, added to the registry by one line in
:func:`memory_registered`, with no edit to ``core``), through the contract only.

The ``backend`` fixture names the back-end and ``team_url`` the home's store on it (None: the
home folder's SQLite files; a PostgreSQL schema of the test's own, as ``--store URL`` names
one), so every part the home opens (its checkpoint store, practice world and approvers' rows) is
that back-end's; ``home``, ``store``, ``world`` and ``registry_rows`` are opened through it. A test of a SQLite detail
(triggers, WAL, a file rebuilt under a live connection, the 0.1.0 migration) does not belong
here: those are in ``tests/stores/test_sqlite_*.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import core.stores
import pytest
from core.api.home import Home
from core.api.queue import queue_columns
from core.contract.registry import ApproverRows
from core.contract.store import Store
from core.contract.world import World
from core.ground.clock import FixedClock
from core.stores import open_registry_rows, open_store

import memory_backend
from pg import team_store


@pytest.fixture(scope="session", autouse=True)
def memory_registered() -> Iterator[None]:
    """The memory back-end in the registry for the suite (a third back-end is one line)."""
    core.stores.BACKENDS["memory"] = memory_backend.BACKEND
    yield
    core.stores.BACKENDS.pop("memory", None)


@pytest.fixture(params=memory_backend.CONFORMANCE)
def backend(request: pytest.FixtureRequest) -> str:
    """The back-end under test."""
    return str(request.param)


@pytest.fixture
def not_memory_sql(backend: str) -> None:
    """Skip on the memory back-end a test that writes the store's tables behind it with SQL (a
    row changed on disk, a journal row planted by another database user): a dict has no such door."""
    if backend == "memory":
        pytest.skip("writes the store's tables with SQL behind the store; the memory back-end has no tables")


@pytest.fixture
def not_memory_cli(backend: str) -> None:
    """Skip on the memory back-end a test driven through the command line: ``--store`` takes the
    URLs the command line knows (``sqlite:``, ``postgresql:``: :func:`core.ground.homepath.parse_store_url`),
    and a memory place lives only in the test's own process."""
    if backend == "memory":
        pytest.skip("drives the command line, whose --store takes sqlite: and postgresql: URLs only")


@pytest.fixture
def team_url(backend: str) -> Iterator[str | None]:
    """The home's store on ``backend``: None for SQLite, a PostgreSQL schema or a memory place of
    the test's own."""
    with team_store(backend) as url:
        yield url


@pytest.fixture
def home(team_url: str | None, tmp_path: Path, clock: FixedClock) -> Home:
    """A home on the Friday clock whose parts are ``backend``'s."""
    return Home(tmp_path / "home", clock, store=team_url)


@pytest.fixture
def store(home: Home) -> Store:
    """The home's checkpoint store."""
    return home.store


@pytest.fixture
def world(home: Home) -> World:
    """The home's practice world, writing as ``test``."""
    return home.world("test")


@pytest.fixture
def new_store(team_url: str | None, clock: FixedClock):
    """Open a second store object on the same place (another process's view): ``new_store(store)``."""

    def make(store: Store, clock_: FixedClock | None = None) -> Store:
        return open_store(team_url or store.path, clock_ or clock, summarize=queue_columns)

    return make


@pytest.fixture
def registry_rows(team_url: str | None, tmp_path: Path) -> ApproverRows:
    """The approvers' rows of an empty shop folder (nothing made until the first change)."""
    root = tmp_path / "shop"
    root.mkdir()
    return open_registry_rows(team_url or root)
