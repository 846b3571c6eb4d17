"""Each approver's encrypted private key as a file on that approver's machine.

On a team store every machine reads one registry (names, roles, public keys, the owner's
signatures), but what unlocks a decision stays per person: the approver's Ed25519 private key,
encrypted under their passphrase (:data:`core.engine.approvers.KEY_FORMAT`, scrypt and AES-256-GCM),
is a file in the home folder of the machine they decide on, so no database reader can try
passphrases offline. The owner's file holds the recovery copy too (the key encrypted under the
one-time recovery code).

Layout, in the machine's home folder (the folder ``--home`` or the config file picks):

- ``keys/`` (mode 0700), one file per approver, ``keys/<id>.key`` (mode 0600), where ``<id>`` is
  the first 24 hex digits of the SHA-256 of :func:`core.ground.safetext.name_key` of the name: any name
  (``Tomás``, ``O'Neil``) maps to a safe file name, and ``TOMÁS`` to the same file as ``Tomás``.
- each file is JSON: ``format`` (:data:`FORMAT`), ``name``, ``public_key`` (32 bytes in hex, the
  registry entry's), ``private_key`` (the encrypted key), ``recovery_key`` (the owner's only, or
  null).

The pin (``keys/owner.pin``, JSON: ``format``, ``owner``, ``owner_key``): the owner key of the team
store the first time this machine trusted it (its first decision or signing there, or the
owner's ``approvers init``). From then on a registry whose seal names another owner key is
refused on this machine with both fingerprints: someone who rewrote every table of the store,
registry and owner key together, no longer passes unnoticed.

A file is written atomically (a temporary file in ``keys/``, fsynced, renamed over the old one,
then the folder fsynced): a crash leaves the old file or the new one, never half of one. This
module only stores; what a key means (which entry it belongs to, its passphrase) is
:class:`core.engine.approvers.Registry`'s.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from core.ground.errors import ResolverError
from core.ground.safetext import name_key, one_line

KEYS_DIR = "keys"
"""The folder of the key files, inside the machine's home folder."""

FORMAT = "resolver-key-file-v1"
"""The ``format`` field of a key file written by this release."""

PIN_FILE = "owner.pin"
"""The file in ``keys/`` pinning the team store's owner key this machine first saw."""

PIN_FORMAT = "resolver-owner-pin-v1"
"""The ``format`` field of the pin."""

MAX_BYTES = 64 * 1024
"""The largest key file read (a real one is about 400 bytes): a damaged or planted file cannot
make a read take the machine's memory."""


class KeyFileError(ResolverError):
    """A key file that cannot be read or written (one sentence naming the file)."""


@dataclass(frozen=True)
class KeyFile:
    """One approver's key as stored on this machine: ``public_key`` 64 hex digits,
    ``private_key`` the encrypted key (:data:`core.engine.approvers.KEY_FORMAT`, or a PKCS#8 PEM of a
    release before the scrypt key format), ``recovery_key`` the owner's recovery copy or None."""

    name: str
    public_key: str
    private_key: str
    recovery_key: str | None = None


def key_id(name: str) -> str:
    """The file stem of ``name``'s key: 24 hex digits of the SHA-256 of its :func:`name_key`."""
    return hashlib.sha256(name_key(name).encode("utf-8")).hexdigest()[:24]


