"""Practice homes and shop homes (issue 9).

Every home folder is a **practice** home unless it was made as a **shop** home with
``resolver init --shop``; a shop home stays one for good. The lesson, the demo queue and the
trainer's class run in practice homes. A shop home holds a real queue, so a lesson command typed
in the wrong folder must not wipe, rewind or pay from it. In a shop home:

- the clock is real time only: ``clock.json`` is ignored, ``clock set`` and ``clock advance``
  are refused (``clock show`` and ``clock real`` work);
- ``reset``, ``class``, ``exercise``, ``manual-refund``, the demo queue and the lesson's Python
  API (the ``resolver`` package's ``systems``, ``checkpoint`` and ``runner`` names) are refused
  with :class:`~core.errors.ShopRefused`, one sentence, nothing changed.

The kind is kept in ``home.json`` in the home folder (``{"kind": "shop", "made_at": ...}``);
a folder without it is a practice home. :data:`DIFFERENCES` is the README's table of what
differs, one row per difference.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Literal

from core.clock import SHOP_TZ, Clock, FileClock, SystemClock, iso
from core.errors import ResolverError, ShopRefused

Kind = Literal["practice", "shop"]

KIND_FILE = "home.json"
"""The file in the home folder that makes it a shop home."""

HOME_FILES = ("runs.sqlite", "larkfield.sqlite", "approval.key", "clock.json", "approvers.sqlite", "approvers.json")
"""Files that show a folder is already in use as a (practice) home."""

DIFFERENCES: tuple[tuple[str, str, str], ...] = (
    ("made by", "any command, in a new folder", "`resolver init --shop`, in a new or empty folder; it stays a shop home"),
    ("`resolver show`, the app's top bar", "practice", "shop"),
    (
        "clock",
        "the trainer's clock (`clock set`, `clock advance`)",
        "real time only; `clock set` and `clock advance` are refused",
    ),
    ("`reset`, `reset --all`", "deletes the runs (and rebuilds the world)", "refused"),
    ("`class`, `exercise`", "the lesson's moments and exercises", "refused"),
    ("`manual-refund`", "the lesson's weekend phone call", "refused"),
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
        "also each decision's signature and the signed `audit.head`",
    ),
)
"""(what, in a practice home, in a shop home): the README's table."""


def kind_path(root: Path | str) -> Path:
    """``home.json`` in the home folder ``root``."""
    return Path(root) / KIND_FILE


def home_kind(root: Path | str) -> Kind:
    """``"shop"`` if ``root`` was made with ``resolver init --shop``, else ``"practice"``.

    Raises:
        ResolverError: ``home.json`` exists but cannot be read (fails closed: nothing runs
            until a person looks at it).
    """
    path = kind_path(root)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        kind = raw["kind"]
    except FileNotFoundError:
        return "practice"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ResolverError(
            f"The home file {path} is damaged ({exc}); restore it from a backup or ask who made this home."
        ) from None
    if kind not in ("practice", "shop"):
        raise ResolverError(f"The home file {path} names the kind {str(kind)[:20]!r}; a home is practice or shop.")
    return kind


def home_clock(root: Path | str) -> Clock:
    """The clock of the home at ``root``: the trainer's ``clock.json`` in a practice home (real
    time while the file is absent), real time in a shop home."""
    if home_kind(root) == "shop":
        return SystemClock()
    return FileClock(Path(root) / "clock.json")


def require_practice(root: Path | str, what: str) -> None:
    """Refuse ``what`` (a command or API, e.g. ``reset``) in a shop home.

    Raises:
        ShopRefused: ``root`` is a shop home; the sentence names the folder and what to do.
    """
    if home_kind(root) == "shop":
        raise ShopRefused(
            f"{Path(root)} is a shop home: {what} runs only in a practice home, so it was refused and nothing changed. "
            "Use a practice home for the lesson: --home DIR or RESOLVER_HOME."
        )


def require_shop(root: Path | str, what: str) -> None:
    """Refuse ``what`` (the approvers registry, issue 14) in a practice home, saying how to make
    a shop home. Raises ShopRefused."""
    if home_kind(root) != "shop":
        raise ShopRefused(
            f"{Path(root)} is a practice home: {what} works only in a shop home, where approvers have keys. "
            "Make one in a new folder with `resolver init --shop --home DIR`."
        )


def check_clock_command(root: Path | str, command: str) -> None:
    """``clock set`` and ``clock advance`` are refused in a shop home (its clock is real time);
    ``show`` and ``real`` are allowed. Raises ShopRefused."""
    if command in ("set", "advance"):
        require_practice(root, f"`clock {command}` (a shop home's clock is real time only)")


def init_home(root: Path | str, shop: bool = False) -> str:
    """Make ``root`` a home: a shop home with ``shop``, else a practice home. Returns one line
    that says what was made. Making a home twice the same way is no error.

    Raises:
        ResolverError: ``shop`` for a folder that is already a practice home in use (it holds
            runs, a world, a key or a clock), or a practice home asked of a shop home: a home
            never changes kind.
    """
    root = Path(root)
    kind = home_kind(root)
    if not shop:
        if kind == "shop":
            raise ResolverError(f"{root} is a shop home, and a shop home stays one; make a practice home in another folder.")
        return f"{root} is a practice home."
    if kind == "shop":
        return f"{root} is already a shop home."
    used = [name for name in HOME_FILES if (root / name).exists()]
    if used:
        raise ResolverError(
            f"{root} is already a practice home (it has {', '.join(used)}); a shop home must start in a new "
            "or empty folder: `resolver init --shop --home DIR`."
        )
    try:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        root.chmod(0o700)  # a shop home is private like every home (issue 13): the folder 0700, its files 0600
        made = iso(datetime.now(SHOP_TZ))
        fd = os.open(kind_path(root), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"kind": "shop", "made_at": made}) + "\n")
        kind_path(root).chmod(0o600)
    except OSError as exc:
        raise ResolverError(f"Cannot make a shop home in {root}: {exc.strerror or exc}.") from None
    return f"Made a shop home in {root}: its clock is real time only, and the lesson's commands are refused here."
