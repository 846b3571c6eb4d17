"""Moving a store, and the operator's look at one: ``resolver store copy``,
``resolver store check`` and ``resolver store migrate``.

A store is at a :data:`core.stores.Place`: a SQLite home FOLDER (``sqlite:///FOLDER``, its
``runs.sqlite``, ``larkfield.sqlite`` and ``approvers.sqlite``) or a team store's PostgreSQL URL.
:func:`copy_store` reads every row of the source through the contract's
:class:`core.contract.store.StoreRows` and writes it into the target, part by part, one transaction per
part (:data:`core.stores.common.COPY_PARTS`): the runs (headers with their versions and queue
columns, the lists' rows, the journal of model calls, the runs' marks), the audit verbatim (ids,
``prev`` and signatures unchanged, so the hash chain is the same chain), the queue's events with
their IDs (those the target's triggers wrote as the runs and the audit went in are
replaced by the source's), the approvers' rows and the practice
world with its operations register (its ``seq`` numbers kept), and the approvers' database users
(carried into a team store, dropped into a SQLite home, said either way; the target's
roles and grants are made by ``resolver store roles setup`` there). A target that already holds runs,
audit rows, approvers or register entries is refused before anything is written: nothing is
merged. The store's kind goes with it: a team store records the source's kind
(:func:`core.stores.store_kind`); a SQLite folder's kind is its ``home.json``.

What a SQLite home keeps in files beside its databases (:data:`HOME_FILES`: ``home.json``, the
practice HMAC key ``approval.key``, the trainer's ``clock.json``, a shop's seal
``approvers.json`` and signed ``audit.head``) is copied when both ends are folders; for a team
store the report names the files it did not copy (they are not in the store yet).

No key material reaches a team store: an approver's encrypted private key lives on
their machine (:mod:`core.engine.keyfiles`). Copying a SQLite home into a team store writes the keys its
rows hold as key files of that SQLite folder (fsynced before any row is written; the folder then
decides for them on the team store, and each other approver's file is copied to their machine),
and the team store's rows get empty key columns; a team store whose rows still hold keys of an
earlier release is not copied into another team store (each approver unlocks once first). Copying
a team store into a folder says where the key files are; folder to folder, the rows keep their
keys and the ``keys/`` files are copied too.

Then the copy is verified (:func:`verify_copy`): rows per table, each run's version and proposal
digest (each run loaded from both ends), the target's audit chain
(:func:`core.engine.auditchain.verify_audit`) and its tip against the source's, and the operations
register entry by entry. The report says what is equal, or what differs.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.api.homekind import home_kind, init_home
from core.api.queue import queue_columns
from core.contract.store import SHOP_PARTS, ShopParts, StoreRows
from core.engine.auditchain import verify_audit
from core.engine.keyfiles import KEYS_DIR, KeyFile, KeyFiles
from core.ground.errors import ResolverError
from core.ground.masking import mask_url
from core.stores import (
    Place,
    folder_journal_key,
    is_team_store,
    open_rows,
    open_shop_parts,
    open_store,
    open_world,
    register_entries,
    store_kind,
    store_version,
    world_path,
)
from core.stores.common import COPY_PARTS, refuse_used

HOME_FILES = ("home.json", "approval.key", "clock.json", "approvers.json", "audit.head")
"""Per-shop files a SQLite home keeps beside its databases, copied folder to folder."""

SHOWN_DIFFERENCES = 10
"""At most this many differing runs are named in a report (the count says how many in all)."""


@dataclass
class StoreReport:
    """What a copy, check or migration found: ``lines`` to print, ``problems`` (one sentence
    each; empty when all is well). Exit code 0 when :attr:`ok`, else 1."""

    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing differs and nothing failed."""
        return not self.problems

    def all_lines(self) -> list[str]:
        """The report's lines, then each problem after ``FAIL:``."""
        return [*self.lines, *(f"FAIL: {p}" for p in self.problems)]


def _label(where: Place) -> str:
    if is_team_store(where):
        return f"the team store {mask_url(str(where))}"
    return f"the home folder {where}"


def _store_path(where: Place) -> Place:
    return where if is_team_store(where) else Path(where) / "runs.sqlite"


