"""Practice homes and shop homes.

Every home folder is a **practice** home unless it was made as a **shop** home with
``resolver init --shop``; a shop home stays one for good. The lesson, the demo queue and the
trainer's class run in practice homes. A shop home holds a real queue, so a lesson command typed
in the wrong folder must not wipe, rewind or pay from it. In a shop home:

- the clock is real time only: ``clock.json`` is ignored, ``clock set`` and ``clock advance``
  are refused (``clock show`` and ``clock real`` work);
- ``reset``, ``class``, ``exercise``, ``manual-refund``, the demo queue and the lesson's Python
  API (the ``resolver`` package's ``systems``, ``checkpoint`` and ``runner`` names) are refused
  with :class:`~core.ground.errors.ShopRefused`, one sentence, nothing changed.

The kind is kept in ``home.json`` in the home folder (``{"kind": "shop", "made_at": ...}``),
but it is decided by everything the home holds, not by that one file: a folder that
holds an approvers registry (``approvers.sqlite``), its seal (``approvers.json``), an audit head
(``audit.head``) or Ed25519-signed audit rows in ``runs.sqlite`` is a shop home whatever
``home.json`` says (:func:`shop_evidence`). There a missing ``home.json``, or one that names
another kind, is refused with :class:`HomeKindLost` (exit 1) until it is put back, so deleting
or rewriting one file never turns a shop home into a practice home that pays on an HMAC
approval, resets or books a manual refund. A folder with none of these and no ``home.json`` is a
practice home. :data:`DIFFERENCES` is the README's table of what differs, one row per
difference.

A folder pointed at a team store keeps no per-shop file: the store records its kind
(``store_meta``) and keeps the registry's seal, the audit head, the practice key and the
trainer's clock (:class:`core.contract.store.ShopParts`). Such a folder's kind is its store's
(:func:`team_kind`); a folder that already is a home of the other kind is refused.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Literal

from core.ground.clock import SHOP_TZ, Clock, FileClock, SystemClock, iso
from core.ground.errors import ResolverError, ShopRefused
from core.ground.masking import mask_url
from core.stores import open_shop_parts, recorded_kind, store_kind

Kind = Literal["practice", "shop"]

KIND_FILE = "home.json"
"""The file in the home folder that makes it a shop home."""

HOME_FILES = ("runs.sqlite", "larkfield.sqlite", "approval.key", "clock.json", "approvers.sqlite", "approvers.json")
"""Files that show a folder is already in use as a (practice) home."""

SHOP_FILES = ("approvers.sqlite", "approvers.json", "audit.head")
"""Files only a shop home ever holds: their presence makes a folder a shop home."""


class HomeKindLost(ResolverError):
    """A folder holding a shop home's registry, seal, audit head or signed audit rows whose
    ``home.json`` is missing, damaged or names another kind. Nothing runs there until
    ``home.json`` is put back (``resolver init --shop`` writes it again)."""


SIGNED_ROWS_LOOKED_AT = 2000
"""How many of the newest audit rows :func:`shop_evidence` reads for a signature (by the primary
key, so the check costs well under a millisecond on any store; a whole scan of 200,000 rows
takes about 80 ms, too much for every command and ``resolver runs``)."""


def shop_evidence(root: Path | str) -> list[str]:
    """What in the folder ``root`` only a shop home holds: the names of :data:`SHOP_FILES`
    present; when none is, ``"Ed25519-signed audit rows"`` if one of the newest
    :data:`SIGNED_ROWS_LOOKED_AT` rows of ``runs.sqlite``'s audit carries a signature (``sig``;
    a practice home never writes one). Empty for a practice home. Reads ``runs.sqlite``
    read-only and never raises: a store that cannot be read counts as no rows."""
    root = Path(root)
    found = [name for name in SHOP_FILES if (root / name).exists()]
    store = root / "runs.sqlite"
    if not found and store.is_file():
        # lazy: the back-ends load only when no shop file tells the kind
        from core.stores import folder_files

        if folder_files().has_signed_rows(store, SIGNED_ROWS_LOOKED_AT):
            found.append("Ed25519-signed audit rows")
    return found


DIFFERENCES: tuple[tuple[str, str, str], ...] = (
    (
        "made by",
        "any command, in a new folder",
        "`resolver init --shop`, in a new or empty folder; it stays a shop home: a folder holding a registry, a seal, an audit head or signed audit rows is one whatever `home.json` says, and is refused until a lost `home.json` is put back",
    ),
    ("`resolver show`, the app's top bar", "practice", "shop"),
    (
        "clock",
        "the trainer's clock (`clock set`, `clock advance`)",
        "real time only; `clock set` and `clock advance` are refused",
    ),
    ("`reset`, `reset --all`", "deletes the runs (and rebuilds the world)", "refused"),
    ("`class`, `exercise`", "the lesson's moments and exercises", "refused"),
    ("`manual-refund`", "the lesson's weekend phone call", "refused"),
    ("`record`", "a live run kept as a recording in `recordings/`", "refused (recordings are the trainer's material)"),
    ("`ticket add`", "a ticket of one's own kept in `tickets/`", "refused (as `record`)"),
    ("`resolver-tui --demo`", "loads the demo queue into an empty home", "refused"),
    ("the lesson's Python API (`resolver.systems`, `.checkpoint`, `.runner`)", "works", "refused"),
    (
        "approve when a precondition already fails (the world changed since the agent looked)",
        "shows what changed, then goes on to the write, where the service refuses (seed 000's Monday)",
        "refused before anything is written, with what changed, and audited",
    ),
    (
        "who decides",
        "`--as ROLE` (and `--name`), a claim, no keys",
        "`--name NAME` and that approver's passphrase; the role comes from the approvers registry; `--as` is refused",
    ),
    (
        "`approvers init`, `add`, `list`, `revoke`",
        "refused: it says how to make a shop home",
        "the owner's registry of approvers and their keys; every decision is refused until `approvers init`",
    ),
    (
        "decisions",
        "HMAC-signed with `approval.key`",
        "Ed25519-signed by the approver; the executor checks the signature, the registry and the audit row before every write",
    ),
    (
        "`audit verify`",
        "the hash chain and the append-only triggers",
        "also each decision's and registry change's signature, the registry's version, the signed `audit.head` and each approval a run holds against its row",
    ),
)
"""(what, in a practice home, in a shop home): the README's table."""


