"""The approval key: the HMAC-SHA-256 key every approval is signed with, from which the journal
of model calls derives its own key.

It lives in a home's per-shop parts (``approval.key``: a file of the home folder, or a row of the
team store), so the engine that signs with it (:mod:`core.engine.approval`) and the back-ends that
derive the journal's key from it (:mod:`core.stores`) read it through this one module.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from core.ground.errors import ApprovalKeyError

if TYPE_CHECKING:
    from core.contract.store import ShopParts

KEY_MIN_BYTES = 32
"""The shortest approval key accepted, in bytes (an HMAC-SHA-256 key should be as long as the hash)."""

KEY_PART = "approval.key"
"""The key's name among a home's per-shop parts (:data:`core.contract.store.SHOP_PARTS`)."""


def _new_key() -> str:
    """A new key: :data:`KEY_MIN_BYTES` random bytes from :mod:`secrets`, hex, one line."""
    import secrets  # lazy: a key is made once per home; every other command only reads it

    return secrets.token_hex(KEY_MIN_BYTES) + "\n"


def load_key(path: Path, *, in_flight: int | Callable[[], int] = 0) -> bytes:
    """The approval signing key in ``path``, created (32 random bytes, hex, mode 0600) if absent.

    Creation is atomic: the key is written to a private temporary file and linked into place,
    so a process or thread racing to create it reads either nothing or the whole key, never an
    empty file (two approvers signing at once on a new home found this).

    ``in_flight``: runs approved and not yet finished (``executing``), or a function that counts
    them, called only when the key is missing (a count of the runs is no part of every
    decision). A missing key is then not made again, since their signatures could no longer be
    verified.

    Raises:
        ApprovalKeyError: the key is not a file of hex digits, is shorter than
            :data:`KEY_MIN_BYTES`, can be read by group or others (chmod 600), or is missing
            while approvals are in flight; the sentence says what to do.
    """
    path = Path(path)
    key = _read_key(path)
    if key is not None:
        return key
    if callable(in_flight):
        in_flight = in_flight()
    if in_flight:
        raise ApprovalKeyError(
            f"The approval key {path} is missing while {in_flight} approved run(s) are executing; their approvals "
            "cannot be verified with a new key. Restore approval.key from a backup, then finish each with "
            "`resolver resume RUN` (`resolver runs --status executing` lists their IDs), or reject and approve them "
            "again after `resolver reset`."
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(_new_key())
    try:
        os.link(tmp, path)  # fails if another process linked its key first: theirs wins
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    key = _read_key(path)
    assert key is not None
    return key


def _read_key(path: Path) -> bytes | None:
    """The key in ``path``, checked; None when there is no file. Raises ApprovalKeyError."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ApprovalKeyError(f"The approval key {path} cannot be read ({exc.strerror or exc}).") from None
    if not stat.S_ISREG(st.st_mode):
        raise ApprovalKeyError(f"The approval key {path} is not a file; move it away and restore approval.key from a backup.")
    if os.name == "posix" and st.st_mode & 0o077:
        raise ApprovalKeyError(
            f"The approval key {path} can be read by other users (mode {stat.S_IMODE(st.st_mode):04o}); "
            f"run `chmod 600 {path}` and try again."
        )
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ApprovalKeyError(f"The approval key {path} cannot be read ({exc.strerror or exc}).") from None
    return _decode_key(raw, str(path))


def _decode_key(raw: bytes, where: str) -> bytes:
    """The key stored as ``raw`` (hex digits) at ``where`` (for the sentence), checked.
    Raises ApprovalKeyError: not hex, or shorter than :data:`KEY_MIN_BYTES`."""
    try:
        key = bytes.fromhex(raw.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        raise ApprovalKeyError(
            f"The approval key {where} is damaged (it must be hex digits only); restore approval.key from a backup."
        ) from None
    if len(key) < KEY_MIN_BYTES:
        raise ApprovalKeyError(
            f"The approval key {where} is too short ({len(key)} bytes; at least {KEY_MIN_BYTES} are needed); "
            "restore approval.key from a backup, or delete it when no run is executing to make a new one."
        )
    return key


def load_stored_key(parts: ShopParts, *, in_flight: int | Callable[[], int] = 0) -> bytes:
    """The approval signing key of a team store: its per-shop part ``approval.key``
    (:class:`core.contract.store.ShopParts`), made on first use (32 random bytes, hex) by whichever
    machine asks first, so every machine pointed at the store checks decisions with the one key.
    ``in_flight`` as for :func:`load_key`: a missing key is not made again while approved runs
    are executing.

    Raises:
        ApprovalKeyError: the stored key is not hex digits or too short, or is missing while
            approvals are in flight. ResolverError: the store cannot be reached.
    """
    label = parts.label(KEY_PART)
    raw = parts.read(KEY_PART)
    if raw is None:
        if callable(in_flight):
            in_flight = in_flight()
        if in_flight:
            raise ApprovalKeyError(
                f"The approval key {label} is missing while {in_flight} approved run(s) are executing; their approvals "
                "cannot be verified with a new key. Restore the store from a backup, or reject and approve them again."
            )
        raw = parts.create(KEY_PART, _new_key().encode("ascii"))
    return _decode_key(raw, label)
