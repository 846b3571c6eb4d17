"""``resolver doctor``: check a home and say, line by line, what to do.

Each line is ``ok``, ``warn`` or ``FAIL``, a fact and, when something is wrong, what to do:
which home is in use and why (flag, environment, config file, or the rule of the default that picked it:
:func:`core.ground.homepath.default_home`), the modes of the home
(0700) and its files (0600), the approval key's strength, the integrity of both databases
(``PRAGMA integrity_check``), the audit's append-only triggers, the journal of model calls
(one FAIL line per run whose journal holds a row its runner did not write: a SQLite row whose
seal does not verify with the home's key, a team store's row an approver's user wrote), the
stored formats and schema versions, and the versions of the dependencies against the declared floors. It only reads: it
opens the databases read-only and never creates or repairs anything.
"""

from __future__ import annotations

import re
import stat
import sys
from importlib import metadata
from pathlib import Path

from core import DISTRIBUTION, install_hint
from core.api.home import FILE_MODE, HOME_MODE, HomeLocation
from core.api.homekind import folder_kind, home_kind, shop_evidence, team_kind
from core.api.queue import queue_columns
from core.engine.signing import registry_lines, verify_audit_read_only
from core.ground.clock import FileClock, SystemClock, iso
from core.ground.errors import ResolverError
from core.ground.masking import mask_text
from core.ground.state import SCHEMA_VERSION
from core.stores import (
    folder_files,
    folder_journal_key,
    open_shop_parts,
    open_store,
    store_version,
    team_store_lines,
    trigger_lines,
)
from core.stores.common import journal_key, seal_verdict

AUDIT_TRIGGERS = ("audit_no_update", "audit_no_delete")
"""The triggers that keep the audit append-only (:mod:`core.stores.sqlite.checkpoint`)."""
DEPENDENCIES = ("pydantic", "sqlite-utils", "textual", "platformdirs", "concurrent-log-handler")
TEAM_DEPENDENCIES = ("psycopg", "psycopg-pool")
"""The ``postgres`` extra, checked when the home's store is a team store."""
TEAM_EXTRA = "postgres"
"""The extra that brings :data:`TEAM_DEPENDENCIES` (``pyproject.toml``)."""
KEY_MIN_BYTES = 32
"""The approval key's length when resolver makes it (:func:`core.contract.approval_key.load_key`)."""


def _line(level: str, text: str) -> str:
    return f"{level:<4}  {text}"


def _mode_lines(root: Path) -> list[str]:
    lines = []
    mode = stat.S_IMODE(root.stat().st_mode)
    if mode & 0o077:
        lines.append(_line("FAIL", f"home folder mode {mode:04o}: other users can read it; run `chmod 700 {root}`."))
    else:
        lines.append(_line("ok", f"home folder mode {mode:04o}"))
    loose = []
    for path in sorted(root.iterdir()):
        if path.is_file() and stat.S_IMODE(path.stat().st_mode) & 0o077:
            loose.append(f"{path.name} {stat.S_IMODE(path.stat().st_mode):04o}")
    if loose:
        lines.append(
            _line(
                "FAIL",
                f"files readable by others: {', '.join(loose)}; run `chmod 600` on them "
                f"(every file of the home should be {FILE_MODE:04o}).",
            )
        )
    else:
        lines.append(_line("ok", f"every file of the home is {FILE_MODE:04o} or stricter"))
    return lines


def _key_line(path: Path) -> str:
    if not path.exists():
        return _line("warn", "no approval.key yet: the first approval makes one (32 random bytes, 0600).")
    if not path.is_file():
        return _line("FAIL", f"{path} is not a file; move it away (approvals signed with the old key will be refused).")
    try:
        key = bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (UnicodeDecodeError, ValueError):
        return _line("FAIL", f"{path} is not a hex key; restore it from a backup (`resolver restore`).")
    if len(key) < KEY_MIN_BYTES:
        return _line("FAIL", f"approval.key holds {len(key)} byte(s), fewer than {KEY_MIN_BYTES}; restore the key from a backup.")
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        return _line("FAIL", f"approval.key is readable by others; run `chmod 600 {path}`.")
    return _line("ok", f"approval key: {len(key)} bytes, mode 0600")


