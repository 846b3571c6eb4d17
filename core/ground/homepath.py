"""Where the home folder is, and why, with nothing else imported (``resolver runs`` reads it
first, before it decides whether the whole home is needed).

``--home DIR``, else ``$RESOLVER_HOME``, else the ``home`` key of the approver's config file
(:func:`config_path`), else the default of :func:`default_home`: ``./work`` in the project folder
or where ``./work`` already holds a home, else the user's data folder; ``resolver doctor`` says
which one is in use and why.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from core.ground.errors import BadArgument, ResolverError
from core.ground.masking import mask_url

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_HOME",
    "HOME_ENV",
    "STORE_ENV",
    "HomeLocation",
    "StoreChoice",
    "config_home",
    "config_path",
    "config_store",
    "default_home",
    "locate_home",
    "locate_store",
    "parse_store_url",
    "read_config",
    "resolve_home",
]

HOME_ENV = "RESOLVER_HOME"
DEFAULT_HOME = "work"
"""The lesson's home folder, ``./work`` of the project folder (:func:`default_home`)."""
HOME_MARKS = ("runs.sqlite", "larkfield.sqlite", "approval.key", "home.json", "resolver.log")
"""Files only a resolver home holds: a ``./work`` with one of them is a home already made there."""
NOTHING_NAMED = f"no --home, ${HOME_ENV} or `home` in the config file names a home"
"""The start of every default's reason (:meth:`HomeLocation.reason`)."""
ENTRY_POINT = "core.__main__:entry"
"""The ``resolver`` command's entry point, which this project's pyproject.toml declares: it marks
the project folder whatever the distribution is called."""
CONFIG_ENV = "RESOLVER_CONFIG"
STORE_ENV = "RESOLVER_STORE"
POSTGRES_SCHEMES = ("postgresql", "postgres")
"""The URL schemes of the team store; libpq takes both."""


def home_was_used(root: Path) -> bool:
    """True when the home folder ``root`` shows it was used before: an approval key, or a
    practice world that is not empty. A home's first use makes ``runs.sqlite`` before its
    world, so a store missing or empty beside a world was lost (a trial: a home with a run, a
    claim and a hand-over but no approval yet made an empty store after a ``mv``)."""
    world = root / "larkfield.sqlite"
    return (root / "approval.key").exists() or (world.is_file() and world.stat().st_size > 0)


def config_path() -> Path:
    """The approver's config file: ``$RESOLVER_CONFIG`` if set, else platformdirs' user config
    folder ``/resolver/config.toml`` (``~/.config/resolver/config.toml`` on Linux). The same file
    holds the approver's name and role (the app's settings); this module reads only ``home``."""
    named = os.environ.get(CONFIG_ENV)
    if named:
        return Path(named).expanduser()
    # lazy: platformdirs loads only when $RESOLVER_CONFIG does not name the file
    from platformdirs import user_config_path

    return user_config_path("resolver") / "config.toml"


