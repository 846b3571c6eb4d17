"""Where the home folder is, and why, with nothing else imported (``resolver runs`` reads it
first, before it decides whether the whole home is needed).

``--home DIR``, else ``$RESOLVER_HOME``, else the ``home`` key of the approver's config file
(:func:`config_path`), else ``./work`` in the current folder (issue 13: the default stays the
lesson's ``work/`` folder, and ``resolver doctor`` says which one is in use and why).
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from core.errors import BadArgument, ResolverError

__all__ = ["CONFIG_ENV", "DEFAULT_HOME", "HOME_ENV", "HomeLocation", "config_home", "config_path", "locate_home", "resolve_home"]

HOME_ENV = "RESOLVER_HOME"
DEFAULT_HOME = "work"
CONFIG_ENV = "RESOLVER_CONFIG"


def config_path() -> Path:
    """The approver's config file: ``$RESOLVER_CONFIG`` if set, else platformdirs' user config
    folder ``/resolver/config.toml`` (``~/.config/resolver/config.toml`` on Linux). The same file
    holds the approver's name and role (the app's settings); this module reads only ``home``."""
    named = os.environ.get(CONFIG_ENV)
    if named:
        return Path(named).expanduser()
    from platformdirs import user_config_path

    return user_config_path("resolver") / "config.toml"


def config_home(path: Path | None = None) -> Path | None:
    """The ``home`` key of the config file (relative paths from the file's folder), or None when
    the file or the key is absent. Raises ResolverError for a file that is not TOML or a ``home``
    that is not a non-empty string."""
    import tomllib

    path = path or config_path()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ResolverError(f"Cannot read the config file {path}: {exc}. Fix it, or name another with {CONFIG_ENV}.") from None
    home = data.get("home")
    if home is None:
        return None
    if not isinstance(home, str) or not home.strip():
        raise ResolverError(f"The config file {path} has a `home` that is not a folder name; fix it or remove the key.")
    return (path.parent / Path(home).expanduser()) if not Path(home).expanduser().is_absolute() else Path(home).expanduser()


@dataclass(frozen=True)
class HomeLocation:
    """Which home folder is in use and why: ``source`` is ``flag`` (``--home``), ``environment``
    (``$RESOLVER_HOME``), ``config`` (the ``home`` key of :func:`config_path`) or ``default``
    (``./work`` in the current folder)."""

    path: Path
    source: Literal["flag", "environment", "config", "default"]
    detail: str

    def describe(self) -> str:
        """One line: ``/abs/work (the default ./work in the current folder)``."""
        return f"{self.path.absolute()} ({self.detail})"

    def require_existing(self) -> None:
        """Raise ResolverError when no home is there: a read-only command never makes one."""
        if not (self.path / "runs.sqlite").is_file():
            raise ResolverError(
                f"No home folder at {self.describe()}: nothing was created. Choose a home with --home DIR, "
                f"{HOME_ENV}, or `home` in {config_path()}; or start one here with `resolver run TASK`."
            )


def locate_home(arg: str | os.PathLike | None = None) -> HomeLocation:
    """The home folder and why: ``--home DIR``, else ``$RESOLVER_HOME``, else the config file's
    ``home``, else ``./work``.

    Raises:
        ResolverError: ``--home ''`` (never quietly ./work); a home this user may not reach
            (another account's, issue 28).
        BadArgument: a folder name longer than the system allows (issue 28).
    """
    if arg is not None:
        if not str(arg).strip():
            raise ResolverError("--home is empty: name a folder, or leave --home out to use the default.")
        return _reachable(HomeLocation(Path(arg).expanduser(), "flag", "from --home"))
    env = os.environ.get(HOME_ENV)
    if env:
        return _reachable(HomeLocation(Path(env).expanduser(), "environment", f"from ${HOME_ENV}"))
    named = config_home()
    if named is not None:
        return _reachable(HomeLocation(named, "config", f"from `home` in {config_path()}"))
    return _reachable(HomeLocation(Path(DEFAULT_HOME), "default", "the default ./work in the current folder"))


def _reachable(where: HomeLocation) -> HomeLocation:
    """``where`` when its folder can be looked at by this user (it need not exist yet).

    Raises:
        BadArgument: the name is longer than the system allows (ENAMETOOLONG).
        ResolverError: the folder, or one above it, may not be searched or read by this user:
            it belongs to another account (EACCES, EPERM).
    """
    try:
        where.path.stat()
    except FileNotFoundError:
        return where
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise BadArgument(
                f"The home folder's name is too long for this system ({len(str(where.path))} characters, {where.detail}); "
                "choose a shorter path. Nothing was changed."
            ) from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise ResolverError(_unreadable(where.path)) from None
        if exc.errno != errno.ENOTDIR:
            raise ResolverError(f"Cannot look at the home folder {where.path}: {exc.strerror or exc}.") from None
    if where.path.is_dir() and not os.access(where.path, os.R_OK | os.X_OK):
        raise ResolverError(_unreadable(where.path))
    return where


def _unreadable(path: Path) -> str:
    return (
        f"The home {path} cannot be read by this user: it belongs to another account, or its owner closed it "
        "(a home is 0700). Run resolver as the home's owner, or choose your own home with --home DIR."
    )


def resolve_home(arg: str | os.PathLike | None = None) -> Path:
    """``--home DIR`` if given, else ``$RESOLVER_HOME``, else the config file's ``home``, else
    ``./work`` (see :func:`locate_home`)."""
    return locate_home(arg).path