def _database_lines(path: Path, label: str, triggers: tuple[str, ...] = ()) -> list[str]:
    if not path.is_file():
        return [
            _line(
                "FAIL" if path.exists() else "warn",
                f"{label} {path.name} is missing"
                + (
                    " (a folder is in its place; move it away)." if path.exists() else "; the first command that writes makes it."
                ),
            )
        ]
    files = folder_files()
    try:
        result, fmt, found = files.database_check(path)
    except files.DatabaseError as exc:
        return [_line("FAIL", f"{label} {path.name} cannot be read ({exc}); restore it from a backup (`resolver restore FILE`).")]
    lines = []
    if result == ["ok"]:
        lines.append(_line("ok", f"{label} {path.name}: integrity ok, format {fmt}"))
    else:
        lines.append(
            _line(
                "FAIL",
                f"{label} {path.name}: integrity check found {len(result)} problem(s) ({result[0]}); "
                "restore it from a backup (`resolver restore FILE`).",
            )
        )
    missing = [t for t in triggers if t not in found]
    if missing:
        lines.append(
            _line(
                "FAIL",
                f"audit triggers missing: {', '.join(missing)}; the audit is not append-only. "
                "Open the home with any resolver command to re-create them.",
            )
        )
    elif triggers:
        lines.append(_line("ok", "audit triggers present (append-only)"))
    return lines