def kind_path(root: Path | str) -> Path:
    """``home.json`` in the home folder ``root``."""
    return Path(root) / KIND_FILE


def _lost(root: Path, evidence: list[str], what: str) -> HomeKindLost:
    return HomeKindLost(
        f"{root} is a shop home (it holds {', '.join(evidence)}) but its home.json {what}: a shop home stays one, "
        f"so nothing runs here until home.json is put back from a backup or written again with "
        f"`resolver init --shop --home {root}`."
    )


def home_kind(root: Path | str) -> Kind:
    """``"shop"`` if ``root`` was made with ``resolver init --shop``, else ``"practice"``.

    A folder with :func:`shop_evidence` must say ``"shop"`` in ``home.json``.

    Raises:
        HomeKindLost: the folder holds a shop home's files or signed rows, and ``home.json`` is
            missing, damaged or names another kind.
        ResolverError: ``home.json`` exists but cannot be read, or names an unknown kind
            (fails closed: nothing runs until a person looks at it).
    """
    root = Path(root)
    path = kind_path(root)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        kind = raw["kind"]
    except FileNotFoundError:
        evidence = shop_evidence(root)
        if evidence:
            raise _lost(root, evidence, "is missing") from None
        return "practice"
    except PermissionError:
        raise ResolverError(
            f"The home file {path} cannot be read by this user: the home belongs to another account, "
            "or its owner made it unreadable; run resolver as the home's owner."
        ) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        evidence = shop_evidence(root)
        if evidence:
            raise _lost(root, evidence, f"is damaged ({exc})") from None
        raise ResolverError(
            f"The home file {path} is damaged ({exc}); restore it from a backup or ask who made this home."
        ) from None
    if kind not in ("practice", "shop"):
        raise ResolverError(f"The home file {path} names the kind {str(kind)[:20]!r}; a home is practice or shop.")
    if kind != "shop":
        evidence = shop_evidence(root)
        if evidence:
            raise _lost(root, evidence, f"says {kind}")
    return kind


