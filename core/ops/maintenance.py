"""Retention, backup and restore of a home folder (``resolver prune``, ``backup``, ``restore``).

- :func:`prune` deletes finished runs (done, handed to a person, stopped) whose last checkpoint
  is older than a duration, with their rows. The checkpoints hold the ticket's text and the
  customer's data; the audit keeps who decided what (run ID, decision, role, name, digest,
  time), never the ticket's text, and stays append-only (seed 000: decide how long checkpoints
  are kept).
- :func:`backup` copies the whole home into one ``.tar.gz``: both databases by SQLite's online
  backup API (a consistent copy while the app or an executor is writing, never a file copy of a
  live WAL database) and every other file of the home (key, clock, home.json, anything a later
  release adds), except the log and SQLite's own ``-wal``/``-shm``/``-journal`` files.
- :func:`restore` checks an archive before it replaces anything: both databases present and
  passing ``PRAGMA integrity_check``, no path outside the home, and the same kind of home
  (practice or shop) as the one it replaces; the home as it was is kept in a backup file beside
  it first, and a home with runs newer than the backup is refused unless told. A shop home is
  restored by its owner (their passphrase) from a backup of the same owner.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import shutil
import tarfile
import tempfile
import time
import zlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from core.ground.clock import EARLIEST, SUPPORTED_RANGE, TimeOutOfRange, format_duration, parse_time, supported
from core.ground.errors import ResolverError, ShopRefused
from core.ground.masking import mask_url
from core.ground.state import FINAL_STATUSES
from core.stores import folder_files

if TYPE_CHECKING:
    from core.api.home import Home

DATABASES = ("runs.sqlite", "larkfield.sqlite")
SKIPPED_SUFFIXES = ("-wal", "-shm", "-journal")
SKIPPED_NAMES = ("resolver.log",)
_PLAIN_FILES = frozenset(("approval.key", "clock.json", "home.json", "approvers.json", "audit.head", "approvers.sqlite"))
"""Files of a home that are always plain files (a folder in their place is damage, never backed up or restored)."""
_UNREADABLE = (OSError, EOFError, zlib.error, tarfile.TarError)
"""What reading a damaged or cut-short ``.tar.gz`` raises (gzip says EOFError when the file ends
early, zlib and tarfile their own errors for damaged bytes), and writing a folder (OSError)."""


def prune_cutoff(now: datetime, older_than: timedelta) -> datetime:
    """``now - older_than``, the time before which :func:`prune` deletes finished runs.

    Raises:
        TimeOutOfRange: the cutoff falls outside the supported range (:func:`core.ground.clock.supported`),
            e.g. ``--older-than 10000d`` reaches back before 2000.
    """
    try:
        cutoff = now - older_than
    except OverflowError:
        cutoff = EARLIEST - timedelta(days=1)
    if cutoff < EARLIEST:
        raise TimeOutOfRange(
            f"{format_duration(older_than)} before {now.isoformat()} is before the times resolver supports ({SUPPORTED_RANGE}); "
            "use a shorter duration."
        )
    return supported(cutoff, "The cutoff")


def prune(home: Home, older_than: timedelta) -> list[str]:
    """Delete finished runs whose last checkpoint is older than ``older_than`` (by the home's
    clock). Returns lines saying what was removed. Runs waiting, running or executing are never
    touched.

    Raises:
        TimeOutOfRange: the cutoff (:func:`prune_cutoff`) or the clock is outside the supported range.
    """
    cutoff = prune_cutoff(home.clock.now(), older_than)
    doomed: list[tuple[str, str]] = []
    for status in sorted(FINAL_STATUSES):
        for page in home.queue.pages(status):
            doomed += [(r.run_id, status) for r in page.rows if parse_time(r.updated_at) < cutoff]
    operations: list[str] = []
    for run_id, _ in doomed:
        with contextlib.suppress(ResolverError):  # a corrupt checkpoint names no operation: its rows still go
            operations += [op.operation_id for op in home.store.load(run_id).operations]

    def delete_runs() -> None:
        for run_id, _ in doomed:
            home.delete(run_id)

    home.store.scrubbed(delete_runs)
    home.world().forget_replies(operations)
    if not doomed:
        return [f"No finished run is older than {format_duration(older_than)}; nothing was removed."]
    by_status: dict[str, int] = {}
    for _, status in doomed:
        by_status[status] = by_status.get(status, 0) + 1
    counts = ", ".join(f"{n} {s}" for s, n in sorted(by_status.items()))
    return [
        f"Removed {len(doomed)} finished run(s) last saved before {cutoff.isoformat()} ({counts}) with their events; "
        "the audit keeps who decided what.",
        *(f"  {run_id}" for run_id, _ in doomed),
    ]


def _skipped(name: str) -> bool:
    return name in SKIPPED_NAMES or name.endswith(SKIPPED_SUFFIXES) or name.startswith(".") or name.startswith(SKIPPED_NAMES)


def _copy_database(source: Path, target: Path) -> None:
    """A consistent copy of a live SQLite database for a backup (mode 0600)."""
    folder_files().online_backup(source, target, f"Cannot copy {source.name} for the backup: {{exc}}. Nothing was written.")
    target.chmod(0o600)


def not_on_a_team_store(home: Home, command: str) -> None:
    """Refuse ``backup`` and ``restore`` on a home whose runs are in a team store: they
    copy the home folder's SQLite files, and an archive of a folder without them would say
    "backed up" over nothing (a new user's finding). Raises ResolverError naming what to use."""
    if home.store_url is None:
        return

    raise ResolverError(
        f"`resolver {command}` copies a home folder's SQLite files, and this home's runs are in the team store "
        f"{mask_url(home.store_url)}: back it up with PostgreSQL's own tools (pg_dump), or copy it into a "
        "SQLite folder with `resolver store copy --from URL --to sqlite:///FOLDER`. Nothing was written."
    )


def backup(home: Home, file: str | os.PathLike) -> list[str]:
    """Write the whole home into the archive ``file`` (``.tar.gz``, mode 0600). Refuses to
    overwrite. Returns lines naming what was copied.

    Raises:
        ResolverError: ``file`` exists; the home's runs are in a team store (:func:`not_on_a_team_store`).
    """
    not_on_a_team_store(home, "backup")
    out = Path(file)
    if out.exists():
        raise ResolverError(f"{out} already exists; name a new file for the backup.")
    names: list[str] = []
    with tempfile.TemporaryDirectory(prefix="resolver-backup-") as tmp:
        fd = os.open(Path(tmp) / "archive", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
            for name in DATABASES:
                if (home.root / name).is_file():
                    copy = Path(tmp) / name
                    if home.root / name == home.store.path:
                        home.store.backup(copy)  # the store's own consistent copy
                    else:
                        _copy_database(home.root / name, copy)
                    tar.add(copy, arcname=name)
                    names.append(name)
            for path in sorted(home.root.iterdir()):
                if path.name in DATABASES or _skipped(path.name):
                    continue
                if path.name in _PLAIN_FILES and not path.is_file():
                    raise ResolverError(
                        f"{path} is not a file, so it cannot be backed up as the home's {path.name}; "
                        "`resolver doctor` says what to do. Nothing was written."
                    )
                if path.is_file():
                    tar.add(path, arcname=path.name)
                    names.append(path.name)
                elif path.is_dir():
                    tar.add(path, arcname=path.name)
                    names.append(path.name + "/")
        try:
            shutil.move(Path(tmp) / "archive", out)
        except OSError as exc:
            raise ResolverError(f"Cannot write the backup {out}: {exc.strerror or exc}.") from None
    return [f"Backed up {home.root} ({home.kind}) to {out}: {', '.join(names)}."]


def _load_database(source: Path, target: Path) -> None:
    """Replace the content of the live database ``target`` with ``source`` in one step."""
    folder_files().online_backup(
        source, target, f"Cannot restore {target.name}: {{exc}}. The files restored before it are listed in the log."
    )


def _archive_kind(tar: tarfile.TarFile) -> str:
    try:
        member = tar.getmember("home.json")
    except KeyError:
        return "practice"
    data = tar.extractfile(member)
    try:
        return str(json.load(io.TextIOWrapper(data, encoding="utf-8")).get("kind", "practice")) if data else "practice"
    except (ValueError, AttributeError):
        raise ResolverError("The backup's home.json is damaged; nothing was replaced.") from None


@dataclass(frozen=True)
class Restored:
    """What :func:`restore` did: ``lines`` to print and ``kept``, the backup file of the home as
    it was just before (None when the home held no database yet)."""

    lines: list[str]
    kept: Path | None


def _owner_key(folder: Path) -> str | None:
    """The owner key named by ``approvers.json`` in ``folder`` (None when absent or unreadable)."""
    try:
        return str(json.loads((folder / "approvers.json").read_text(encoding="utf-8"))["owner_key"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _keep_path(root: Path) -> Path:
    """A new file beside the home for the copy of it kept before a restore."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for n in range(1000):
        path = root.parent / f"{root.name}-before-restore-{stamp}{f'-{n}' if n else ''}.tar.gz"
        if not path.exists():
            return path
    raise ResolverError(f"Cannot name a file beside {root} for the copy kept before the restore; nothing was replaced.")


def restore(home: Home, file: str | os.PathLike, *, replace_newer: bool = False, owner_checked: bool = False) -> Restored:
    """Replace the home's files with those of the backup ``file`` after checking it, keeping the
    home as it was in a backup file beside it first (``HOME-before-restore-<UTC time>.tar.gz``,
    made by :func:`backup`), so a restore never loses a run for good.

    A home holding runs saved after the backup's newest run (a new run, or a step, decision or
    write made since) is refused unless ``replace_newer``: the refusal names them. A shop home is restored only when the caller
    unlocked its owner's key (``owner_checked``: ``resolver restore`` asks the owner's passphrase)
    and only from a backup of the same owner (its ``approvers.json`` names the same owner key).

    Raises:
        ShopRefused: the home is a shop home (the command line unlocks the owner's key first).
        ResolverError: the archive is missing, unreadable or cut short, lacks a database, holds a
            damaged database, a path outside the home or a member tarfile's ``data`` rule refuses
            (:func:`_extract`), or is of the other kind of home; the home has
            newer runs and ``replace_newer`` is False; the copy of the home cannot be written. In
            every case nothing is replaced. The home's runs are in a team store
            (:func:`not_on_a_team_store`).
    """
    not_on_a_team_store(home, "restore")
    src = Path(file)
    if home.kind == "shop" and not owner_checked:
        raise ShopRefused(f"{home.root} is a shop home: its owner restores it, with their passphrase. Nothing was replaced.")
    try:
        tar = tarfile.open(src, mode="r:gz")  # noqa: SIM115 - closed by the with below
    except (OSError, tarfile.TarError) as exc:
        raise ResolverError(
            f"Cannot read the backup {src}: {getattr(exc, 'strerror', None) or exc}. Nothing was replaced."
        ) from None
    with tar, tempfile.TemporaryDirectory(prefix="resolver-restore-", dir=home.root.parent) as tmp:
        try:
            members = tar.getmembers()
        except _UNREADABLE as exc:
            raise ResolverError(f"Cannot read the backup {src}: {exc}. Nothing was replaced.") from None
        _check_members(home, src, members)
        kind = _archive_kind(tar)
        if kind != home.kind:
            raise ResolverError(
                f"The backup {src} is of a {kind} home and {home.root} is a {home.kind} home; a restore never "
                "changes a home's kind. Nothing was replaced."
            )
        _extract(tar, src, members, Path(tmp))
        for name in DATABASES:
            problem = folder_files().integrity(Path(tmp) / name)
            if problem:
                raise ResolverError(f"The backup's {name} is damaged ({problem}); nothing was replaced.")
        if home.kind == "shop" and _owner_key(Path(tmp)) != _owner_key(home.root):
            raise ShopRefused(
                f"The backup {src} is of a shop home with another owner key than {home.root}'s; a restore never "
                "changes a shop's owner. Nothing was replaced."
            )
        kept = _keep_home(home, src, Path(tmp), replace_newer=replace_newer)
        restored = _replace_files(home, Path(tmp), members)
    lines = [f"Restored {home.root} ({home.kind}) from {src}: {', '.join(sorted(restored))}."]
    if kept is not None:
        lines.append(f"The home as it was is kept in {kept} (`resolver restore {kept}` brings it back).")
    return Restored(lines, kept)


def _has_data_filter() -> bool:
    """Whether this Python's tarfile has its extraction filters (``tarfile.data_filter``: 3.11.4
    and later). Debian 12's own Python is 3.11.2, without them; :func:`_extract` then checks the
    members by hand (:func:`_data_filter_by_hand`)."""
    return hasattr(tarfile, "data_filter")


def _extract(tar: tarfile.TarFile, src: Path, members: list[tarfile.TarInfo], dest: Path) -> None:
    """Extract ``members`` of the backup ``src`` into the new, empty folder ``dest`` under
    tarfile's ``data`` rule: by its own filter where this Python has it, else after
    :func:`_data_filter_by_hand`. ``dest`` is the caller's temporary folder: what was extracted
    before a refusal goes with it, and nothing of the home has been replaced yet.

    Raises:
        ResolverError: a member the rule refuses, an archive that ends early or is damaged, or a
            folder that cannot be written.
    """
    try:
        if _has_data_filter():
            try:
                tar.extractall(dest, members=members, filter="data")
            except tarfile.FilterError as exc:
                raise ResolverError(
                    f"The backup {src} holds {exc.tarinfo.name!r}, which cannot be restored safely ({exc}); nothing was replaced."
                ) from None
        else:
            tar.extractall(dest, members=_data_filter_by_hand(src, members), numeric_owner=True)
    except _UNREADABLE as exc:
        raise ResolverError(
            f"Cannot extract the backup {src}: {getattr(exc, 'strerror', None) or exc}. Nothing was replaced."
        ) from None


def _data_filter_by_hand(src: Path, members: list[tarfile.TarInfo]) -> list[tarfile.TarInfo]:
    """tarfile's ``data`` extraction rule, for a Python without ``tarfile.data_filter`` (before
    3.11.4): the archive ``src`` is data from anywhere, so extracting it must never write outside
    the folder it goes into, make a device, or leave a file that runs as its owner or that others
    may change. Every member is checked before anything is extracted; returns the members to
    extract (copies: the archive's own are left alone), in the archive's order.

    Refused, as the data filter refuses them: an absolute name; a name with a ``..`` component (it
    would leave the folder); a device, fifo or other special file; a link to an absolute path or
    to a place outside the folder. Some refusals go further than the data filter, because a check
    made before extracting cannot follow links that are not on disk yet: a name or a link's
    target may not pass through, or be, a link made earlier in the archive (a link to ``.`` and
    then a link to ``that/..`` would climb out of the folder); a link may not take the place of
    something before it; a hard link must name a file before it in the archive; only a folder
    may be the folder itself (``.``).

    Changed, as the data filter changes them: a file keeps its read and execute bits only
    (setuid, setgid, sticky and group or other write are dropped; no execute bit when its owner
    has none) and its owner may always read and write it; a folder is made for its owner only
    (0700); no ownership is taken from the archive (what is extracted belongs to whoever
    restores). A hard link is extracted as a copy of the file it names, so no link reaches a file
    whose mode was not checked (tarfile's own fallback, for a link it cannot make, would use the
    archive's unchecked mode and owner).

    Raises:
        ResolverError: naming the first member refused; nothing is extracted then.
    """
    seen: set[PurePosixPath] = set()
    links: set[PurePosixPath] = set()
    files: dict[PurePosixPath, tarfile.TarInfo] = {}
    checked: list[tarfile.TarInfo] = []
    for member in members:
        name = PurePosixPath(member.name)
        problem = _name_problem(name, member, links)
        if problem is None and (member.issym() or member.islnk()):
            problem = _link_problem(name, member, seen, links, files)
        if problem is not None:
            raise ResolverError(f"The backup {src} holds {member.name!r}, {problem}; nothing was replaced.")
        safe = copy.copy(files[PurePosixPath(member.linkname)] if member.islnk() else member)
        safe.name = member.name
        safe.uid, safe.gid, safe.uname, safe.gname = -1, -1, "", ""  # -1: the owner is left as it is
        if safe.isdir():
            safe.mode = 0o700
        elif safe.isfile():
            mode = safe.mode & 0o755
            safe.mode = (mode if mode & 0o100 else mode & ~0o111) | 0o600
        seen.add(name)
        if safe.issym():
            links.add(name)
        elif safe.isfile():
            files[name] = safe
        checked.append(safe)
    return checked


def _name_problem(name: PurePosixPath, member: tarfile.TarInfo, links: set[PurePosixPath]) -> str | None:
    """Why ``member``, named ``name``, may not be extracted by :func:`_data_filter_by_hand`
    (None when it may): an absolute name, a ``..`` component, a path through or onto one of the
    archive's ``links`` made before it, the folder itself as anything but a folder, a special file."""
    if name.is_absolute():
        return "which is an absolute path"
    if ".." in name.parts or name in links or any(parent in links for parent in name.parents):
        return "whose path would leave the folder it is restored into"
    if not name.parts and not member.isdir():
        return "which names the folder restored into, not a file in it"
    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        return "which is a device, a fifo or another special file"
    return None


def _link_problem(
    name: PurePosixPath,
    member: tarfile.TarInfo,
    seen: set[PurePosixPath],
    links: set[PurePosixPath],
    files: dict[PurePosixPath, tarfile.TarInfo],
) -> str | None:
    """Why the link ``member``, named ``name``, may not be made by :func:`_data_filter_by_hand`
    (None when it may). ``seen`` are the names before it, ``links`` the symbolic links among
    them and ``files`` the regular files. A symbolic link's target is followed from the link's
    folder component by component: it may not climb above the folder restored into nor pass
    through a link. A hard link's target is a name in the archive, and must be one of ``files``."""
    target = PurePosixPath(member.linkname)
    if target.is_absolute():
        return f"a link to the absolute path {member.linkname!r}"
    if name in seen:
        return "a link in the place of something before it in the archive"
    if member.islnk():
        return None if target in files else f"a hard link to {member.linkname!r}, which is not a file before it in the archive"
    where = list(name.parent.parts)
    for part in target.parts:
        if part != "..":
            where.append(part)
            if PurePosixPath(*where) in links:
                return f"a link to {member.linkname!r}, through another link of the archive"
        elif where:
            where.pop()
        else:
            return f"a link to {member.linkname!r}, outside the folder it is restored into"
    return None


def _check_members(home: Home, src: Path, members: list[tarfile.TarInfo]) -> None:
    """Refuse an archive that is not a home's backup, before anything is replaced (a restore
    never stops halfway): a path outside the home, a member neither file nor folder, a home file
    held as a folder, a member of the other type than the home's file or folder at its place, a
    database missing."""
    for m in members:
        parts = PurePosixPath(m.name).parts
        if m.name.startswith("/") or ".." in parts or not (m.isfile() or m.isdir()):
            raise ResolverError(f"The backup {src} holds {m.name!r}, which is not a file of a home; nothing was replaced.")
    for m in members:  # checked before anything is replaced: a restore never stops halfway
        target = home.root / m.name
        if m.name in _PLAIN_FILES and not m.isfile():
            raise ResolverError(f"The backup {src} holds {m.name!r} as a folder, not the home's file. Nothing was replaced.")
        if target.exists() and m.isfile() != target.is_file() and m.name not in DATABASES:
            raise ResolverError(
                f"{target} is {'a folder' if target.is_dir() else 'a file'} and the backup holds it as "
                f"{'a file' if m.isfile() else 'a folder'}; move it away first. Nothing was replaced."
            )
    names = {m.name for m in members}
    missing = [d for d in DATABASES if d not in names]
    if missing:
        raise ResolverError(f"The backup {src} has no {', '.join(missing)}; it is not a resolver backup. Nothing was replaced.")


def _keep_home(home: Home, src: Path, tmp: Path, *, replace_newer: bool) -> Path | None:
    """Back the home up beside itself before it is replaced (its path; None when it has no runs
    database yet), after refusing, unless ``replace_newer``, when it holds runs saved after the
    newest run of the backup extracted in ``tmp``."""
    if not (home.root / "runs.sqlite").is_file():
        return None
    theirs = folder_files().newest(tmp / "runs.sqlite")
    newer = folder_files().saved_after(home.root / "runs.sqlite", theirs)
    if newer and not replace_newer:
        shown = ", ".join(newer[:3]) + (f" and {len(newer) - 3} more" if len(newer) > 3 else "")
        raise ResolverError(
            f"{home.root} holds {len(newer)} run(s) saved after the backup {src} was made ({shown}); "
            "restoring would lose them. Add --replace-newer to restore anyway (the home is kept in a "
            "backup file first). Nothing was replaced."
        )
    kept = _keep_path(home.root)
    backup(home, kept)
    return kept


def _replace_files(home: Home, tmp: Path, members: list[tarfile.TarInfo]) -> list[str]:
    """Put the backup extracted in ``tmp`` in place of the home's files; the names restored."""
    restored = []
    for name in DATABASES:  # into the live databases by the backup API: atomic, WAL and other readers kept right
        _load_database(tmp / name, home.root / name)
        restored.append(name)
    for m in members:
        target = home.root / m.name
        if m.name in DATABASES:
            continue
        if m.isdir():
            target.mkdir(mode=0o700, exist_ok=True)
            continue
        os.replace(tmp / m.name, target)
        target.chmod(0o600)
        restored.append(m.name)
    return restored
