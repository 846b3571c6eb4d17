"""The approvers registry of a shop home: who may decide, with which role and key.

Each approver has a name, a role (``agent``, ``team_lead``, ``grace``) and an Ed25519 key pair
(the ``cryptography`` package). The owner (Grace) makes the registry with
``resolver approvers init``; each later entry (``add``, ``revoke``) is signed with the owner's
private key, so an entry edited with SQL no longer verifies.

Files in the home folder (mode 0600):

- ``approvers.sqlite``: table ``approvers`` (``name`` (key, case-insensitive), ``role``,
  ``public_key`` (32 bytes, hex), ``added_at``, ``revoked_at`` (ISO 8601 or NULL),
  ``signature`` (the owner's Ed25519 signature, hex, of :func:`entry_message`),
  ``private_key`` (PKCS#8 PEM, encrypted with the approver's passphrase by
  ``BestAvailableEncryption``), ``recovery_key`` (the owner's only: the owner's private key
  again, encrypted with the one-time recovery code)).
- ``approvers.json``: the seal, outside the rows: the owner's name and public key, the
  number of entries and the SHA-256 of all of them, signed by the owner.

On a team store the rows are the store's ``approvers`` table and the seal its
``shop_parts`` row ``approvers.json`` (:class:`core.contract.store.ShopParts`), so every machine pointed
at the store reads one registry. The encrypted private keys are NOT in the store: each is a file
on the machine of the approver it belongs to (:mod:`core.engine.keyfiles`, ``keys/`` in that machine's
home folder, 0700 and 0600), the owner's with the recovery copy, and the rows' ``private_key`` is
empty and ``recovery_key`` NULL; so a reader of the database has no key to try passphrases on
offline. A new approver makes their key on their own machine (``approvers key``, :meth:`Registry.make_key`)
and the owner adds its public key (``approvers add NAME --role ROLE --public-key HEX``); ``add``
without ``--public-key`` makes the key file on the owner's machine, to be copied. A team store of
a release before the key files still holds keys in its rows: the first unlock of each on a
machine writes that machine's key file (fsynced) and then empties the row (:meth:`Registry._settle`);
``resolver doctor`` and ``resolver store migrate`` count the keys still there.

A SQLite shop home keeps the keys in its rows, as before: the home folder is one machine's, so
``approvers.sqlite`` (0600) is already per person, and no fixture or format changes. An unlock
reads the same way in both: this machine's key file first, then the row's key. A writer of the
database alone can neither edit, add, drop nor un-revoke an entry (an older signed entry
replayed no longer matches the seal); the owner's signatures and the seal cover the public
part only, so moving a key between a row and a file needs no signature.

On a team store each machine also pins the owner key it first trusted (``keys/owner.pin``,
:meth:`core.engine.keyfiles.KeyFiles.pin_owner`): a seal naming another owner key is one of
:meth:`Registry.problems` there, so a registry replaced with its owner key (every table
rewritten) is refused on each machine that used the store before.

The owner key's fingerprint (:func:`fingerprint`) is printed at ``init`` to be written down;
``resolver doctor`` shows it (:func:`doctor_lines`), so a swapped owner key (someone who can
write every file of the account) is found by comparing it with the paper.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import secrets
import unicodedata
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from core.contract.registry import ApproverChange
from core.engine.keyfiles import KeyFile, KeyFileError, KeyFiles
from core.ground.clock import iso
from core.ground.data import data_dir
from core.ground.errors import ApprovalRefused, ResolverError
from core.ground.masking import mask_url
from core.ground.safetext import name_key, one_line
from core.stores import is_team_store, open_registry_rows, open_shop_parts

ROLES = ("agent", "team_lead", "grace")
"""Roles an approver may hold (the policy's roles, ``core.ground.data.ROLES``)."""

REGISTRY_DB = "approvers.sqlite"
SEAL_FILE = "approvers.json"
OWNER_ROLE = "grace"


class RegistryError(ResolverError):
    """The registry is missing, damaged or refuses a change (one sentence)."""


@dataclass(frozen=True)
class Entry:
    """One approver as stored: ``public_key`` is 32 bytes in hex, times are ISO 8601."""

    name: str
    role: str
    public_key: str
    added_at: str
    revoked_at: str | None
    signature: str
    private_key: str
    recovery_key: str | None = None

    @property
    def revoked(self) -> bool:
        """True once the owner revoked this approver."""
        return bool(self.revoked_at)


def entry_message(name: str, role: str, public_key: str, added_at: str, revoked_at: str | None) -> bytes:
    """What the owner signs for one entry: canonical JSON of its public fields."""
    body = {
        "kind": "resolver-approver-v1",
        "name": name,
        "role": role,
        "public_key": public_key,
        "added_at": added_at,
        "revoked_at": revoked_at,
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")


def seal_message(
    owner: str, owner_key: str, count: int, entries_hash: str, version: int | None = None, changed_at: str = ""
) -> bytes:
    """What the owner signs for the whole registry (``approvers.json``).

    A seal written by a release that versions the registry carries its ``version`` (1 at ``approvers init``, one
    more at each ``add``, ``revoke`` and ``recover``) and the time of that change (ISO 8601), so a
    registry put back from an older copy is told from the current one (``-v2``). A seal of an
    earlier release (``version`` None) is checked as it was signed (``-v1``) and counts as version 0.
    """
    if version is None:
        return f"resolver-approvers-seal-v1\n{owner}\n{owner_key}\n{count}\n{entries_hash}".encode()
    return f"resolver-approvers-seal-v2\n{owner}\n{owner_key}\n{count}\n{entries_hash}\n{version}\n{changed_at}".encode()


RegistryChange = Callable[["Unlocked", dict[str, Any]], None]
"""Told of each registry change once its seal is written: the owner (unlocked) and the new seal
(``version``, ``changed_at``, ``entries_hash`` ...); :func:`core.engine.signing.record_registry_change`
appends the owner-signed audit row."""


def fingerprint(public_key_hex: str) -> str:
    """The key's fingerprint to write down: ``SHA256:`` and the first 128 bits of the SHA-256 of
    the raw 32-byte public key, in 8 groups of 4 hex digits."""
    h = hashlib.sha256(bytes.fromhex(public_key_hex)).hexdigest()[:32]
    return "SHA256:" + " ".join(h[i : i + 4] for i in range(0, 32, 4))


def public_hex(key: Ed25519PrivateKey) -> str:
    """The raw public key of ``key`` in hex (64 digits)."""
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex()


_P = 2**255 - 19
"""The field prime of Ed25519 (RFC 8032, 5.1)."""
_D = -121665 * pow(121666, _P - 2, _P) % _P
"""The curve constant ``d`` of edwards25519 (RFC 8032, 5.1)."""


@functools.lru_cache(maxsize=1024)
def weak_public_key(raw: bytes) -> str | None:
    """Why the 32 bytes ``raw`` may not be an approver's Ed25519 public key, or None when they
    may: not a point of the curve in its canonical encoding, or a point of small order (the
    identity and the other 7 points ``P`` with ``8P`` the identity).

    A small-order key lets anyone forge a signature that verifies for every message (with the
    key ``01 00 … 00``, the signature ``01 00 … 00`` followed by 32 zero bytes does, and
    OpenSSL's verify accepts it: a new user's trial approved and paid a refund under a name
    nobody held a key for). RFC 8032 verification does not refuse such keys; libsodium does.
    Decoded as RFC 8032 5.1.3 says, then doubled three times (affine twisted Edwards, ``a = -1``)."""
    if len(raw) != 32:
        return "it is not 32 bytes"
    y = int.from_bytes(raw, "little") & ((1 << 255) - 1)
    sign = raw[31] >> 7
    if y >= _P:
        return "it is not in canonical form"
    x2 = (y * y - 1) * pow(_D * y * y + 1, _P - 2, _P) % _P
    x = pow(x2, (_P + 3) // 8, _P)
    if (x * x - x2) % _P:
        x = x * pow(2, (_P - 1) // 4, _P) % _P
    if (x * x - x2) % _P:
        return "it is not a point of the curve"
    if x == 0 and sign:
        return "it is not in canonical form"
    if x & 1 != sign:
        x = _P - x
    for _ in range(3):  # 8P
        xy = x * y % _P
        t = _D * xy * xy % _P
        x, y = 2 * xy * pow(1 + t, _P - 2, _P) % _P, (y * y + x * x) * pow(1 - t, _P - 2, _P) % _P
    if (x, y) == (0, 1):
        return "it is a point of small order, for which anyone can make a signature that verifies"
    return None


def verify_hex(public_key_hex: str, signature_hex: str, message: bytes) -> bool:
    """True when ``signature_hex`` is a valid Ed25519 signature of ``message`` by the key; never
    for a key :func:`weak_public_key` refuses (a signature by it proves nothing)."""
    try:
        raw = bytes.fromhex(public_key_hex)
        if weak_public_key(raw) is not None:
            return False
        Ed25519PublicKey.from_public_bytes(raw).verify(bytes.fromhex(signature_hex), message)
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


@dataclass(frozen=True)
class KeyCost:
    """The scrypt cost of encrypting a private key: ``n`` (CPU and memory, a power of
    two), ``r`` (block size) and ``p`` (parallelism). Memory is about 128 * n * r bytes."""

    n: int
    r: int = 8
    p: int = 1


KEY_COST = KeyCost(n=2**16)
"""The cost every key is encrypted at: 64 MiB and about 0.28 s per guess on the reference 2-core
machine (``benchmarks/bench_keys.py`` measures it here), against 2,048 PBKDF2-HMAC-SHA256
iterations (about 1 ms) of the earlier key format. A guess costs the attacker the same."""

_key_cost = KEY_COST

MAX_N = 2**20
"""The largest ``n`` a stored key may name (1 GiB at r = 8): a key written with SQL cannot make
an unlock take all the machine's memory."""

KEY_FORMAT = "resolver-scrypt-v1"
"""How a key encrypted in this format starts: ``resolver-scrypt-v1$n$r$p$salt$nonce$ciphertext``
(hex): the raw 32-byte Ed25519 private key sealed with AES-256-GCM under the scrypt-derived key,
the entry's public key as associated data."""

MIN_PASSPHRASE = 12
"""The shortest passphrase accepted for a new key."""


def use_key_cost(cost: KeyCost) -> KeyCost:
    """Encrypt new keys at ``cost`` from now on in this process; returns the cost before.

    The one seam for a cheaper cost: the test suite calls it (``tests/conftest.py``) so that a
    test that makes keys stays fast. The product never calls it; an unlock always uses the cost
    stored with the key."""
    global _key_cost
    before, _key_cost = _key_cost, cost
    return before


def _scrypt(secret: str, salt: bytes, cost: KeyCost) -> bytes:
    # lazy: the key ciphers (scrypt, AES-GCM) load only when a key is made or unlocked; verifying needs Ed25519 alone
    from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

    return Scrypt(salt=salt, length=32, n=cost.n, r=cost.r, p=cost.p).derive(secret.encode("utf-8"))


def _encrypt(key: Ed25519PrivateKey, passphrase: str) -> str:
    """``key`` encrypted under ``passphrase`` in :data:`KEY_FORMAT`, at the current cost."""
    # lazy: the key ciphers (scrypt, AES-GCM) load only when a key is made or unlocked; verifying needs Ed25519 alone
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    cost = _key_cost
    salt, nonce = secrets.token_bytes(16), secrets.token_bytes(12)
    raw = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())
    sealed = AESGCM(_scrypt(passphrase, salt, cost)).encrypt(nonce, raw, public_hex(key).encode("ascii"))
    return "$".join((KEY_FORMAT, str(cost.n), str(cost.r), str(cost.p), salt.hex(), nonce.hex(), sealed.hex()))


def _decrypt(stored: str, passphrase: str, public: str) -> Ed25519PrivateKey | None:
    """The private key ``stored`` holds for the public key ``public`` (hex), or None for a wrong
    passphrase or a damaged key. Reads :data:`KEY_FORMAT` and the PKCS#8 PEM keys of earlier
    releases (PBKDF2, :func:`is_legacy`)."""
    if not stored.startswith(KEY_FORMAT + "$"):
        try:
            key = serialization.load_pem_private_key(stored.encode("ascii"), passphrase.encode("utf-8"))
        except (ValueError, TypeError):
            return None
        return key if isinstance(key, Ed25519PrivateKey) else None
    # lazy: the key ciphers (scrypt, AES-GCM) load only when a key is made or unlocked; verifying needs Ed25519 alone
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    try:
        _, n, r, p, salt, nonce, sealed = stored.split("$")
        cost = KeyCost(int(n), int(r), int(p))
        if not (2 <= cost.n <= MAX_N and 1 <= cost.r <= 32 and 1 <= cost.p <= 16):
            return None
        secret = _scrypt(passphrase, bytes.fromhex(salt), cost)
        raw = AESGCM(secret).decrypt(bytes.fromhex(nonce), bytes.fromhex(sealed), public.encode("ascii"))
        return Ed25519PrivateKey.from_private_bytes(raw)
    except (InvalidTag, ValueError, TypeError, UnicodeEncodeError, MemoryError):
        return None


def is_legacy(stored: str) -> bool:
    """True for a key encrypted in the earlier format (PKCS#8 PEM, PBKDF2 at 2,048 iterations): it is
    encrypted again in :data:`KEY_FORMAT` at its next unlock."""
    return not stored.startswith(KEY_FORMAT + "$")


def _check_passphrase(passphrase: str, who: str) -> None:
    """Refuse a passphrase for a new key: shorter than :data:`MIN_PASSPHRASE` characters, or a
    common password (``data/common_passwords.txt``), also with digits or signs added at its end,
    or one repeated; or one short piece repeated, or fewer than 5 different characters
    (:func:`_repetitive`). Raises RegistryError; nothing changes."""
    if len(passphrase) < MIN_PASSPHRASE:
        raise RegistryError(f"{who}'s passphrase is too short: use at least {MIN_PASSPHRASE} characters (a few words).")
    if _common(passphrase):
        raise RegistryError(
            f"{who}'s passphrase is one of the commonest passwords, which are guessed first: choose a few unrelated words."
        )
    if _repetitive(passphrase):
        raise RegistryError(
            f"{who}'s passphrase is one short piece repeated (or uses fewer than 5 different characters), which is "
            "guessed early: choose a few unrelated words."
        )


def _repetitive(passphrase: str) -> bool:
    """True for ``aaaaaaaaaaaa``, ``abcabcabcabc`` (a new user's finding: both were accepted):
    the whole passphrase one piece repeated, or fewer than 5 different characters."""
    low = passphrase.lower()
    if len(set(low)) < 5:
        return True
    return any(len(low) % k == 0 and low == low[:k] * (len(low) // k) for k in range(1, len(low) // 2 + 1))


def _common(passphrase: str) -> bool:
    words = _common_passwords()
    low = passphrase.strip().lower()
    stem = low.rstrip("0123456789!@#$%^&*()-_=+.,;:?~ ")
    halves = {low[: len(low) // k] for k in (2, 3, 4) if len(low) % k == 0 and low == low[: len(low) // k] * k}
    return low in words or (len(stem) >= 4 and stem in words) or bool(halves & words)


_common_cache: frozenset[str] | None = None


def _common_passwords() -> frozenset[str]:
    global _common_cache
    if _common_cache is None:
        lines = (data_dir() / "common_passwords.txt").read_text(encoding="utf-8").splitlines()
        _common_cache = frozenset(line for line in lines if line and not line.startswith("#"))
    return _common_cache


@dataclass
class Unlocked:
    """An approver whose private key is unlocked in memory (for one decision, or the app's session)."""

    name: str
    role: str
    key: Ed25519PrivateKey

    def sign(self, message: bytes) -> str:
        """The Ed25519 signature of ``message``, in hex (128 digits)."""
        return self.key.sign(message).hex()

    def __repr__(self) -> str:  # never print the key
        return f"Unlocked({self.name!r}, {self.role!r})"


@dataclass
class InitResult:
    """What ``approvers init`` made: the owner's name, key fingerprint and one-time recovery code."""

    owner: str
    fingerprint: str
    recovery_code: str


class Registry:
    """The approvers registry of the home folder ``root`` (see the module's docstring).

    Opening it creates nothing; :meth:`init` makes it. Reading a registry that does not exist
    gives no entries (:meth:`exists` is False).
    """

    def __init__(self, root: Path | str, store: str | None = None) -> None:
        """``store``: the team store's PostgreSQL URL holding the rows and the owner's seal,
        or None for ``approvers.sqlite`` and ``approvers.json`` in ``root``.
        Raises ResolverError when the team store cannot be reached."""
        self.root = Path(root)
        self.path = self.root / REGISTRY_DB
        self.seal_path = self.root / SEAL_FILE

        self._rows = open_registry_rows(store if store is not None else self.root)
        self.parts = open_shop_parts(self.root, store)
        """Where the seal is (:class:`core.contract.store.ShopParts`): the folder's files or the team store's rows."""
        self.team = store is not None and is_team_store(store)
        """True when the rows are a team store's: new keys are then written to :attr:`keys` only."""
        self.keys = KeyFiles(self.root)
        """This machine's key files (:class:`core.engine.keyfiles.KeyFiles`, ``keys/`` in the home folder)."""

        self.shown = f"the team store {mask_url(store)}" if self.team and store else str(self.root)
        """Where the registry is, as sentences name it: the home folder, or ``the team store URL``
        with its password masked as ``doctor`` prints it (a new user's trial: ``approvers init``
        on a team store named the folder)."""

    def exists(self) -> bool:
        """True once ``approvers init`` made the registry (its seal exists; something in its
        place that cannot be read counts, and :meth:`seal` says what). Raises ResolverError
        when the team store cannot be reached."""
        try:
            return self.parts.read(SEAL_FILE) is not None
        except OSError:
            return True

    # -- reads ----------------------------------------------------------------------------------

    def entries(self) -> list[Entry]:
        """Every entry as stored (unchecked), oldest first."""
        return [Entry(*r) for r in self._rows.rows()]

    def seal(self) -> dict:
        """``approvers.json`` as a dict. Raises RegistryError when absent or unreadable."""
        try:
            data = self.parts.read(SEAL_FILE)
            if data is None:
                raise FileNotFoundError(SEAL_FILE)
            raw = json.loads(data.decode("utf-8"))
            if not isinstance(raw, dict) or not all(
                isinstance(raw.get(k), str) for k in ("owner", "owner_key", "signature", "entries_hash")
            ):
                raise ValueError("fields missing")
            if not isinstance(raw.get("count"), int) or isinstance(raw.get("count"), bool):
                raise ValueError("its count is not a whole number")
            if "version" in raw and (
                not isinstance(raw["version"], int)
                or isinstance(raw["version"], bool)
                or not isinstance(raw.get("changed_at"), str)
            ):
                raise ValueError("its version is not a whole number with a time")
            return raw
        except FileNotFoundError:
            raise RegistryError(
                f"{self.shown[:1].upper()}{self.shown[1:]} has no approvers registry yet: the owner makes it with `resolver approvers init`."
            ) from None
        except (OSError, ValueError) as exc:
            raise RegistryError(
                f"The approvers seal {self.parts.label(SEAL_FILE)} cannot be read ({exc}); restore it from a backup."
            ) from None

    def version(self) -> int:
        """The registry's version from the seal: 0 for a seal of a release that did not version the registry.
        Raises RegistryError."""
        return int(self.seal().get("version", 0))

    def owner_key(self) -> str:
        """The owner's public key (hex) from the seal. Raises RegistryError."""
        return str(self.seal()["owner_key"])

    def problems(self) -> list[str]:
        """Why the registry cannot be trusted, one sentence each (empty when it holds): the seal's
        signature, the entries against the seal, and each entry's owner signature."""
        seal = self.seal()
        owner, owner_key = seal["owner"], seal["owner_key"]
        out: list[str] = []
        entries = self.entries()
        for e in entries:
            if not verify_hex(owner_key, e.signature, entry_message(e.name, e.role, e.public_key, e.added_at, e.revoked_at)):
                out.append(f"the entry of {e.name} is not signed by the owner's key (edited with SQL?)")
        if not verify_hex(
            owner_key,
            seal["signature"],
            seal_message(owner, owner_key, seal["count"], seal["entries_hash"], seal.get("version"), seal.get("changed_at", "")),
        ):
            out.append(f"the seal {SEAL_FILE} is not signed by the owner's key")
        if len(entries) != seal.get("count") or _entries_hash(entries) != seal.get("entries_hash"):
            out.append(
                "the approvers table is not the one the owner sealed: an entry was edited, added, deleted or restored with SQL"
            )
        if not any(e.name == owner and e.public_key == owner_key and e.role == OWNER_ROLE for e in entries):
            out.append(f"the owner {owner} has no entry with the sealed key")
        if self.team:
            try:
                pinned = self.keys.pinned_owner()
            except KeyFileError as exc:
                out.insert(0, str(exc).rstrip("."))
            else:
                if pinned is not None and pinned != owner_key:
                    out.insert(
                        0,
                        f"the store's owner key {fingerprint(owner_key)} is not the one this machine trusted first, "
                        f"{fingerprint(pinned)} (kept in {self.keys.pin_path}): someone may have replaced the registry "
                        "and its owner key; compare both with the fingerprint written down at `approvers init`, and "
                        "delete the pin only if the owner really made a new registry",
                    )
        return out

    def _pin_first_sight(self) -> None:
        """On a team store, keep the owner key of a registry that verifies as the one this
        machine trusts from now on, if it keeps none yet (:meth:`core.engine.keyfiles.KeyFiles.pin_owner`).
        Best effort: a folder that cannot be written pins nothing now."""
        if not self.team:
            return
        try:
            if self.keys.pinned_owner() is None:
                seal = self.seal()
                self.keys.pin_owner(seal["owner_key"], seal["owner"])
        except ResolverError:
            pass

    def valid_entry(self, name: str) -> Entry:
        """The entry of ``name`` if the registry holds, the entry is the owner's and not revoked.

        Raises:
            ApprovalRefused: no registry, a registry that does not verify, an unknown or
                revoked approver (one sentence naming what is wrong).
        """
        try:
            problems = self.problems()
        except RegistryError as exc:
            raise ApprovalRefused(str(exc)) from None
        if problems:
            raise ApprovalRefused(f"The approvers registry does not verify: {problems[0]}; nothing is decided or executed.")
        self._pin_first_sight()
        entries = self.entries()
        entry = next((e for e in entries if name_key(e.name) == name_key(name)), None)
        if entry is None:
            raise ApprovalRefused(
                f"{one_line(name)} is not an approver of this shop home{nearest(name, [e.name for e in entries])}; "
                "the owner adds one with `resolver approvers add NAME --role ROLE`."
            )
        if entry.revoked:
            raise ApprovalRefused(f"{entry.name} was revoked at {entry.revoked_at} and can no longer decide.")
        return entry

    def unlock(self, name: str, passphrase: str) -> Unlocked:
        """Unlock ``name``'s private key with their passphrase: the key file on this machine
        (:class:`core.engine.keyfiles.KeyFiles`), or the row's key of a SQLite home or of a team store
        written before keys moved to the machines (which this unlock moves to this machine's
        file, :meth:`_settle`).

        Raises:
            ApprovalRefused: the registry does not verify, ``name`` is unknown or revoked, this
                machine holds no key for ``name`` (the sentence says where it looked and how to
                make or copy it), its key file is for another public key or damaged, or the
                passphrase is wrong (the same sentence for every wrong passphrase).
        """
        entry = self.valid_entry(name)
        try:
            stored, in_row = self._stored_key(entry)
        except KeyFileError as exc:
            raise ApprovalRefused(str(exc)) from None
        key = _decrypt(stored.private_key, passphrase or "", entry.public_key)
        if key is None or public_hex(key) != entry.public_key:
            raise ApprovalRefused(f"Wrong passphrase for {entry.name}: nothing was decided.")
        self._settle(entry, stored, in_row, key, passphrase)
        return Unlocked(entry.name, entry.role, key)

    def key_problem(self, name: str) -> str | None:
        """Why ``name`` cannot be unlocked on this machine whatever the passphrase (no key here,
        a key file for another key, a damaged file), one sentence, or None: asked before a
        passphrase is (the CLI's approve and reject). Never raises for a registry problem:
        :meth:`valid_entry` says those."""
        entry = next((e for e in self.entries() if name_key(e.name) == name_key(name)), None)
        if entry is None or entry.revoked:
            return None
        try:
            self._stored_key(entry)
        except ResolverError as exc:
            return str(exc)
        return None

    def _stored_key(self, entry: Entry) -> tuple[KeyFile, bool]:
        """``entry``'s encrypted key and whether it came from the row (else this machine's key
        file): the file wins when there is one; the row's key is read when it still holds one
        (a SQLite home, or a team store written before the keys moved to each approver's key file).

        Raises:
            ApprovalRefused: no key anywhere for ``entry`` on this machine, or a key file for
                another public key (one sentence each).
            KeyFileError: the key file is damaged or belongs to another name.
        """
        local = self.keys.read(entry.name)
        if local is not None:
            if local.public_key != entry.public_key:
                raise ApprovalRefused(
                    f"The key file {self.keys.path(entry.name)} on this machine holds the key {fingerprint(local.public_key)}, "
                    f"but the registry's entry for {entry.name} has the key {fingerprint(entry.public_key)}: the owner added "
                    "another public key; nothing was decided."
                )
            return local, False
        if entry.private_key:
            return KeyFile(entry.name, entry.public_key, entry.private_key, entry.recovery_key), True
        raise ApprovalRefused(
            f"This machine holds no key for {entry.name} (looked for {self.keys.path(entry.name)}): decide on the machine "
            f"where `resolver approvers key --name {one_line(entry.name)}` made it, or copy that file here (mode 0600); "
            "nothing was decided."
        )

    def _settle(self, entry: Entry, stored: KeyFile, in_row: bool, key: Ed25519PrivateKey, passphrase: str) -> None:
        """After ``key`` was unlocked with ``passphrase``: encrypt a key of an earlier release
        (:func:`is_legacy`) again in :data:`KEY_FORMAT`, and on a team store move a
        key still in its row to this machine's key file: the file is written and
        fsynced first, then the row's key columns are emptied in one change, only while they
        still hold what was read. Best effort: a file or row that cannot be written now keeps
        the key where it is, and the unlock goes on."""
        private = _encrypt(key, passphrase) if is_legacy(stored.private_key) else stored.private_key
        if in_row and self.team:
            try:
                self.keys.write(KeyFile(entry.name, entry.public_key, private, stored.recovery_key))
                with self._rows.change() as tx:
                    now = next((r for r in tx.rows() if r[0] == entry.name), None)
                    if now is not None and now[6] == stored.private_key:
                        tx.set_keys(entry.name, "", None)
            except ResolverError:
                pass
            return
        if private == stored.private_key:
            return
        try:
            if in_row:
                with self._rows.change() as tx:
                    tx.replace_key(entry.name, stored.private_key, private)
            else:
                self.keys.write(KeyFile(entry.name, entry.public_key, private, stored.recovery_key))
        except ResolverError:
            pass

    def keys_in_rows(self) -> int:
        """How many entries still hold an encrypted key in their row: on a team store, the
        keys not yet moved to their approvers' machines (each moves at its first unlock there);
        for ``resolver doctor`` and ``resolver store migrate``."""
        return sum(1 for e in self.entries() if e.private_key or e.recovery_key)

    def make_key(self, name: str, passphrase: str) -> tuple[KeyFile, Path]:
        """The new approver's step on their own machine: a new Ed25519 key pair,
        the private key encrypted with ``passphrase`` into this machine's key file; returns the
        file's contents and path. The owner then adds its public key (``approvers add NAME
        --role ROLE --public-key HEX``), without this passphrase.

        Raises:
            RegistryError: a bad name, ``name`` already in the registry, this machine already
                holding a key file for ``name``, the passphrase refused (:func:`_check_passphrase`),
                or the file cannot be written. Nothing is written then.
        """
        name = _clean_name(name)
        present = next((e for e in self.entries() if name_key(e.name) == name_key(name)), None)
        if present is not None:
            raise RegistryError(
                f"{present.name} is already in the registry; revoked names are not reused, so choose another name."
            )
        held = self.keys.read(name)
        if held is not None:
            raise RegistryError(
                f"This machine already holds a key for {held.name} ({self.keys.path(name)}, public key {held.public_key}); "
                "the owner adds it with `resolver approvers add NAME --role ROLE --public-key HEX`, or move the file away "
                "to make another."
            )
        _check_passphrase(passphrase, name)
        key = Ed25519PrivateKey.generate()
        made = KeyFile(name, public_hex(key), _encrypt(key, passphrase))
        return made, self.keys.write(made)

    def fingerprint(self) -> str:
        """The owner key's fingerprint from the seal. Raises RegistryError."""
        return fingerprint(self.owner_key())

    # -- writes (the owner signs) ---------------------------------------------------------------

    def _owner(self, passphrase: str) -> Unlocked:
        seal = self.seal()
        entry = next((e for e in self.entries() if e.name == seal["owner"]), None)
        if entry is None:
            raise RegistryError(f"The owner {seal['owner']} has no entry; nothing changed.")
        try:
            stored, in_row = self._stored_key(entry)
        except ResolverError as exc:
            raise RegistryError(str(exc).replace("nothing was decided", "nothing changed")) from None
        key = _decrypt(stored.private_key, passphrase or "", seal["owner_key"])
        if key is None or public_hex(key) != seal["owner_key"]:
            raise RegistryError(f"Wrong passphrase for the owner {seal['owner']}: nothing changed.")
        self._settle(entry, stored, in_row, key, passphrase)
        return Unlocked(seal["owner"], OWNER_ROLE, key)

    def _refuse_held(self, name: str) -> None:
        """Refuse to make a key on the spot for ``name`` when this machine holds a key file for
        that name already (it would be replaced). Raises RegistryError."""
        held = self.keys.read(name)
        if held is not None:
            raise RegistryError(
                f"This machine already holds a key file for {held.name} ({self.keys.path(name)}); add that key with "
                f"`resolver approvers add {one_line(held.name)} --role ROLE --public-key {held.public_key}`, or move the "
                "file away."
            )

    def _write_seal(self, tx: ApproverChange, owner: Unlocked, now: datetime, first: bool = False) -> dict[str, Any]:
        """Write ``approvers.json`` (:attr:`parts`: on a team store in the change's own
        transaction) for the rows as the change ``tx`` sees them, one version on from the current
        seal (1 when ``first``), changed at ``now``; returns the seal written."""
        entries = [Entry(*r) for r in tx.rows()]
        owner_key = public_hex(owner.key)
        count, h = len(entries), _entries_hash(entries)
        version = 1 if first else self.version() + 1
        at = iso(now)
        body: dict[str, Any] = {
            "owner": owner.name,
            "owner_key": owner_key,
            "count": count,
            "entries_hash": h,
            "version": version,
            "changed_at": at,
            "signature": owner.sign(seal_message(owner.name, owner_key, count, h, version, at)),
        }
        self.parts.write(SEAL_FILE, (json.dumps(body, indent=1) + "\n").encode("utf-8"))
        return body

    def init(self, owner_name: str, passphrase: str, now: datetime, record: RegistryChange | None = None) -> InitResult:
        """Make the registry with the owner (role ``grace``): a key pair encrypted with
        ``passphrase``, a second copy encrypted with a one-time recovery code.

        Raises:
            RegistryError: the registry exists already, or the passphrase is refused (:func:`_check_passphrase`).
        """
        if self.exists() or any(True for _ in self.entries()):
            raise RegistryError(
                f"{self.shown[:1].upper()}{self.shown[1:]} already has an approvers registry (owner key {self._fp_or_damaged()})."
            )
        owner_name = _clean_name(owner_name)
        _check_passphrase(passphrase, owner_name)
        key = Ed25519PrivateKey.generate()
        code = "-".join(secrets.token_hex(2).upper() for _ in range(6))
        pub, at = public_hex(key), iso(now)
        owner = Unlocked(owner_name, OWNER_ROLE, key)
        sig = owner.sign(entry_message(owner_name, OWNER_ROLE, pub, at, None))
        private, recovery = _encrypt(key, passphrase), _encrypt(key, code)  # before the write lock: each costs a guess
        in_row = self._made_key(KeyFile(owner_name, pub, private, recovery))
        try:
            with self._rows.change() as tx:
                tx.insert((owner_name, OWNER_ROLE, pub, at, None, sig, *in_row))
                seal = self._write_seal(tx, owner, now, first=True)
        except BaseException:
            self._unmake_key(owner_name, in_row)
            raise
        self._pin_first_sight()
        if record is not None:
            record(owner, seal)
        return InitResult(owner_name, fingerprint(pub), code)

    def _made_key(self, made: KeyFile) -> tuple[str, str | None]:
        """Keep a key made on the spot (``init``, ``add`` without ``--public-key``): on a team
        store in this machine's key file (written and fsynced before the row), returning the
        row's empty key columns; in a SQLite home the row's ``(private_key, recovery_key)``.
        Refused in both when this machine already holds a key file for the name (an unlock
        reads the file first). Raises RegistryError (a key file already there, or one that
        cannot be written)."""
        self._refuse_held(made.name)  # in a SQLite home too: an unlock reads the file first
        if not self.team:
            return made.private_key, made.recovery_key
        self.keys.write(made)
        return "", None

    def _unmake_key(self, name: str, in_row: tuple[str, str | None]) -> None:
        """Delete the key file :meth:`_made_key` wrote when its entry was not written."""
        if not in_row[0]:
            with suppress(KeyFileError):
                self.keys.remove(name)

    def add(
        self,
        name: str,
        role: str,
        passphrase: str,
        owner_passphrase: str,
        now: datetime,
        record: RegistryChange | None = None,
        public_key: str | None = None,
    ) -> Entry:
        """Add ``name`` with ``role``, the entry signed with the owner's key (unlocked by
        ``owner_passphrase``). With ``public_key`` (64 hex digits, made on the approver's own
        machine by :meth:`make_key`) the entry takes that key and ``passphrase`` is not used;
        without it a new key pair is made here, encrypted with ``passphrase``: in a SQLite home
        into the row, on a team store into this machine's key file (:meth:`_made_key`), which the
        approver then copies to their machine.

        Raises:
            RegistryError: no registry, an unknown role, a name already present, a malformed
                public key or one another entry has, a refused passphrase, a key file already
                on this machine for ``name``, or the owner's passphrase is wrong. Nothing changes.
        """
        name = _clean_name(name)
        if role not in ROLES:
            raise RegistryError(f"Unknown role {role!r}: an approver is one of {', '.join(ROLES)}.")
        if public_key is not None:
            public_key = check_public_key(public_key)
        self._require_whole()
        entries = self.entries()
        if any(name_key(e.name) == name_key(name) for e in entries):
            raise RegistryError(f"{name} is already in the registry; revoked names are not reused.")
        taken = next((e for e in entries if public_key is not None and e.public_key == public_key), None)
        if taken is not None:
            raise RegistryError(f"The public key {fingerprint(taken.public_key)} is {taken.name}'s already; nothing changed.")
        made: KeyFile | None = None
        if public_key is None:
            _check_passphrase(passphrase, name)
            self._refuse_held(name)
        owner = self._owner(owner_passphrase)
        if public_key is None:
            key = Ed25519PrivateKey.generate()
            made = KeyFile(name, public_hex(key), _encrypt(key, passphrase))  # before the write lock: it costs a guess
            public_key = made.public_key
        at = iso(now)
        sig = owner.sign(entry_message(name, role, public_key, at, None))
        in_row = self._made_key(made) if made is not None else ("", None)
        try:
            with self._rows.change() as tx:
                tx.insert((name, role, public_key, at, None, sig, *in_row))
                seal = self._write_seal(tx, owner, now)
        except BaseException:
            if made is not None:
                self._unmake_key(name, in_row)
            raise
        if record is not None:
            record(owner, seal)
        return Entry(name, role, public_key, at, None, sig, "")

    def revoke(self, name: str, owner_passphrase: str, now: datetime, record: RegistryChange | None = None) -> Entry:
        """Revoke ``name`` (from now on none of their decisions executes); signed by the owner.

        Raises:
            RegistryError: no registry, an unknown name, the owner themself, or a wrong
                owner passphrase. Nothing changes.
        """
        self._require_whole()
        entries = self.entries()
        entry = next((e for e in entries if name_key(e.name) == name_key(name)), None)
        if entry is None:
            raise RegistryError(
                f"{one_line(name)} is not in the registry{nearest(name, [e.name for e in entries])}; "
                "`resolver approvers list` shows who is."
            )
        if entry.name == self.seal()["owner"]:
            raise RegistryError("The owner cannot be revoked; make a new shop home to change owner.")
        if entry.revoked:
            return entry
        owner = self._owner(owner_passphrase)
        at = iso(now)
        sig = owner.sign(entry_message(entry.name, entry.role, entry.public_key, entry.added_at, at))
        with self._rows.change() as tx:
            tx.set_revoked(entry.name, at, sig)
            seal = self._write_seal(tx, owner, now)
        if record is not None:
            record(owner, seal)
        return Entry(entry.name, entry.role, entry.public_key, entry.added_at, at, sig, "")

    def recover(self, code: str, new_passphrase: str, now: datetime | None = None, record: RegistryChange | None = None) -> str:
        """Give the owner a new passphrase with the one-time recovery code; returns the next
        recovery code (the used one no longer works).

        Raises:
            RegistryError: no registry, a wrong code, or a short passphrase.
        """
        self._require_whole()
        seal = self.seal()
        entry = next(e for e in self.entries() if e.name == seal["owner"])
        try:
            stored, in_row = self._stored_key(entry)
        except ResolverError as exc:
            raise RegistryError(str(exc).replace("nothing was decided", "nothing changed")) from None
        key = _decrypt(stored.recovery_key or "", code.strip().upper(), seal["owner_key"])
        if key is None or public_hex(key) != seal["owner_key"]:
            raise RegistryError("Wrong recovery code: nothing changed.")
        _check_passphrase(new_passphrase, entry.name)
        new_code = "-".join(secrets.token_hex(2).upper() for _ in range(6))
        private, recovery = _encrypt(key, new_passphrase), _encrypt(key, new_code)  # before the write lock: each costs a guess
        to_file = self.team or not in_row
        if to_file:  # written and fsynced before the row's copy is emptied
            self.keys.write(KeyFile(entry.name, entry.public_key, private, recovery))
        with self._rows.change() as tx:
            if to_file:
                if entry.private_key or entry.recovery_key:
                    tx.set_keys(entry.name, "", None)
            else:
                tx.set_keys(entry.name, private, recovery)
            owner = Unlocked(entry.name, OWNER_ROLE, key)
            seal = self._write_seal(
                tx, owner, now or datetime.now().astimezone()
            )  # a new version: the old passphrase's copy is older
        if record is not None:
            record(owner, seal)
        return new_code

    def _require_whole(self) -> None:
        problems = self.problems()
        if problems:
            raise RegistryError(f"The approvers registry does not verify ({problems[0]}); nothing changed.")
        self._pin_first_sight()

    def _fp_or_damaged(self) -> str:
        try:
            return self.fingerprint()
        except RegistryError:
            return "unreadable"


def _entries_hash(entries: list[Entry]) -> str:
    """SHA-256 over the signed public part of every entry, in name order."""
    parts = sorted(
        entry_message(e.name, e.role, e.public_key, e.added_at, e.revoked_at).decode() + "\n" + e.signature for e in entries
    )
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


def nearest(name: str, names: list[str]) -> str:
    """The registered names nearest ``name`` as a suggestion (``: did you mean Tomás?``), or ''
    when none is near (``Tomas`` for the registered ``Tomás``). Compared by
    :func:`core.ground.safetext.name_key`; at most three, by :func:`difflib.get_close_matches` (cutoff
    0.6)."""
    keys = {name_key(n): n for n in names}
    near = difflib.get_close_matches(name_key(name), list(keys), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(one_line(keys[k]) for k in near)}?)" if near else ""


def check_public_key(text: str) -> str:
    """``text`` as a public key for ``approvers add --public-key``: 64 hex digits (spaces and a
    ``0x`` prefix dropped, lower-cased) that are an Ed25519 public key. Raises RegistryError
    with one sentence."""
    hexed = "".join((text or "").split()).lower().removeprefix("0x")
    try:
        if len(hexed) != 64:
            raise ValueError
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(hexed))
    except ValueError:
        raise RegistryError(
            "A public key is the 64 hex digits `resolver approvers key --name NAME` printed on the approver's machine; "
            f"{one_line(text)[:80]!r} is not one."
        ) from None
    weak = weak_public_key(bytes.fromhex(hexed))
    if weak is not None:
        raise RegistryError(
            f"The public key {hexed[:16]}… is refused: {weak}. Make the approver's key with "
            "`resolver approvers key --name NAME` on their machine; nothing changed."
        )
    return hexed


def check_fingerprint(given: str, public_key_hex: str) -> None:
    """Refuse ``public_key_hex`` when its :func:`fingerprint` is not ``given`` (what
    ``approvers key`` printed on the approver's machine, passed as ``add --fingerprint``): an
    owner's typo in ``--public-key`` would otherwise take the name for good, since revoked names
    are not reused. ``given`` is compared without its ``SHA256:``
    prefix, spaces or case, so ``SHA256:5eb0 2d8b ...`` and ``5eb02d8b...`` are the same.

    Raises:
        RegistryError: one sentence naming both fingerprints; nothing was written.
    """
    said = fingerprint(public_key_hex)
    wanted = "".join((given or "").split()).lower().removeprefix("sha256:")
    if wanted != "".join(said.split()).lower().removeprefix("sha256:"):
        raise RegistryError(
            f"The public key's fingerprint is {said}, not the {one_line(given)[:60]!r} given with --fingerprint: "
            "check the key against what `resolver approvers key` printed on the approver's machine; nothing was written."
        )


def _clean_name(name: str) -> str:
    name = unicodedata.normalize("NFC", name or "").strip()
    if not name or len(name) > 60 or not all(ch.isalnum() or ch in " .-_'" for ch in name):
        raise RegistryError("An approver's name is 1 to 60 letters, digits, spaces, dots, dashes or apostrophes.")
    return name
