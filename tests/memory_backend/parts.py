"""The memory back-end's per-shop parts and approvers' rows: dicts and lists of its :class:`Place`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from core.ground.errors import ResolverError

from memory_backend.store import place_of


class MemoryParts:
    """:class:`core.contract.store.ShopParts` in the place's ``parts`` dict."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.place = place_of(url)

    def label(self, name: str) -> str:
        return f"{name} in {self.url}"

    def read(self, name: str) -> bytes | None:
        with self.place.lock:
            return self.place.parts.get(name)

    def write(self, name: str, data: bytes) -> None:
        with self.place.lock:
            self.place.parts[name] = bytes(data)

    def create(self, name: str, data: bytes) -> bytes:
        with self.place.lock:
            return self.place.parts.setdefault(name, bytes(data))

    def remove(self, name: str) -> None:
        with self.place.lock:
            self.place.parts.pop(name, None)


class _Change:
    """One change of the approvers' rows (:class:`core.contract.registry.ApproverChange`) on a copy,
    put in place when the change ends well: all or nothing."""

    def __init__(self, rows: list[list[Any]]) -> None:
        self._rows = [list(r) for r in rows]

    def rows(self) -> list[tuple]:
        return [tuple(r) for r in self._rows]

    def _named(self, name: str) -> list[list[Any]]:
        return [r for r in self._rows if r[0].casefold() == name.casefold()]

    def insert(self, row: tuple) -> None:
        if self._named(row[0]):
            raise ResolverError(f"The registry already has an approver named {row[0]}.")
        self._rows.append(list(row))

    def set_revoked(self, name: str, at: str, signature: str) -> None:
        for r in self._named(name):
            r[4], r[5] = at, signature

    def set_keys(self, name: str, private_key: str, recovery_key: str | None) -> None:
        for r in self._named(name):
            r[6], r[7] = private_key, recovery_key

    def replace_key(self, name: str, old: str, new: str) -> None:
        for r in self._named(name):
            if r[6] == old:
                r[6] = new


class MemoryApproverRows:
    """:class:`core.contract.registry.ApproverRows` in the place's ``approvers`` list."""

    def __init__(self, url: str) -> None:
        self.path = Path(url)
        self.place = place_of(url)

    def exists(self) -> bool:
        return self.place.registry_made

    def rows(self) -> list[tuple]:
        with self.place.lock:
            return [tuple(r) for r in self.place.approvers]

    @contextmanager
    def change(self) -> Iterator[_Change]:
        with self.place.lock:
            change = _Change(self.place.approvers)
            yield change
            self.place.approvers = [list(r) for r in change.rows()]
            self.place.registry_made = True