def read_config(path: Path) -> dict:
    """The config file's table, empty when there is no file.

    Raises:
        BadArgument: a file that cannot be read, is not UTF-8 or is not TOML (exit 2, as the
            live model's routes in the same file, :func:`core.models.model.config_routes`).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise BadArgument(f"Cannot read the config file {path}: {exc}. Fix it, or name another with {CONFIG_ENV}.") from None
    import tomllib  # lazy: most commands run with no config file, and never parse TOML

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadArgument(f"The config file {path} is not TOML: {exc}. Fix it, or name another with {CONFIG_ENV}.") from None


def config_home(path: Path | None = None) -> Path | None:
    """The ``home`` key of the config file (relative paths from the file's folder), or None when
    the file or the key is absent. Raises BadArgument for a file that is not TOML, ResolverError
    for a ``home`` that is not a non-empty string."""
    path = path or config_path()
    home = read_config(path).get("home")
    if home is None:
        return None
    if not isinstance(home, str) or not home.strip():
        raise ResolverError(f"The config file {path} has a `home` that is not a folder name; fix it or remove the key.")
    return (path.parent / Path(home).expanduser()) if not Path(home).expanduser().is_absolute() else Path(home).expanduser()


Source = Literal["flag", "environment", "config", "default"]
RANK: dict[str, int] = {"flag": 0, "environment": 1, "config": 2, "default": 3}
"""Which source wins: a flag over the environment over the config file over the default."""


@dataclass(frozen=True)
class StoreChoice:
    """Which store holds the home's runs, audit, practice world and approvers' rows, and why:
    ``url`` is a PostgreSQL URL (``postgresql://…``, the team store), or None for
    SQLite files in the home folder (the default). ``source`` is ``flag`` (``--store``),
    ``environment`` (``$RESOLVER_STORE``), ``config`` (``store`` in :func:`config_path`) or
    ``default``. The home folder keeps what is per person either way: config, log, keys."""

    url: str | None = None
    source: Source = "default"
    detail: str = "the default: SQLite files in the home folder"

    @property
    def backend(self) -> Literal["sqlite", "postgres"]:
        """``postgres`` for a team store, else ``sqlite``."""
        return "sqlite" if self.url is None else "postgres"

    def shown(self) -> str:
        """The URL as it may be printed (its passwords replaced by ``***``,
        :func:`core.ground.masking.mask_url`), or ``SQLite``."""
        return "SQLite" if self.url is None else mask_url(self.url)


def team_label(url: str) -> str:
    """A team store's URL as a status bar shows it: ``team store larkfield@db.shop:5432`` (its
    database and server, never the user or password); the masked URL when it has neither."""
    parts = urlsplit(url)
    database = parts.path.lstrip("/")
    server = parts.hostname or "local socket"
    if parts.port:
        server += f":{parts.port}"
    return f"team store {database or '(default database)'}@{server}"


def parse_store_url(text: str, where: str) -> tuple[Literal["sqlite", "postgres"], str]:
    """``("sqlite", FOLDER)`` for ``sqlite:///FOLDER`` (the home folder holding ``runs.sqlite``;
    everything after ``sqlite://`` is the path, so ``sqlite:///srv/shop`` is ``/srv/shop``), or
    ``("postgres", URL)`` for ``postgresql://…`` / ``postgres://…`` (a libpq URL, unchanged). A
    password holding an ``@`` must be written ``%40``: libpq ends the user part at the first
    ``@``, so the rest of the password would become the host and be printed in its error.
    ``where`` names the source for the sentence (``--store``).

    Raises:
        BadArgument: an empty value, a value with spaces or control characters, another scheme,
            a ``sqlite:`` URL without a path, or a ``postgresql:`` URL that cannot be read (an
            IPv6 host without its ``]``) or has two ``@`` before its host (one sentence).
    """
    value = text.strip()
    if not value:
        raise BadArgument(f"{where} is empty: give sqlite:///FOLDER or postgresql://HOST/DATABASE, or leave it out.")
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise BadArgument(f"{where} holds a space or a control character; a store URL has none (escape them as %20 and so on).")
    scheme, sep, rest = value.partition(":")
    if not sep:
        raise BadArgument(f"{where} is not a URL; give sqlite:///FOLDER or postgresql://HOST/DATABASE.")
    scheme = scheme.lower()
    if scheme == "sqlite":
        path = rest[2:] if rest.startswith("//") else rest
        if not path:
            raise BadArgument(f"{where} names no folder; give sqlite:///FOLDER (the home folder that holds runs.sqlite).")
        return "sqlite", path
    if scheme in POSTGRES_SCHEMES:
        try:
            netloc = urlsplit(value).netloc
        except ValueError as exc:  # an IPv6 host without its "]"
            raise BadArgument(f"{where} cannot be read as a URL ({exc}); give postgresql://HOST/DATABASE.") from None
        if netloc.count("@") > 1:  # libpq ends the user part at the first: the rest would be the host
            raise BadArgument(f"{where} has more than one '@' before its host; write an '@' of the user or password as %40.")
        return "postgres", value
    raise BadArgument(
        f"{where} has the scheme {scheme[:20]!r}; resolver stores runs in sqlite:///FOLDER (the default) or "
        "postgresql://HOST/DATABASE (the team store)."
    )


def config_store(path: Path | None = None) -> str | None:
    """The ``store`` key of the config file as written, or None when the file or the key is
    absent. Raises BadArgument for a file that is not TOML, ResolverError for a ``store`` that is
    not a string."""
    path = path or config_path()
    store = read_config(path).get("store")
    if store is None:
        return None
    if not isinstance(store, str):
        raise ResolverError(f"The config file {path} has a `store` that is not a URL string; fix it or remove the key.")
    return store


def locate_store(arg: str | None = None) -> tuple[StoreChoice, Path | None]:
    """The store and why: ``--store URL``, else ``$RESOLVER_STORE``, else ``store`` in the config
    file, else SQLite in the home folder (the same precedence as the home). With a ``sqlite:``
    URL the second value is the folder it names (relative to the config file's folder when it
    came from there), else None.

    Raises:
        BadArgument: a value :func:`parse_store_url` refuses.
        ResolverError: a config file that cannot be read.
    """
    picked: tuple[str, Source, str] | None = None
    if arg is not None:
        picked = (arg, "flag", "from --store")
    elif os.environ.get(STORE_ENV):
        picked = (os.environ[STORE_ENV], "environment", f"from ${STORE_ENV}")
    else:
        named = config_store()
        if named is not None:
            picked = (named, "config", f"from `store` in {config_path()}")
    if picked is None:
        return StoreChoice(), None
    text, source, detail = picked
    label = {"flag": "--store", "environment": f"${STORE_ENV}", "config": f"`store` in {config_path()}"}[source]
    backend, value = parse_store_url(text, label)
    if backend == "postgres":
        return StoreChoice(value, source, detail), None
    folder = Path(value).expanduser()
    if source == "config" and not folder.is_absolute():
        folder = config_path().parent / folder
    return StoreChoice(None, source, detail), folder


@dataclass(frozen=True)
class HomeLocation:
    """Which home folder is in use and why: ``source`` is ``flag`` (``--home``), ``environment``
    (``$RESOLVER_HOME``), ``config`` (the ``home`` key of :func:`config_path`) or ``default``
    (:func:`default_home`: ``./work`` or the user's data folder). ``detail`` names the source or
    the default's rule in a few words; ``why`` says at length why this home and not another
    (empty: :attr:`reason` builds it from the source). ``store`` is where its runs live
    (:class:`StoreChoice`: SQLite files in this folder unless a team store was chosen)."""

    path: Path
    source: Source
    detail: str
    store: StoreChoice = StoreChoice()
    why: str = ""

    def describe(self) -> str:
        """One line: ``/abs/work (the default in the project folder: the lesson's ./work)``."""
        return f"{self.path.absolute()} ({self.detail})"

    @property
    def reason(self) -> str:
        """Why this home, as ``resolver doctor`` says it: the sources in their order and the one
        that picked it (``--home``, ``$RESOLVER_HOME``, ``home`` in the config file, the default's
        rule, :func:`default_home`)."""
        if self.why:
            return self.why
        return {
            "flag": "the command line named it (--home, or --store sqlite:///FOLDER), which wins over the environment, "
            "the config file and the default",
            "environment": f"the environment named it (${HOME_ENV}, or ${STORE_ENV} = sqlite:///FOLDER) and the command "
            "line did not, which wins over the config file and the default",
            "config": f"the config file {config_path()} named it and neither the command line nor the environment did, "
            "which wins over the default",
            "default": NOTHING_NAMED,
        }[self.source]

    def require_existing(self) -> None:
        """Raise ResolverError when no home is there: a read-only command never makes one. On a
        team store the runs are in the database: the folder need only exist (it keeps the log)."""
        if self.store.url is not None:
            return
        if not (self.path / "runs.sqlite").is_file():
            if home_was_used(self.path):
                raise ResolverError(
                    f"The home folder {self.describe()} has no runs.sqlite: its runs were moved or deleted. Nothing "
                    "was created. Restore runs.sqlite from a backup (`resolver restore`), or start afresh with "
                    "`resolver reset --all`."
                )
            raise ResolverError(
                f"No home folder at {self.describe()}: nothing was created. Choose a home with --home DIR, "
                f"{HOME_ENV}, or `home` in {config_path()}; or start this one with `resolver run TASK`."
            )


def locate_home(arg: str | os.PathLike | None = None, store: str | None = None) -> HomeLocation:
    """The home folder and why: ``--home DIR``, else ``$RESOLVER_HOME``, else the config file's
    ``home``, else :func:`default_home` (``./work`` or the user's data folder); and its store
    (:func:`locate_store`, from ``--store URL`` given as ``store``). A ``sqlite:///FOLDER`` store
    names the home folder itself: of a home and a SQLite store chosen in different places, the one
    of higher precedence (:data:`RANK`) is the home; two different folders of the same precedence
    (``--home A --store sqlite:///B``) are refused.

    Raises:
        ResolverError: ``--home ''`` (never quietly the default); a home this user may not reach
            (another account's).
        BadArgument: a folder name longer than the system allows; a store URL that
            cannot be taken; a ``sqlite:`` store naming another folder than a home given in the
            same place.
    """
    choice, folder = locate_store(store)
    home = _locate_folder(arg)
    if folder is None:
        return HomeLocation(home.path, home.source, home.detail, choice, home.why)
    if _same_folder(home.path, folder) or RANK[home.source] < RANK[choice.source]:
        return HomeLocation(home.path, home.source, home.detail, StoreChoice(None, home.source, home.detail), home.why)
    if RANK[choice.source] < RANK[home.source]:
        return _reachable(HomeLocation(folder, choice.source, f"the folder of the SQLite store {choice.detail}", choice))
    raise BadArgument(
        f"The home {home.path} ({home.detail}) and the SQLite store {folder} ({choice.detail}) name two different "
        "folders; a SQLite store is its home folder: give one of them."
    )


def _same_folder(a: Path, b: Path) -> bool:
    return a.expanduser().resolve() == b.expanduser().resolve()


def _locate_folder(arg: str | os.PathLike | None) -> HomeLocation:
    """:func:`locate_home`'s folder alone."""
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
    return _reachable(default_home())


def default_home(cwd: Path | None = None) -> HomeLocation:
    """The home when no ``--home``, ``$RESOLVER_HOME`` or ``home`` in the config file names one,
    looked for from ``cwd`` (default: the current folder). The rule, first match wins:

    1. ``./work``, when the current folder is this project's folder (its ``pyproject.toml``
       declares the ``resolver`` command as :data:`ENTRY_POINT`): the lesson runs
       ``python -m resolver`` there and prints ``work/runs.sqlite`` and ``work/larkfield.sqlite``.
    2. ``./work``, when it already holds a home (one of :data:`HOME_MARKS`): earlier releases
       made the home ``./work`` of whatever folder resolver ran in, and such a home keeps being
       found where it is, never left behind with its runs and its key.
    3. Else ``home`` in the user's data folder (``platformdirs.user_data_path("resolver")``,
       ``~/.local/share/resolver/home`` on Linux): one home per user wherever the installed tool
       runs, so it leaves no ``work/`` folders about and a key made in one folder is found from
       every other.

    The result's ``source`` is ``default``; its ``detail`` names the rule that picked it and
    :attr:`HomeLocation.reason` says why at length (``resolver doctor`` prints both). Nothing is
    made or changed.
    """
    try:
        here = Path.cwd() if cwd is None else cwd
    except OSError:  # the current folder was deleted: it can hold neither the project nor a home
        here = None
    work = Path(DEFAULT_HOME) if cwd is None else Path(cwd) / DEFAULT_HOME  # relative: ./work of the current folder
    if here is not None and _is_project_folder(here):
        return HomeLocation(
            work,
            "default",
            "the default in the project folder: the lesson's ./work",
            why=f"{NOTHING_NAMED}, and this is the project's folder, where the lesson keeps its home in ./work",
        )
    if here is not None and _holds_a_home(here / DEFAULT_HOME):
        return HomeLocation(
            work,
            "default",
            "the default here: ./work already holds a home",
            why=(
                f"{NOTHING_NAMED}, and ./work in this folder already holds one (earlier releases made the "
                "home ./work wherever resolver ran), so it is kept; to use one home from every folder, move it and "
                f"name it with `home` in {config_path()}"
            ),
        )
    # lazy: platformdirs loads only when neither ./work rule picked the home
    from platformdirs import user_data_path

    return HomeLocation(
        user_data_path("resolver") / "home",
        "default",
        "the default: your data folder",
        why=(
            f"{NOTHING_NAMED}, and this folder is not the project's and has no ./work home, so the home "
            "is the one in your data folder, the same from every folder"
        ),
    )


def _is_project_folder(folder: Path) -> bool:
    """True when ``folder`` holds this project's ``pyproject.toml``: one whose ``[project.scripts]``
    declares ``resolver = "core.__main__:entry"`` (:data:`ENTRY_POINT`). A file that cannot be
    read or is not TOML is another project's."""
    path = folder / "pyproject.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if ENTRY_POINT not in text:  # most folders' pyproject.toml is another project's: no parse needed
        return False
    import tomllib  # lazy: only where a pyproject.toml names the entry point

    try:
        project = tomllib.loads(text).get("project")
    except tomllib.TOMLDecodeError:
        return False
    scripts = project.get("scripts") if isinstance(project, dict) else None
    return isinstance(scripts, dict) and scripts.get("resolver") == ENTRY_POINT


def _holds_a_home(folder: Path) -> bool:
    """True when ``folder`` holds one of :data:`HOME_MARKS`; False when it does not, is no folder,
    or cannot be looked into by this user (another account's ``./work`` is not this user's home)."""
    for name in HOME_MARKS:
        try:
            if (folder / name).exists():
                return True
        except OSError:
            return False
    return False


def _reachable(where: HomeLocation) -> HomeLocation:
    """``where`` when its folder can be looked at by this user (it need not exist yet).

    Raises:
        BadArgument: the name is longer than the system allows (ENAMETOOLONG).
        ResolverError: the folder, or one above it, may not be searched or read by this user:
            it belongs to another account (EACCES, EPERM); the home, or a folder above it, is a
            file (a new user's trial: a file given as the home was called "damaged", and "start
            this one with resolver run", then "File exists").
    """
    try:
        where.path.stat()
    except FileNotFoundError:
        return where
    except NotADirectoryError:
        raise ResolverError(
            f"The home {where.path} ({where.detail}) lies inside a file, not a folder; choose a folder with --home DIR. "
            "Nothing was changed."
        ) from None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise BadArgument(
                f"The home folder's name is too long for this system ({len(str(where.path))} characters, {where.detail}); "
                "choose a shorter path. Nothing was changed."
            ) from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise ResolverError(_unreadable(where.path)) from None
        raise ResolverError(f"Cannot look at the home folder {where.path}: {exc.strerror or exc}.") from None
    if not where.path.is_dir():
        raise ResolverError(
            f"The home {where.path} ({where.detail}) is a file, not a folder; choose a folder with --home DIR. "
            "Nothing was changed."
        )
    if not os.access(where.path, os.R_OK | os.X_OK):
        raise ResolverError(_unreadable(where.path))
    return where


def _unreadable(path: Path) -> str:
    return (
        f"The home {path} cannot be read by this user: it belongs to another account, or its owner closed it "
        "(a home is 0700). Run resolver as the home's owner, or choose your own home with --home DIR."
    )


def resolve_home(arg: str | os.PathLike | None = None, store: str | None = None) -> Path:
    """``--home DIR`` if given, else ``$RESOLVER_HOME``, else the config file's ``home``, else
    :func:`default_home` (see :func:`locate_home`, which also says which store)."""
    return locate_home(arg, store).path
