"""A third back-end of the store contract, for the tests only: everything in dicts of the process
(:mod:`memory_backend.store`), at places named ``memory://NAME``.

It proves that a back-end is one package exporting ``BACKEND`` plus one line in the registry:
the conformance suite's fixture adds it by ``core.stores.BACKENDS["memory"] = memory_backend.BACKEND``
and runs every contract test on it, with no edit to ``core``. A team store by its capabilities
(:attr:`MemoryBackend.team`): the home's kind and per-shop parts live in the store.

The practice world is the one part not held in dicts: the world's contract is the practice
world's SQL (:class:`core.stores.practice.PracticeWorld`), so the memory back-end opens the
home folder's world (SQLite) in a private folder of its own per place, through the registry.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import core.stores
from core.contract.backend import Backend
from core.ground.errors import ResolverError

from memory_backend.parts import MemoryApproverRows, MemoryParts
from memory_backend.rows import MemoryRows
from memory_backend.store import MemoryStore, forget, place_of

__all__ = ["BACKEND", "CONFORMANCE", "MemoryBackend", "forget", "new_url"]

_WORLDS: dict[str, Path] = {}
_COUNTER = [0]


def new_url() -> str:
    """A place of its own for a test: ``memory://store-N``."""
    _COUNTER[0] += 1
    return f"memory://store-{_COUNTER[0]}"


def _world_file(url: str) -> Path:
    """The practice world of ``url``: a SQLite file in a private folder of the place's own."""
    if url not in _WORLDS:
        _WORLDS[url] = Path(tempfile.mkdtemp(prefix="memory-world-")) / "larkfield.sqlite"
    return _WORLDS[url]


class MemoryBackend:
    """The memory back-end (:class:`core.contract.backend.Backend`)."""

    name = "memory"
    schemes: tuple[str, ...] = ("memory",)
    team = True

    def open_store(self, place: Any, clock: Any, *, summarize: Any, afresh: bool, journal_key: Any) -> Any:
        return MemoryStore(str(place), clock, summarize=summarize)

    def open_world(self, place: Any, clock: Any, *, faults: Iterable[Any], faults_seen: Any, actor: str) -> Any:
        return core.stores.folder_backend().open_world(
            _world_file(str(place)), clock, faults=faults, faults_seen=faults_seen, actor=actor
        )

    def check_world(self, place: Any, has_history: bool) -> None:
        world = _world_file(str(place))
        if world.exists():
            core.stores.folder_backend().check_world(world, has_history)

    def reset_world(self, place: Any) -> None:
        core.stores.folder_backend().reset_world(_world_file(str(place)))

    def register_entries(self, place: Any) -> list[dict[str, Any]]:
        return core.stores.folder_backend().register_entries(_world_file(str(place)))

    def open_registry_rows(self, place: Any) -> Any:
        return MemoryApproverRows(str(place))

    def open_shop_parts(self, root: Path, place: Any) -> Any:
        return MemoryParts(str(place))

    def recorded_kind(self, place: Any) -> str | None:
        return place_of(str(place)).kind

    def store_kind(self, place: Any, kind: str) -> str:
        found = place_of(str(place))
        with found.lock:
            if found.kind is None:
                found.kind = kind
            return found.kind

    def queue_listener(self, place: Any) -> None:
        return None  # readers poll

    def open_rows(self, place: Any, journal_key: Any) -> Any:
        return MemoryRows(str(place), _world_file(str(place)).parent)

    def store_version(self, place: Any) -> tuple[int | None, int]:
        return 1, 1

    def doctor_lines(self, place: Any) -> list[tuple[str, str]]:
        return [("ok", f"team store: {place}, in memory")]

    def setup_roles(self, place: Any, tables_role: str, users: Any, mapping: Any) -> list[str]:
        raise ResolverError("The memory store has no database users; role separation is for a PostgreSQL team store.")

    def folder_files(self) -> None:
        return None

    def lesson_classes(self) -> tuple[Any, Any]:
        raise ResolverError("The lesson's classes take a file's path, not a memory store.")


BACKEND: Backend = MemoryBackend()
"""The memory back-end, registered by the tests' fixture as ``BACKENDS["memory"]``."""

CONFORMANCE = (*core.stores.BACKENDS, BACKEND.name)
"""The back-ends the conformance suite runs on: the registry's, and this one."""