def _open_store(where: Place) -> Any:
    """The checkpoint store at ``where`` as a home opens it: a SQLite folder's with its
    ``approval.key`` (:func:`core.stores.folder_journal_key`), which seals and checks its
    journal of model calls (and seals an earlier format's rows at the upgrade)."""
    key = None if is_team_store(where) else folder_journal_key(Path(where))
    return open_store(_store_path(where), summarize=queue_columns, journal_key=key)


def _refuse_untrusted_journal(source: Place) -> None:
    """Refuse to copy a store whose journal of model calls holds rows its runs' runner did not
    write (``resolver doctor`` lists them): the target seals or stamps every row it is given, so
    a planted answer copied would become one its runner wrote. Raises ResolverError (one
    sentence; nothing was written)."""
    problems = _open_store(source).journal_problems()
    if problems:
        shown = ", ".join(f"{p['run_id']} step {p['step']} attempt {p['attempt']}" for p in problems[:SHOWN_DIFFERENCES])
        raise ResolverError(
            f"The journal of model calls of {_label(source)} holds {len(problems)} row(s) their run's runner did not write "
            f"({shown}); `resolver doctor` lists them: remove them, or their runs, before copying. Nothing was written."
        )


def _world_place(where: Place) -> Place:
    return where if is_team_store(where) else world_path(Path(where))


def _same_place(a: Place, b: Place) -> bool:
    if is_team_store(a) or is_team_store(b):
        return is_team_store(a) and is_team_store(b) and str(a) == str(b)
    return Path(a).resolve() == Path(b).resolve()


def _source_kind(source: Place, rows: StoreRows) -> str | None:
    """The kind of home the source store belongs to: a team store's recorded kind, a folder's
    ``home.json`` (:func:`core.api.homekind.home_kind`, which refuses a shop folder that lost it)."""
    if is_team_store(source):
        kind = rows.recorded_kind()
        return str(kind) if kind else None

    return home_kind(Path(source))


def _require_store(where: Place, role: str) -> None:
    """Refuse a ``role`` (source) place holding no store, or a newer resolver's."""
    have, latest = store_version(where)
    if have is None or (is_team_store(where) and have == 0):
        raise ResolverError(f"There is no resolver store in {_label(where)} to {role}; check the URL.")
    if have > latest:
        raise ResolverError(
            f"{_label(where)[:1].upper()}{_label(where)[1:]} has version {have}, written by a newer resolver (this one "
            f"writes {latest}); upgrade resolver first."
        )


def copy_store(source: Place, target: Place) -> StoreReport:
    """Copy the store at ``source`` into the empty store at ``target`` (either a SQLite home
    folder or a PostgreSQL URL, any direction), then verify the copy (:func:`verify_copy`).

    Raises:
        ResolverError: the two are one place, the source holds no store, either is a newer
            resolver's, the target's kind differs from the source's, the target folder already
            holds one of :data:`HOME_FILES`, or a store cannot be reached (one sentence);
            nothing was written.
        core.contract.store.StoreNotEmpty: the target holds runs, audit rows, approvers or register
            entries (nothing is merged); nothing was written.
    """
    _check_places(source, target)
    src = open_rows(source)
    kind = _source_kind(source, src)
    dst = open_rows(target)
    refuse_used(dst.label, dst.row_counts())
    _check_target_kind(target, dst, kind)
    keys = _keys_in_rows(src)
    _check_keys_can_move(source, target, keys)
    _refuse_untrusted_journal(source)
    report = StoreReport([f"Copying {_label(source)} into {_label(target)}:"])
    if is_team_store(target) and kind is not None:  # first: no home of the other kind takes it meanwhile
        store_kind(target, kind)
        report.lines.append(f"  kind: {kind}, recorded in the team store")
    elif kind is not None:
        report.lines.append(f"  kind: {kind}" + (" (home.json)" if kind == "shop" else ""))
    if not is_team_store(target):
        report.lines += _copy_files(source, Path(target), kind)
    for part, tables in COPY_PARTS.items():
        report.lines += _copy_part(part, tables, src, dst, source, target, keys)
    if is_team_store(source) or is_team_store(target):
        report.lines.append(_copy_parts(source, target))
    if not is_team_store(target):  # the source's rows were its runner's: sealed with the folder's key, now in place
        sealed = _open_store(target).seal_copied_journal()
        if sealed:
            report.lines.append(f"  journal: {sealed} model call(s) sealed with the target's approval.key")
    dst.copied()  # a team store's listeners read the whole queue again, once
    if not is_team_store(target) and is_team_store(source) and src.has_part("registry"):
        report.lines.append(
            f"  keys: a team store holds no private keys; copy each approver's key file from {KEYS_DIR}/ of their "
            f"machine's home folder into {Path(target) / KEYS_DIR} (a home reads its key files first)"
        )
    verified = verify_copy(source, target)
    report.lines += verified.lines
    report.problems += verified.problems
    return report


