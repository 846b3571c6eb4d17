"""SQLite, the first back-end of the store contract.

- :mod:`~core.stores.sqlite.checkpoint`: :class:`CheckpointStore`, the checkpoint store
  (``runs.sqlite``), implementing :class:`core.contract.store.Store`;
- :mod:`~core.stores.sqlite.audit`: the audit chain's SQL;
- :mod:`~core.stores.sqlite.world`: :class:`SqliteWorld`, the practice world
  (``larkfield.sqlite``), implementing :class:`core.contract.world.World`;
- :mod:`~core.stores.sqlite.registry`: the approvers registry's table (``approvers.sqlite``),
  implementing :class:`core.contract.registry.ApproverRows`;
- :mod:`~core.stores.sqlite.database`: the one connection helper (WAL, ``synchronous = FULL``,
  busy timeout, a connection per thread reopened when the file is replaced);
- :mod:`~core.stores.sqlite.files`: the files read or copied as files (doctor, backup, restore).

Only modules under :mod:`core.stores` import ``sqlite3`` (an import-linter contract in
``pyproject.toml``). Submodules are imported where they are used, so a listing pays only for the
checkpoint store.
"""