class KeyFiles:
    """The key files of the home folder ``home`` (``home/keys/*.key``). Opening creates nothing."""

    def __init__(self, home: Path | str) -> None:
        self.dir = Path(home) / KEYS_DIR

    def path(self, name: str) -> Path:
        """Where ``name``'s key file is (whether or not it exists)."""
        return self.dir / f"{key_id(name)}.key"

    def read(self, name: str) -> KeyFile | None:
        """``name``'s key file, or None when this machine has none.

        Raises:
            KeyFileError: the file exists but cannot be read, is not a key file, or belongs to
                another name (one sentence naming the file).
        """
        path = self.path(name)
        try:
            key = _load(path)
        except FileNotFoundError:
            return None
        if name_key(key.name) != name_key(name):
            raise KeyFileError(f"The key file {path} belongs to {one_line(key.name)}, not {one_line(name)}; move it away.")
        return key

    def write(self, key: KeyFile) -> Path:
        """Write ``key`` as its name's file, replacing any earlier one, atomically and durably
        (fsynced before this returns); makes ``keys/`` (0700) when needed. Returns the path.

        Raises:
            KeyFileError: the folder or file cannot be written (one sentence).
        """
        path = self.path(key.name)
        body = {
            "format": FORMAT,
            "name": key.name,
            "public_key": key.public_key,
            "private_key": key.private_key,
            "recovery_key": key.recovery_key,
        }
        data = (json.dumps(body, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
        return self._write_atomic(path, data)

    def _write_atomic(self, path: Path, data: bytes) -> Path:
        """Write ``data`` as ``path`` in :attr:`dir`: a temporary file (0600) fsynced, renamed over
        ``path``, the folder fsynced. Raises KeyFileError."""
        tmp = None
        try:
            self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.dir.chmod(0o700)
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-", suffix=".key")
            with os.fdopen(fd, "wb") as out:
                os.fchmod(out.fileno(), 0o600)
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
            tmp = None
            _fsync_dir(self.dir)
        except OSError as exc:
            raise KeyFileError(f"Cannot write {path}: {exc.strerror or exc}; nothing was changed.") from None
        finally:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
        return path

    def remove(self, name: str) -> None:
        """Delete ``name``'s key file if there is one (a key made for an entry that was not
        written). Raises KeyFileError."""
        try:
            self.path(name).unlink(missing_ok=True)
        except OSError as exc:
            raise KeyFileError(f"Cannot delete the key file {self.path(name)}: {exc.strerror or exc}.") from None

    @property
    def pin_path(self) -> Path:
        """Where this machine keeps the team store's owner key it first saw (``keys/owner.pin``)."""
        return self.dir / PIN_FILE

    def pinned_owner(self) -> str | None:
        """The owner's public key (64 hex digits) this machine pinned, or None when none yet.
        Raises KeyFileError (one sentence) for a pin that cannot be read or is damaged."""
        try:
            with self.pin_path.open("rb") as f:
                data = f.read(MAX_BYTES + 1)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise KeyFileError(f"Cannot read the owner key pin {self.pin_path}: {exc.strerror or exc}.") from None
        try:
            raw = json.loads(data.decode("utf-8"))
            key = raw["owner_key"] if isinstance(raw, dict) and raw.get("format") == PIN_FORMAT else None
            if not isinstance(key, str) or len(key) != 64:
                raise ValueError("no owner key")
            bytes.fromhex(key)
        except (ValueError, UnicodeDecodeError, KeyError) as exc:
            raise KeyFileError(
                f"The owner key pin {self.pin_path} is damaged ({exc}); compare the owner key's fingerprint with the one "
                "written down at `approvers init`, then delete the pin (the next decision pins the store's owner key)."
            ) from None
        return key

    def pin_owner(self, owner_key: str, owner: str) -> Path:
        """Keep ``owner_key`` (hex) as the owner key this machine trusts from now on, with the
        owner's name, atomically (as :meth:`write`). Returns the path. Raises KeyFileError."""
        body = {"format": PIN_FORMAT, "owner": owner, "owner_key": owner_key}
        return self._write_atomic(self.pin_path, (json.dumps(body, ensure_ascii=False) + "\n").encode("utf-8"))

    def listing(self) -> list[tuple[Path, KeyFile | None, str]]:
        """Every ``*.key`` file of this machine, by file name: ``(path, key or None, problem)``;
        the problem is '' for a readable file whose name matches its file, else one sentence.
        For ``resolver doctor``. Never raises."""
        out: list[tuple[Path, KeyFile | None, str]] = []
        try:
            paths = sorted(self.dir.glob("*.key"))
        except OSError:
            return out
        for path in paths:
            try:
                key = _load(path)
            except (KeyFileError, OSError) as exc:
                out.append((path, None, str(exc)))
                continue
            problem = "" if path.name == f"{key_id(key.name)}.key" else f"{path.name} is not the file name of {key.name}"
            mode = stat.S_IMODE(path.stat().st_mode)
            if not problem and mode & 0o077:
                problem = f"mode {mode:o}: others may read it (chmod 600 {path})"
            out.append((path, key, problem))
        return out


def _load(path: Path) -> KeyFile:
    """Read one key file. Raises FileNotFoundError, or KeyFileError (one sentence)."""
    try:
        with path.open("rb") as f:
            data = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise KeyFileError(f"Cannot read the key file {path}: {exc.strerror or exc}.") from None
    try:
        if len(data) > MAX_BYTES:
            raise ValueError("too large")
        raw = json.loads(data.decode("utf-8"))
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise ValueError("not a resolver key file")
        fields = [raw.get(k) for k in ("name", "public_key", "private_key")]
        if not all(isinstance(v, str) and v for v in fields):
            raise ValueError("fields missing")
        recovery = raw.get("recovery_key")
        if recovery is not None and not isinstance(recovery, str):
            raise ValueError("its recovery key is not text")
        bytes.fromhex(raw["public_key"])
        if len(raw["public_key"]) != 64:
            raise ValueError("its public key is not 32 bytes")
    except (ValueError, UnicodeDecodeError) as exc:
        raise KeyFileError(
            f"The key file {path} is damaged ({exc}); copy it again from where the key was made, or from a backup."
        ) from None
    return KeyFile(raw["name"], raw["public_key"], raw["private_key"], recovery)


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (POSIX); nothing where a folder cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