def _check_places(source: Place, target: Place) -> None:
    """Refuse a copy whose two places are one store, whose source holds no store or a newer
    resolver's, whose target is a newer resolver's, or whose target folder already holds one of
    :data:`HOME_FILES` (one sentence each); nothing was written."""
    if _same_place(source, target):
        raise ResolverError(f"The source and the target are one store ({_label(source)}); copy into another.")
    _require_store(source, "copy")
    have, latest = store_version(target)
    if have is not None and have > latest:
        raise ResolverError(f"{_label(target)} was written by a newer resolver (version {have}); upgrade resolver first.")
    if not is_team_store(target):
        present = [name for name in HOME_FILES if (Path(target) / name).exists()]
        if present:
            raise ResolverError(
                f"{_label(target)[:1].upper()}{_label(target)[1:]} already holds {', '.join(present)}; a store is copied "
                "only into a new or empty folder (nothing is merged)."
            )


def _check_target_kind(target: Place, dst: StoreRows, kind: str | None) -> None:
    """Refuse a copy into a team store made for the other kind of home than the source's."""
    if is_team_store(target):
        recorded = dst.recorded_kind()
        if recorded is not None and kind is not None and recorded != kind:
            raise ResolverError(
                f"{_label(target)[:1].upper()}{_label(target)[1:]} was made for a {recorded} home and the source is a "
                f"{kind} home's; a store keeps its kind: copy into a new schema or database."
            )


def _check_keys_can_move(source: Place, target: Place, keys: list[KeyFile]) -> None:
    """Refuse a copy into a team store of encrypted keys that cannot go to key files: those a
    team store source still holds in its rows, or those whose key file in the source folder is
    of another key (:func:`_check_key_files`)."""
    if is_team_store(target) and keys and is_team_store(source):
        raise ResolverError(
            f"{_label(source)[:1].upper()}{_label(source)[1:]} still holds {len(keys)} approver(s)' encrypted keys in its "
            "rows (an earlier release's); a team store is given none: let each approver unlock once on their machine "
            "(which moves the key there), then copy."
        )
    if is_team_store(target) and keys:
        _check_key_files(Path(source), keys)


def _copy_part(
    part: str, tables: tuple[str, ...], src: StoreRows, dst: StoreRows, source: Place, target: Place, keys: list[KeyFile]
) -> list[str]:
    """Copy one part of :data:`COPY_PARTS` from ``src`` to ``dst`` in one transaction (the
    registry into a team store without its keys, which go to key files); the report's lines."""
    if not src.has_part(part):
        return [f"  {part}: none in the source"]
    lines = []
    batches = src.export_rows(part)
    if part == "registry" and is_team_store(target):
        lines.append(_keys_to_files(Path(source), keys) if keys else "  keys: none in the source's rows")
        batches = _without_keys(batches)
    written = dst.import_rows(part, batches)
    shown = ", ".join(f"{written[t]} {t}" for t in tables)
    if part == "world":
        shown = f"{len(tables)} tables, {written['operations']} register entries"
    elif part == "audit":
        shown = f"{written['audit']} row(s), verbatim"
    elif part == "events":
        shown = f"{written['queue_events']} queue event(s), their IDs kept"
    lines.append(f"  {part}: {shown}, one transaction")
    if part == "registry":
        lines += _carry_db_users(src, dst, is_team_store(target))
    return lines


