"""Who is at the keyboard: the approver's config file in the user's config directory.

The file is TOML, read with :mod:`tomllib` and edited with tomlkit (which keeps the rest of the
file as it was)::

    name = "Tomás"
    role = "team_lead"   # practice homes only; a shop home takes roles from its approvers registry

It is the one config file of resolver, :func:`core.ground.homepath.config_path`:
``<user config dir>/resolver/config.toml`` (platformdirs), or the file ``$RESOLVER_CONFIG``
names (tests point it at a temporary folder, so they never touch the real user's config). The
same file may name the approver's home (``home = "..."``, read by :mod:`core.ground.homepath`) and hold
anything else; saving keeps all of it. There is no default role: with no file the app asks once (:func:`ask_and_save`) and
writes it.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.engine.policy import ROLE_LABELS
from core.ground.data import ROLES
from core.ground.errors import ResolverError
from core.ground.homepath import CONFIG_ENV, config_path
from core.ground.safetext import nfc, safe_text

__all__ = [
    "CONFIG_ENV",
    "KEY_IDLE_MINUTES",
    "ROLE_PROMPT",
    "ApproverConfig",
    "ask_and_save",
    "config_path",
    "key_idle_seconds",
    "load",
    "resolve",
    "role_of_answer",
    "save",
]

KEY_IDLE_MINUTES = 5
"""How long the app keeps a shop-home approver's key unlocked without a decision,
unless the config file says ``key_idle_minutes = N``."""


@dataclass(frozen=True)
class ApproverConfig:
    """The approver's name and (practice homes) role, as read from the file."""

    name: str
    role: str | None


def load(path: Path | None = None) -> ApproverConfig | None:
    """The config at ``path`` (default :func:`config_path`), or None when nobody is named yet:
    no file, or a file without a ``name`` key (one that holds only ``home``, say). The app then
    asks once and :func:`save` adds the name to the same file.

    Raises:
        ResolverError: the file is not TOML, its name is not text, or it names a role the
            policy does not know.
    """
    path = path or config_path()
    if not path.exists():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ResolverError(f"Cannot read {path}: {exc}. Fix the file or delete it to be asked again.") from None
    if "name" not in data:
        return None
    name = data["name"].strip() if isinstance(data["name"], str) else ""
    role = data.get("role")
    if not name:
        raise ResolverError(f'{path} has no name = "..." text. Write one, or remove the name line to be asked again.')
    if role is not None and role not in ROLES:
        raise ResolverError(f"{path} says role = {role!r}; use one of {', '.join(ROLES)}.")
    return ApproverConfig(name, role)


def key_idle_seconds(path: Path | None = None) -> float:
    """``key_idle_minutes`` of the config file at ``path`` (default :func:`config_path`) in
    seconds: after that long without a decision the app forgets an unlocked key and asks the
    passphrase again. :data:`KEY_IDLE_MINUTES` when the file or the key is absent.

    Raises:
        ResolverError: the file cannot be read, or the value is not a number of minutes from
            0.1 to 1440 (one day).
    """
    path = path or config_path()
    if not path.exists():
        return KEY_IDLE_MINUTES * 60.0
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ResolverError(f"Cannot read {path}: {exc}. Fix the file or delete it to be asked again.") from None
    value = data.get("key_idle_minutes", KEY_IDLE_MINUTES)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.1 <= value <= 1440:
        raise ResolverError(f"{path} says key_idle_minutes = {str(value)[:20]!r}; use a number of minutes from 0.1 to 1440.")
    return float(value) * 60.0


