"""Who is at the keyboard: the approver's config file in the user's config directory.

The file is TOML, read with :mod:`tomllib`::

    name = "Tomás"
    role = "team_lead"   # practice homes only; a later issue takes a shop's roles from a registry

It is the one config file of resolver, :func:`core.homepath.config_path`:
``<user config dir>/resolver/config.toml`` (platformdirs), or the file ``$RESOLVER_CONFIG``
names (tests point it at a temporary folder, so they never touch the real user's config). The
same file may name the approver's home (``home = "..."``, read by :mod:`core.homepath`); saving
keeps it. There is no default role: with no file the app asks once (:func:`ask_and_save`) and
writes it.
"""

from __future__ import annotations

import contextlib
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.data import ROLES
from core.errors import ResolverError
from core.homepath import CONFIG_ENV, config_path

__all__ = ["CONFIG_ENV", "ApproverConfig", "ask_and_save", "config_path", "load", "resolve", "save"]


@dataclass(frozen=True)
class ApproverConfig:
    """The approver's name and (practice homes) role, as read from the file."""

    name: str
    role: str | None


def load(path: Path | None = None) -> ApproverConfig | None:
    """The config at ``path`` (default :func:`config_path`), or None when there is no file.

    Raises:
        ResolverError: the file is not TOML, has no name, or names a role the policy does not know.
    """
    path = path or config_path()
    if not path.exists():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ResolverError(f"Cannot read {path}: {exc}. Fix the file or delete it to be asked again.") from None
    name = str(data.get("name", "")).strip()
    role = data.get("role")
    if not name:
        raise ResolverError(f"{path} has no name = \"...\" line. Add one, or delete the file to be asked again.")
    if role is not None and role not in ROLES:
        raise ResolverError(f"{path} says role = {role!r}; use one of {', '.join(ROLES)}.")
    return ApproverConfig(name, role)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def save(config: ApproverConfig, path: Path | None = None) -> Path:
    """Write ``config`` as TOML to ``path`` (default :func:`config_path`), readable by its owner
    only, keeping the file's other text settings (``home``); returns the path."""
    path = path or config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    kept: dict[str, str] = {}
    with contextlib.suppress(FileNotFoundError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        kept = {k: v for k, v in tomllib.loads(path.read_text(encoding="utf-8")).items()
                if isinstance(v, str) and k not in ("name", "role")}
    lines = [f"name = {_quote(config.name)}"]
    if config.role:
        lines.append(f"role = {_quote(config.role)}")
    lines += [f"{k} = {_quote(v)}" for k, v in kept.items() if k.replace("_", "").isalnum()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    path.chmod(0o600)
    return path


def ask_and_save(ask: Callable[[str], str], path: Path | None = None) -> ApproverConfig:
    """Ask once for the name and the role (``ask`` is :func:`input` in a terminal), until both
    are given; save and return them. Raises EOFError when the terminal closes."""
    name = ""
    while not name:
        name = ask("Who is at the keyboard? Your name: ").strip()
    role = ""
    while role not in ROLES:
        role = ask(f"Your role in practice homes ({', '.join(ROLES)}): ").strip()
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
        raise ResolverError(f"No role: add role = \"...\" to {config_path()} or pass --as ROLE.")
    chosen_name = (name or "").strip() or (config.name if config else "")
    return chosen_role, chosen_name