def _carry_db_users(src: StoreRows, dst: StoreRows, team_target: bool) -> list[str]:
    """Role separation's part of the registry: the approvers' database users go with
    their rows into a team store (one transaction after the registry's), and are dropped, said,
    into a SQLite home, which has none. Either way the target has no roles or grants: they
    belong to each server, so the lines say to run ``resolver store roles setup`` there."""
    mapping, tables_role = src.db_users()
    if not mapping and tables_role is None:
        return []
    shown = ", ".join(f"{name}={user}" for name, user in mapping.items()) or "none mapped"
    setup = f" (the source's tables belong to {tables_role})" if tables_role else ""
    if not team_target:
        return [
            f"  database users: not carried, a SQLite home has none ({shown}); the source's role separation{setup} "
            "does not go with the copy"
        ]
    mapped = dst.map_db_users(mapping) if mapping else 0
    return [
        f"  database users: {mapped} approver(s) mapped as in the source ({shown}); the target has no role "
        f"separation{setup} until resolver store roles setup runs there with its administrator's URL (roles and "
        "grants belong to each server)"
    ]


def _keys_in_rows(rows: StoreRows) -> list[KeyFile]:
    """The encrypted keys the source's approvers rows hold (a SQLite home's, or a team store's
    of a release before the keys moved to each approver's key file), as key files to write."""
    out = []
    for table, columns, batch in rows.export_rows("registry"):
        if table != "approvers":
            continue
        for row in batch:
            values = dict(zip(columns, row, strict=True))
            if values.get("private_key"):
                out.append(KeyFile(values["name"], values["public_key"], values["private_key"], values.get("recovery_key")))
    return out


def _check_key_files(folder: Path, keys: list[KeyFile]) -> None:
    """Refuse a copy into a team store when the source folder already holds a key file of
    another public key for one of ``keys``' approvers (it would be replaced). Raises
    ResolverError; nothing was written."""
    files = KeyFiles(folder)
    for key in keys:
        held = files.read(key.name)
        if held is not None and held.public_key != key.public_key:
            raise ResolverError(
                f"{files.path(key.name)} holds another key than {key.name}'s entry; move it away before copying "
                "(nothing was written)."
            )


def _keys_to_files(folder: Path, keys: list[KeyFile]) -> str:
    """Write each approver's encrypted key of the SQLite source's rows as a key file of the
    source folder (:class:`core.engine.keyfiles.KeyFiles`, fsynced before any row reaches the team
    store), keeping a file already there for the same key; returns the report's line."""
    files = KeyFiles(folder)
    for key in keys:
        if files.read(key.name) is None:
            files.write(key)
    return (
        f"  keys: {len(keys)} encrypted private key(s) kept out of the team store, as key files in {files.dir} "
        "(mode 0600): this folder decides for them on the team store; copy each other approver's file to their machine"
    )


def _without_keys(batches: Any) -> Any:
    """``batches`` of the registry with the ``private_key`` and ``recovery_key`` columns emptied
    (a team store holds no key material)."""
    for table, columns, rows in batches:
        if table == "approvers":
            i, j = columns.index("private_key"), columns.index("recovery_key")
            rows = [tuple("" if k == i else None if k == j else v for k, v in enumerate(row)) for row in rows]
        yield table, columns, rows


def _copy_key_files(source: Path, target: Path) -> str | None:
    """Copy a SQLite source folder's key files (``keys/*.key``) into the target folder (0700,
    each file 0600); returns the report's line, or None when there are none."""
    files = KeyFiles(source)
    listing = [key for _path, key, _problem in files.listing() if key is not None]
    if not listing:
        return None
    into = KeyFiles(target)
    for key in listing:
        into.write(key)
    return f"  key files: {len(listing)} copied into {into.dir} (mode 0600)"