def _floor(package: str) -> str | None:
    """The ``>=`` floor pyproject.toml declares for ``package`` (exact name, extras ignored), read
    from the installed distribution's metadata (:data:`core.DISTRIBUTION`), or None."""
    try:
        for req in metadata.requires(DISTRIBUTION) or []:
            spec = req.split(";")[0]
            name = re.split(r"[\[<>=!~ ]", spec, maxsplit=1)[0]
            if name.replace("_", "-").lower() == package and ">=" in spec:
                return spec.split(">=", 1)[1].split(",")[0].strip(" )")
    except metadata.PackageNotFoundError:
        return None
    return None


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split("."):
        digits = "".join(c for c in piece if c.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def _dependency_lines(team: bool = False) -> list[str]:
    """One line per runtime dependency (installed version against the declared floor); a team
    store adds the ``postgres`` extra's packages (:data:`TEAM_DEPENDENCIES`). A missing or too old
    package's FAIL line names its extra and says how to install it (:func:`core.install_hint`);
    the missing packages of one extra share one line, since one install brings them all."""
    lines = [_line("ok", f"Python {sys.version.split()[0]}, SQLite {folder_files().ENGINE_VERSION}")]
    extras: dict[str, str | None] = {package: None for package in DEPENDENCIES}
    if team:
        extras |= {package: TEAM_EXTRA for package in TEAM_DEPENDENCIES}
    missing: dict[str | None, list[str]] = {}
    for package, extra in extras.items():
        of = "" if extra is None else f" (the {extra} extra)"
        try:
            have = metadata.version(package)
        except metadata.PackageNotFoundError:
            missing.setdefault(extra, []).append(package)
            continue
        floor = _floor(package)
        if floor and _version_tuple(have) < _version_tuple(floor):
            lines.append(_line("FAIL", f"{package} {have}{of} is older than the declared {floor}: {install_hint(extra)}."))
        else:
            lines.append(_line("ok", f"{package} {have}" + (f" (>= {floor})" if floor else "")))
    for extra, packages in missing.items():
        named = packages[0] if len(packages) == 1 else f"{', '.join(packages[:-1])} and {packages[-1]}"
        verb = "is" if len(packages) == 1 else "are"
        of = "" if extra is None else f" (the {extra} extra)"
        lines.append(_line("FAIL", f"{named}{of} {verb} not installed: {install_hint(extra)}."))
    return lines


def _clock_line(root: Path, kind: str, url: str | None = None) -> str:
    """The home's clock, checked against the supported times: ok with the time, or
    FAIL with the sentence (a damaged ``clock.json``, a computer's clock out of range). ``url``:
    the team store keeping the trainer's clock, or None for the folder's file."""
    try:
        parts = open_shop_parts(root, url) if url is not None else None
        clock = SystemClock() if kind == "shop" else FileClock(root / "clock.json", parts=parts)  # the kind as doctor found it
        now = clock.now()
        simulated = kind != "shop" and clock.simulated
    except ResolverError as exc:
        return _line("FAIL", str(exc))
    return _line("ok", f"clock: {iso(now)} ({'simulated' if simulated else 'real'}), within the supported times")


def _audit_lines(root: Path, kind: str) -> list[str]:
    """What ``resolver audit verify`` says, read only: the hash chain and, in a shop
    home with a registry, each decision's signature and the signed ``audit.head``. A store made
    before the chain (no ``prev`` column yet) is a warn line: it is chained at its next open."""
    read_only_audit = folder_files().read_only_audit
    path = root / "runs.sqlite"
    if not path.is_file():
        return []
    try:
        with read_only_audit(path) as (columns, audit):
            if not columns:
                return []
            if not {"prev", "sig"} <= columns:
                return [_line("warn", "audit: not chained yet (a store from an earlier release); it is chained at its next open")]
            report = verify_audit_read_only(root, audit, kind)
    except ResolverError as exc:
        return [_line("FAIL", f"audit: cannot be checked ({exc})")]
    if report.ok:
        return [_line("ok", report.lines()[0].removeprefix("Audit: ").rstrip(".").join(("audit: ", "")))]
    return [_line("FAIL", f"audit: {p}") for p in report.problems]


def journal_lines(problems: list[dict[str, object]], rows: int) -> list[str]:
    """``doctor``'s lines on the journal of model calls: one FAIL line per run whose journal
    holds rows its runner did not write (``problems``, :meth:`core.contract.store.Store.journal_problems`:
    its resume is refused until they go), else one ok line when there are ``rows``."""
    runs: dict[str, list[dict[str, object]]] = {}
    for problem in problems:
        runs.setdefault(str(problem["run_id"]), []).append(problem)
    if not runs:
        return [_line("ok", f"journal of model calls: {rows} row(s), each written by its run's runner")] if rows else []
    lines = []
    for run_id, found in runs.items():
        shown = "; ".join(f"step {p['step']} attempt {p['attempt']}: {p['why']}" for p in found[:5])
        lines.append(
            _line(
                "FAIL",
                f"journal of run {run_id}: {len(found)} row(s) its runner did not write ({shown}), so its resume is refused; "
                "delete those rows from model_calls (the step is asked again) or the run.",
            )
        )
    return lines


def _sqlite_journal_lines(root: Path) -> list[str]:
    """The journal's lines of the SQLite home ``root``, read only: each row's seal checked with
    the home's ``approval.key`` (never made here); nothing for a store not yet sealed (an
    earlier format, sealed at its upgrade). A missing key with sealed rows is a FAIL line: a new
    key would leave every row untrusted."""

    read_only_journal = folder_files().read_only_journal

    path = root / "runs.sqlite"
    if not path.is_file():
        return []
    try:
        rows = read_only_journal(path)
        if not rows:
            return []
        key = journal_key(folder_journal_key(root, make=False)(lambda: 0))
    except ResolverError as exc:
        return [_line("FAIL", f"journal of model calls: cannot be checked ({exc})")]
    problems = [
        {"run_id": r[0], "step": r[1], "attempt": r[2], "why": why} for r in rows if (why := seal_verdict(key, r)) is not None
    ]
    return journal_lines(problems, len(rows))


def _team_store_lines(root: Path, kind: str, url: str) -> list[str]:
    """The team store's lines: the server and schema version read without changing
    anything; when the schema is this resolver's, each trigger missing or altered by name, and
    the audit as ``audit verify`` checks it."""
    pairs = team_store_lines(url)
    lines = [_line(level, text) for level, text in pairs]
    if pairs[-1][0] != "ok":
        return lines
    try:
        store = open_store(url, summarize=queue_columns)
        report = verify_audit_read_only(root, store, kind, world_at=url)
    except ResolverError as exc:
        return [*lines, _line("FAIL", f"audit: cannot be checked ({exc})")]
    lines += [_line(level, text) for level, text in trigger_lines(store)]
    if report.ok:
        lines.append(_line("ok", report.lines()[0].removeprefix("Audit: ").rstrip(".").join(("audit: ", ""))))
    else:
        lines += [_line("FAIL", f"audit: {p}") for p in report.problems]
    try:
        lines += journal_lines(store.journal_problems(), 0)
    except ResolverError as exc:
        lines.append(_line("FAIL", f"journal of model calls: cannot be checked ({exc})"))
    return lines


def _empty_team_store(url: str) -> bool:
    """Whether the team store at ``url`` is reachable and has no resolver tables yet: doctor then
    says so, never "cannot be read" beside its own "ok" line for the server (a new user's trial)."""
    try:
        return store_version(url)[0] == 0
    except ResolverError:
        return False


def _team_kind(root: Path, url: str, usable: bool) -> str:
    """The kind of the folder ``root`` on the team store ``url`` (:func:`core.api.homekind.team_kind`),
    recording nothing; the folder's own kind (practice when it holds nothing) while the store is
    not ``usable`` (its schema is not this resolver's), so doctor never migrates a store.
    Raises ResolverError (the kinds differ, the store was changed by hand)."""
    if not usable:
        return folder_kind(root) or "practice"
    return team_kind(root, url, record=False)


def doctor_lines(where: HomeLocation) -> tuple[list[str], int]:
    """Check the home at ``where``; returns (the lines, the exit code: 0 when no line is FAIL, 1
    otherwise). Never creates or changes a file. No line holds a password: the store is shown
    masked, and every line passes through :func:`core.ground.masking.mask_text` with its URL, since a
    line may quote what a library said about it."""
    root = where.path
    lines = [
        f"Home: {where.describe()}",
        f"Why this home: {where.reason}.",  # which rule picked it (core.ground.homepath.default_home)
        f"Store: {where.store.shown()} ({where.store.detail})",
    ]
    if not root.is_dir():
        lines.append(
            _line(
                "FAIL",
                f"no home folder there yet; choose one with --home DIR, or make it: `resolver-tui --demo` (the demo "
                f"queue), `resolver init` or `resolver run TASK` (the folder is made {HOME_MODE:04o}).",
            )
        )
        lines += _dependency_lines(where.store.url is not None)
        return lines, 1
    url = where.store.url

    usable = url is None or team_store_lines(url)[-1][0] == "ok"  # else the per-shop parts are not read
    try:
        kind = home_kind(root) if url is None else _team_kind(root, url, usable)
        if url is not None and not usable:  # the store keeps the kind: not read, so not said (a new user's trial)
            why = "the team store has no resolver tables yet" if _empty_team_store(url) else "the team store cannot be read"
            lines.append(_line("warn", f"kind: not known ({why}; this folder's own: {folder_kind(root) or 'none'})"))
        else:
            kept = "" if url is None else " (recorded in the team store)"
            lines.append(_line("ok", f"kind: {kind}{kept}; checkpoints are read at schema version {SCHEMA_VERSION}"))
    except ResolverError as exc:  # a lost or unreadable home.json is a line, and the rest is still checked
        kind = "shop" if shop_evidence(root) else "practice"
        lines.append(_line("FAIL", str(exc)))
    lines += _mode_lines(root)
    if url is None:  # a team store keeps the key; it is checked where it is used
        lines.append(_key_line(root / "approval.key"))
    if usable:
        lines.append(_clock_line(root, kind, url))
    if kind == "shop" and usable:  # the owner key's fingerprint, to compare with the one on paper
        for text in registry_lines(root, kind, url):
            level = (
                "ok"
                if text.startswith(("Owner key:", "Approvers: registry verifies", "Key file:", "Keys:"))
                else "warn"
                if "no registry yet" in text or text.startswith("Keys in the store:")
                else "FAIL"
            )
            lines.append(_line(level, text))
    if where.store.url is not None:
        lines += _team_store_lines(root, kind, where.store.url)
    else:
        lines += _database_lines(root / "runs.sqlite", "checkpoint store", AUDIT_TRIGGERS)
        lines += _audit_lines(root, kind)
        lines += _sqlite_journal_lines(root)
        lines += _database_lines(root / "larkfield.sqlite", "practice world")
    lines += _dependency_lines(url is not None)

    lines = [mask_text(line, [url]) for line in lines]  # a line may quote a library's error, and that the URL
    return lines, (1 if any(line.startswith("FAIL") for line in lines) else 0)