def save(config: ApproverConfig, path: Path | None = None) -> Path:
    """Write ``config``'s name and role into the TOML file at ``path`` (default
    :func:`config_path`), readable by its owner only; returns the path.

    The file is edited, not rewritten: tomlkit keeps every other key, table, comment, type and
    quoting byte for byte (a hand-written writer can drop a comment, an integer, a quoted key
    or a whole table, and write a name holding an escape character as a file TOML cannot
    read). A ``role`` of None removes the role line. The new text replaces the old in
    one rename, so a crash leaves the old file or the new one, never half of either.

    Raises:
        ResolverError: the file exists but is not TOML or not UTF-8 (it is left as it is); its
            folder cannot be made or the file cannot be written; the name or role holds bytes
            that are not UTF-8. Nothing is saved in each case.
    """
    # lazy: tomlkit is needed only to save the config (reading uses tomllib)
    import tomlkit
    from tomlkit.exceptions import TOMLKitError  # lazy: tomlkit too, only to save

    path = path or config_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ResolverError(
            f"Cannot make the folder of {path} ({exc.strerror}); name another file with {CONFIG_ENV}. Nothing was saved."
        ) from None
    try:
        doc = tomlkit.parse(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        doc = tomlkit.document()
    except (TOMLKitError, UnicodeDecodeError) as exc:
        raise ResolverError(f"Cannot read {path}: {exc}. Fix the file or delete it; nothing was saved.") from None
    doc["name"] = config.name
    if config.role:
        doc["role"] = config.role
    elif "role" in doc:
        del doc["role"]
    try:
        text = tomlkit.dumps(doc).encode("utf-8")
    except UnicodeEncodeError:  # bytes a terminal sent that are not UTF-8 (surrogate escapes)
        raise ResolverError(f"The name or role is not UTF-8 text; type it again. Nothing was saved in {path}.") from None
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(text)
        os.replace(tmp, path)
        path.chmod(0o600)
    except OSError as exc:
        raise ResolverError(f"Cannot write {path} ({exc.strerror}); nothing was saved.") from None
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _printable(text: str) -> bool:
    """True when ``text`` is one line of UTF-8 text with nothing :func:`core.ground.safetext.safe_text`
    would drop (an escape sequence, a control or bidirectional character); a byte a terminal sent
    that is not UTF-8 arrives as a lone surrogate and is refused too."""
    if any("\ud800" <= c <= "\udfff" for c in text):
        return False
    return safe_text(text) == text and not any(c in "\t\n\u2028\u2029" for c in text)


ROLE_NOTES = {"grace": " (the owner)"}
"""What a role's label alone does not say, in the first-start question."""
ROLE_PROMPT = (
    "Your role in practice homes: "
    + ", ".join(f"{n} {ROLE_LABELS[role]}{ROLE_NOTES.get(role, '')}" for n, role in enumerate(ROLES, 1))
    + ". Type its number or name: "
)
"""The first-start question of the role: ``1 agent, 2 team lead, 3 grace (the owner)``, the roles
by the labels the app shows (:data:`core.engine.policy.ROLE_LABELS`), in the policy's order."""


def role_of_answer(answer: str) -> tuple[str | None, str]:
    """The role an answer to :data:`ROLE_PROMPT` names, and why not when it names none:
    ``(role, "")``, or ``(None, sentence)``. Taken: the role's number (``2``), its label
    (``team lead``, any case, ``-`` or ``_`` for the space) or its name in the config file
    (``team_lead``). The sentence quotes an answer made safe for the terminal, cut at 40 characters."""
    text = nfc(answer).strip()
    if not text:
        return None, "No role was given."
    if text.isdigit() and 1 <= int(text) <= len(ROLES):
        return ROLES[int(text) - 1], ""
    words = " ".join(text.lower().replace("_", " ").replace("-", " ").split())
    for role in ROLES:
        if words in (ROLE_LABELS[role], role.replace("_", " ")):
            return role, ""
    shown = safe_text(text)[:40]
    if text.isdigit():
        return None, f"{shown} is not one of the numbers 1 to {len(ROLES)}."
    return None, f"{shown!r} is not one of the roles."


def ask_and_save(ask: Callable[[str], str], path: Path | None = None) -> ApproverConfig:
    """Ask once for the name and the role (``ask`` is :func:`input` in a terminal), until both
    are given: a name that is not one line of plain UTF-8 text, or an answer that is not a role
    (:func:`role_of_answer`), is asked again, the prompt saying why first. The roles are offered by
    their labels and numbers (:data:`ROLE_PROMPT`). Save and return them. Raises EOFError when the
    terminal closes, ResolverError from :func:`save`."""
    name, prompt = "", "Who is at the keyboard? Your name: "
    while not name:
        name = nfc(ask(prompt)).strip()  # names in NFC on the way in
        if not _printable(name):  # it is printed with every decision: no escape sequence, one line
            name, prompt = "", "A name is one line of plain text, with no escape sequence; your name: "
    role, prompt = None, ROLE_PROMPT
    while role is None:
        role, why = role_of_answer(ask(prompt))
        prompt = f"{why} {ROLE_PROMPT}"  # the reason first, then the same question
    config = ApproverConfig(name, role)
    save(config, path)
    return config


def resolve(role: str | None, name: str | None, kind: str, config: ApproverConfig | None) -> tuple[str, str]:
    """The (role, name) the app runs as: ``--as``/``--name`` override the file in a practice
    home; a shop home takes the role from the file only.

    Raises:
        ResolverError: no role is known (no ``--as`` and no role in the file), or ``--as`` in a
            shop home.
    """
    if kind == "shop" and role is not None:
        raise ResolverError("In a shop home the role comes from your approver config, not --as.")
    chosen_role = role or (config.role if config else None)
    if chosen_role is None:
        raise ResolverError(f'No role: add role = "..." to {config_path()} or pass --as ROLE.')
    chosen_name = nfc((name or "").strip() or (config.name if config else "")) or ""  # names in NFC on the way in
    return chosen_role, chosen_name
