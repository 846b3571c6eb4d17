"""The conformance suite of the store contract: every test here runs once per back-end of
:data:`core.stores.BACKENDS` (``sqlite`` and ``postgres``), through the contract only.

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

import pytest
from core.api.home import Home
from core.api.queue import queue_columns
from core.contract.registry import ApproverRows
from core.contract.store import Store
from core.contract.world import World
from core.ground.clock import FixedClock
from core.stores import BACKENDS, open_registry_rows, open_store

from pg import team_store


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The back-end under test."""
    return str(request.param)


@pytest.fixture
def team_url(backend: str) -> Iterator[str | None]:
    """The home's store on ``backend``: None for SQLite, a PostgreSQL schema of the test's own."""
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