def _copy_files(source: Place, target: Path, kind: str | None) -> list[str]:
    """Copy :data:`HOME_FILES` from a source folder into the target folder (mode 0600; the folder
    made 0700); a shop store copied from a team store gets its ``home.json`` written."""
    try:
        target.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise ResolverError(f"Cannot make the folder {target}: {exc.strerror or exc}.") from None
    if is_team_store(source):  # the per-shop parts come from the store's shop_parts (_copy_parts)
        if kind == "shop":
            init_home(target, shop=True)
            return ["  files: home.json written (a shop home)"]
        return []
    copied = []
    for name in HOME_FILES:
        path = Path(source) / name
        if not path.is_file():
            continue
        fd = os.open(target / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out, path.open("rb") as src:
            shutil.copyfileobj(src, out)
        copied.append(name)
    lines = [f"  files: {', '.join(copied) if copied else 'none in the source'}{' copied (mode 0600)' if copied else ''}"]
    key_files = _copy_key_files(Path(source), target)
    return lines if key_files is None else [*lines, key_files]


def _parts_at(place: Place) -> ShopParts:
    """The per-shop parts of the store at ``place`` (:class:`core.contract.store.ShopParts`): a folder's
    files, or a team store's ``shop_parts`` rows."""
    return open_shop_parts("", str(place)) if is_team_store(place) else open_shop_parts(Path(place))


def _copy_parts(source: Place, target: Place) -> str:
    """Copy every per-shop part (:data:`core.contract.store.SHOP_PARTS`: the owner's registry seal, the
    signed audit head, the practice HMAC key, the trainer's clock) the source holds into the
    target, when either is a team store (folder to folder they are among the files copied):
    without the seal and the head the copy of a shop could decide nothing (a new user's trial:
    the copy said "Verified" and its audit failed). Returns the report's line."""
    src, dst = _parts_at(source), _parts_at(target)
    copied = []
    for name in SHOP_PARTS:
        data = src.read(name)
        if data is not None:
            dst.write(name, data)
            copied.append(name)
    into = "the team store's shop_parts" if is_team_store(target) else f"files of {target} (mode 0600)"
    return f"  per-shop parts: {', '.join(copied)} copied into {into}" if copied else "  per-shop parts: none in the source"


def _parts_problems(source: Place, target: Place) -> list[str]:
    """The per-shop parts that differ between source and target (missing in one, or other bytes)."""
    src, dst = _parts_at(source), _parts_at(target)
    return [f"per-shop part {name}: not the source's" for name in SHOP_PARTS if src.read(name) != dst.read(name)]


def verify_copy(source: Place, target: Place) -> StoreReport:
    """Compare the store at ``target`` with the one at ``source``: rows per table, each run's
    version and proposal digest, the audit chain (whole on the target, ending at the source's
    tip) and the operations register (same entries, same order, same numbers). Never raises
    for a difference: each is a problem of the report. Raises ResolverError when a store
    cannot be read."""
    report = StoreReport(["Verified:"])
    report.problems += _parts_problems(source, target)
    src_rows, dst_rows = open_rows(source), open_rows(target)
    a, b = src_rows.row_counts(), dst_rows.row_counts()
    unequal = [f"{t} {a.get(t, 0)} in the source, {b.get(t, 0)} in the target" for t in a if a.get(t, 0) != b.get(t, 0)]
    if unequal:
        report.problems += [f"row count of {u}" for u in unequal]
    else:
        report.lines.append("  counts equal: " + ", ".join(f"{t} {n}" for t, n in a.items() if n))
    src_store = _open_store(source)
    dst_store = _open_store(target)
    runs = [row[0] for _t, _c, batch in src_rows.export_rows("runs") for row in batch if _t == "runs"]
    differing = [run_id for run_id in runs if _run_mark(src_store, run_id) != _run_mark(dst_store, run_id)]
    if differing:
        shown = ", ".join(differing[:SHOWN_DIFFERENCES]) + (" …" if len(differing) > SHOWN_DIFFERENCES else "")
        report.problems.append(f"{len(differing)} of {len(runs)} run(s) differ in version or proposal digest: {shown}")
    else:
        report.lines.append(f"  runs: {len(runs)} of {len(runs)} with the same version and proposal digest")
    audit = verify_audit(
        dst_store, Path(target) if not is_team_store(target) and (Path(target) / "audit.head").exists() else None
    )
    src_tip, dst_tip = src_store.chain_tip(), dst_store.chain_tip()
    if not audit.ok:
        report.problems += [f"audit: {p}" for p in audit.problems]
    elif src_tip != dst_tip:
        report.problems.append(
            f"audit: the target's chain ends at row {dst_tip[1]} {dst_tip[0][:16]}, the source's at row {src_tip[1]} {src_tip[0][:16]}"
        )
    else:
        report.lines.append(f"  audit: chain intact, {audit.length} row(s), latest {audit.latest[:16]}, the source's tip")
    try:
        reg_a, reg_b = register_entries(_world_place(source)), register_entries(_world_place(target))
    except ValueError as exc:
        report.problems.append(f"register: {exc}")
        return report
    if reg_a != reg_b:
        report.problems.append(f"register: {len(reg_b)} entries in the target, {len(reg_a)} in the source, or in another order")
    else:
        report.lines.append(f"  register: {len(reg_b)} entries, the same operations in the same order with the same numbers")
    return report


def _run_mark(store: Any, run_id: str) -> tuple[Any, ...]:
    """``(version, proposal digest)`` of a run, or the kind of error loading it raises (a
    corrupt checkpoint stays corrupt in the copy, and says so the same way)."""
    try:
        state = store.load(run_id)
    except ResolverError as exc:
        return ("error", type(exc).__name__)
    return (state.version, state.proposal.digest if state.proposal is not None else None)


def check_store(where: Place) -> StoreReport:
    """``resolver store check``: the store at ``where`` is reachable, its version is this
    resolver's, its rows per table (on a team store the approvers' keys its rows still hold, as
    ``store migrate`` counts them), its audit chain whole (:func:`core.engine.auditchain.verify_audit`)
    and its register readable. It writes nothing but what opening any store repairs (an
    append-only trigger someone dropped, made again), which is reported as a problem; a store
    behind this resolver's version is said and not opened (``resolver store migrate`` upgrades
    it). Never raises: what fails is a problem."""
    report = StoreReport([f"Store: {_label(where)}"])
    try:
        have, latest = store_version(where)
    except ResolverError as exc:
        report.problems.append(str(exc))
        return report
    if have is None or (is_team_store(where) and have == 0):
        report.problems.append(f"there is no resolver store in {_label(where)}")
        return report
    if have > latest:
        report.problems.append(f"version {have} was written by a newer resolver (this one writes {latest}); upgrade resolver")
        return report
    if have < latest:
        report.problems.append(f"version {have}, this resolver writes {latest}: run `resolver store migrate` first")
        return report
    report.lines.append(f"  version {have}, this resolver's")
    try:
        store = _open_store(where)  # first: what opening it repaired is said
        report.problems += [f"{r} Someone dropped it: rows may have been changed." for r in store.repairs]
        counts = open_rows(where).row_counts()
        report.lines.append("  rows: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
        if is_team_store(where):  # a new user's trial: doctor and migrate counted them, check did not
            report.lines.append(_keys_left_line(where))
        head = None if is_team_store(where) or not (Path(where) / "audit.head").exists() else Path(where)
        audit = verify_audit(store, head)
        if audit.ok:
            report.lines.append(f"  audit: chain intact, {audit.length} row(s), latest {audit.latest[:16]}")
        else:
            report.problems += [f"audit: {p}" for p in audit.problems]
        entries = register_entries(_world_place(where))
        report.lines.append(f"  register: {len(entries)} entries, numbered in commit order")
    except (ResolverError, ValueError) as exc:
        report.problems.append(str(exc))
    return report


def migrate_store(where: Place) -> StoreReport:
    """``resolver store migrate``: open the store at ``where`` (its migrations run on open: a
    SQLite store's format, its world's register numbers; a team store's schema) and say the
    version before and after.

    Raises:
        ResolverError: no store in a SQLite folder (``resolver init`` makes a home), a newer
            resolver's store, or one that cannot be reached (one sentence).
    """
    before, latest = store_version(where)
    if before is None:
        raise ResolverError(f"There is no resolver store in {_label(where)}; `resolver init --home DIR` makes a home.")
    if before > latest:
        raise ResolverError(f"{_label(where)} has version {before}, written by a newer resolver (this one writes {latest}).")
    _open_store(where)
    world = _world_place(where)
    if is_team_store(where) or Path(world).is_file():
        open_world(world)
    after, _latest = store_version(where)
    said = "already this resolver's" if before == after else f"migrated from {before}"
    report = StoreReport([f"{_label(where)[:1].upper()}{_label(where)[1:]}: version {before} before, {after} after ({said})."])
    if is_team_store(where):
        report.lines.append(_keys_left_line(where))
    return report


def _keys_left_line(where: Place) -> str:
    """The ``keys:`` line of ``store migrate`` and ``store check`` on a team store: how many
    approvers' encrypted keys its rows still hold (:func:`_keys_in_rows`; an earlier release's,
    each moving to its approver's machine at their first unlock there)."""
    held = len(_keys_in_rows(open_rows(where)))
    if held:
        return (
            f"  keys: {held} approver(s)' encrypted keys still in the store's rows (an earlier release's); each moves to "
            "its approver's machine at their first unlock there"
        )
    return "  keys: none in the store's rows (each approver's key is a file on their machine)"