def folder_kind(root: Path | str) -> Kind | None:
    """The kind the folder ``root`` itself says (:func:`home_kind`), or None when it holds
    nothing of a home (no ``home.json``, none of :data:`HOME_FILES`, no shop evidence): such a
    folder pointed at a team store takes the store's kind.

    Raises: HomeKindLost, ResolverError (as :func:`home_kind`)."""
    root = Path(root)
    if kind_path(root).exists() or any((root / name).exists() for name in (*HOME_FILES, *SHOP_FILES)):
        return home_kind(root)
    return None


def team_kind(root: Path | str, store: str, *, record: bool = True) -> Kind:
    """The kind of the home whose folder ``root`` is pointed at the team store ``store``:
    the kind the store recorded when it was made (with ``record``, a store no home opened
    yet records the folder's kind, practice for an empty folder; without, nothing is written:
    ``resolver doctor``). A folder that holds nothing of a home takes the store's kind, so a
    second machine needs no per-shop file.

    Raises:
        ShopRefused: the store is a shop store and the folder a practice home (a practice folder
            never reaches a shop store with ``reset``, ``clock set`` or the lesson's API).
        HomeKindLost: the store records the kind practice but holds a shop's registry seal or
            signed audit head (its ``store_meta`` was changed by hand).
        ResolverError: the store is a practice store and the folder a shop home; the store
            cannot be reached (one sentence).
    """
    root = Path(root)
    folder = folder_kind(root)
    made = store_kind(store, folder or "practice") if record else (recorded_kind(store) or folder or "practice")
    shown = mask_url(store)
    if folder is not None and made != folder:
        raise kind_refusal(root, folder, made, store)
    if made == "practice":
        parts = open_shop_parts(root, store)
        evidence = [name for name in ("approvers.json", "audit.head") if parts.read(name) is not None]
        if evidence:
            raise HomeKindLost(
                f"The team store {shown} holds a shop's {' and '.join(evidence)} but records the kind practice: its "
                "store_meta was changed outside resolver, and nothing runs on it until the row says shop again "
                "(UPDATE store_meta SET value = 'shop' WHERE key = 'kind')."
            )
    return "shop" if made == "shop" else "practice"


def kind_refusal(root: Path, kind: str, made: str, store: str) -> ResolverError:
    """The refusal of a home folder of ``kind`` pointed at the team store ``store`` made for the
    kind ``made``: ShopRefused when the store is a shop's, else ResolverError."""
    said = (
        f"The home folder {root} is a {kind} home, but the team store {mask_url(store)} was made for a {made} "
        f"home: a folder's kind must be its store's. Use a folder of its kind (resolver init{' --shop' if made == 'shop' else ''} "
        "--home NEW --store URL; an empty folder takes the store's kind), or another store."
    )
    return ShopRefused(said) if made == "shop" else ResolverError(said)


def home_clock(root: Path | str, store: str | None = None, kind: Kind | None = None) -> Clock:
    """The clock of the home at ``root``: the trainer's ``clock.json`` in a practice home (real
    time while the file is absent; on the team store ``store``, its part ``clock.json``),
    real time in a shop home. ``kind``: the home's kind when the caller knows it, else the
    folder's (:func:`home_kind`)."""
    if (kind or home_kind(root)) == "shop":
        return SystemClock()
    if store is not None:
        return FileClock(Path(root) / "clock.json", parts=open_shop_parts(root, store))
    return FileClock(Path(root) / "clock.json")


def require_practice(root: Path | str, what: str, kind: Kind | None = None) -> None:
    """Refuse ``what`` (a command or API, e.g. ``reset``) in a shop home. ``kind``: the home's
    kind when the caller knows it (a folder on a team store takes the store's), else the
    folder's (:func:`home_kind`).

    Raises:
        ShopRefused: ``root`` is a shop home; the sentence names the folder and what to do.
    """
    if (kind or home_kind(root)) == "shop":
        raise ShopRefused(
            f"{Path(root)} is a shop home: {what} runs only in a practice home, so it was refused and nothing changed. "
            "Use a practice home for the lesson: --home DIR or RESOLVER_HOME."
        )


def require_shop(root: Path | str, what: str, kind: Kind | None = None) -> None:
    """Refuse ``what`` (the approvers registry) in a practice home, saying how to make
    a shop home; ``kind`` as for :func:`require_practice`. Raises ShopRefused."""
    if (kind or home_kind(root)) != "shop":
        raise ShopRefused(
            f"{Path(root)} is a practice home: {what} works only in a shop home, where approvers have keys. "
            "Make one in a new folder with `resolver init --shop --home DIR`."
        )


def check_clock_command(root: Path | str, command: str, kind: Kind | None = None) -> None:
    """``clock set`` and ``clock advance`` are refused in a shop home (its clock is real time);
    ``show`` and ``real`` are allowed; ``kind`` as for :func:`require_practice`. Raises ShopRefused."""
    if command in ("set", "advance"):
        require_practice(root, f"`clock {command}` (a shop home's clock is real time only)", kind)


def init_home(root: Path | str, shop: bool = False, store: str | None = None) -> str:
    """Make ``root`` a home: a shop home with ``shop``, else a practice home. Returns one line
    that says what was made. Making a home twice the same way is no error.

    With ``store`` (a team store's URL) the kind is recorded in the store, not in the
    folder, which keeps no per-shop file: a store no home opened yet takes ``shop`` (or
    practice); a store made for the other kind is refused, and so is a folder that is a home of
    the other kind (:func:`team_kind`).

    Raises:
        ResolverError: ``shop`` for a folder that is already a practice home in use (it holds
            runs, a world, a key or a clock), or a practice home asked of a shop home: a home
            never changes kind. ``init --shop`` in a shop home whose ``home.json`` was lost
            (:class:`HomeKindLost`) writes it again; ``init`` there raises HomeKindLost.
    """
    root = Path(root)
    if store is not None:
        return _init_team(root, shop, store)
    lost = False
    try:
        kind = home_kind(root)
    except HomeKindLost:
        if not shop:
            raise
        kind, lost = "shop", True  # a shop home whose home.json went missing or changed: write it again (the safe direction)
    if not shop:
        if kind == "shop":
            raise ResolverError(f"{root} is a shop home, and a shop home stays one; make a practice home in another folder.")
        return f"{root} is a practice home."
    if kind == "shop" and not lost:
        return f"{root} is already a shop home."
    used = [] if lost else [name for name in HOME_FILES if (root / name).exists()]
    if used:
        raise ResolverError(
            f"{root} is already a practice home (it has {', '.join(used)}); a shop home must start in a new "
            "or empty folder: `resolver init --shop --home DIR`."
        )
    try:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not lost:
            root.chmod(0o700)  # a shop home is private like every home: the folder 0700, its files 0600
        made = iso(datetime.now(SHOP_TZ))
        fd = os.open(kind_path(root), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"kind": "shop", "made_at": made}) + "\n")
        kind_path(root).chmod(0o600)
    except OSError as exc:
        raise ResolverError(f"Cannot make a shop home in {root}: {exc.strerror or exc}.") from None
    if lost:
        return f"{root} is a shop home again: home.json says so."
    return f"Made a shop home in {root}: its clock is real time only, and the lesson's commands are refused here."


def _init_team(root: Path, shop: bool, store: str) -> str:
    """:func:`init_home` on the team store ``store``. Raises ResolverError, ShopRefused."""
    want: Kind = "shop" if shop else "practice"
    folder = folder_kind(root)
    if folder is not None and folder != want:
        raise ResolverError(
            f"{root} is a {folder} home, and a home never changes kind; point an empty folder at the team store instead."
        )
    before = recorded_kind(store)
    made = store_kind(store, want)
    shown = mask_url(store)
    if made != want:
        raise ResolverError(
            f"The team store {shown} was made for a {made} home, and a store never changes kind; "
            f"make a {want} home on another store (or schema)."
        )
    if before == want:
        return f"The team store {shown} is already a {want} home; {root} uses it."
    if shop:
        return (
            f"Made a shop home on the team store {shown}: its clock is real time only, and the lesson's commands are "
            f"refused there. {root} keeps no per-shop file; any empty folder pointed at the store uses it."
        )
    return f"The team store {shown} is a practice home; {root} uses it."
