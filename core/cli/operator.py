"""The operators' commands: the home's health (``doctor``), its archive (``backup``,
``restore``), its age (``prune``), the stores (``store copy|check|migrate|roles``) and the
shell's completion of the command line (``completion bash|zsh|fish``).

Each command is declared beside its handler. Modules are imported inside the handlers that need
them, so ``resolver --help`` loads neither pydantic nor SQLite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.cli.shared import (
    COMPLETE_VAR,
    OWNER_PASSPHRASE_ENV,
    _json,
    _print,
)
from core.cli.tree import OPERATORS, arg, choice, command, group, leaf, opt
from core.ground.errors import BadArgument
from core.ground.exitcodes import EXIT_ERROR

if TYPE_CHECKING:
    import argparse

    from core.api.home import Home
    from core.ground.homepath import HomeLocation


@command("doctor", OPERATORS, "check the home: where it is and why, file modes, key, databases, versions", example="--json")
def cmd_doctor(where: HomeLocation, args: argparse.Namespace) -> int:
    """``resolver doctor``: the home ``where`` checked (:func:`core.ops.doctor.doctor_lines`)
    before anything opens it, so a home that cannot be opened is still described."""
    from core.ops.doctor import doctor_lines  # lazy: not for --help

    lines, code = doctor_lines(where)
    if args.json:
        _json({"home": str(where.path), "ok": code == 0, "lines": lines})
        return code
    _print(lines)
    return code


@command(
    "prune",
    OPERATORS,
    "delete finished runs older than DURATION (the audit keeps who decided what)",
    example="--older-than 90d",
    params=lambda: [opt("--older-than", required=True, metavar="DURATION", help="e.g. 90d, 2d16h")],
)
def cmd_prune(home: Home, args: argparse.Namespace) -> int:
    """Delete finished runs whose last checkpoint is older than ``--older-than``."""
    from core.ground.clock import TimeOutOfRange, parse_duration  # lazy: not for --help
    from core.ops.maintenance import prune, prune_cutoff  # lazy: not for --help

    age = parse_duration(args.older_than)
    if age.total_seconds() <= 0:
        raise BadArgument(f"--older-than {args.older_than!r} must be a positive duration, e.g. 90d.")
    now = home.clock.now()  # a clock out of range is the clock's error (exit 1), not the value's
    try:
        prune_cutoff(now, age)
    except TimeOutOfRange as exc:
        raise BadArgument(f"--older-than {args.older_than!r}: {exc}") from None
    lines = prune(home, age)
    if args.json:
        removed = [line.strip() for line in lines[1:]] if lines[0].startswith("Removed") else []
        from core.ground.clock import format_duration  # lazy: not for --help

        _json({"older_than": format_duration(age), "removed": removed, "lines": lines})
        return 0
    _print(lines)
    return 0


@command(
    "backup",
    OPERATORS,
    "copy the whole home into one archive, consistently, while the app is open",
    example="home-friday.tar.gz",
    params=lambda: [arg("file", "FILE", "the archive to write (.tar.gz); refused if it exists")],
)
def cmd_backup(home: Home, args: argparse.Namespace) -> int:
    """Copy the whole home into one archive (see :func:`core.ops.maintenance.backup`)."""
    from core.ops.maintenance import backup  # lazy: not for --help

    lines = backup(home, args.file)
    if args.json:
        _json({"file": str(args.file), "lines": lines})
        return 0
    _print(lines)
    return 0


@command(
    "restore",
    OPERATORS,
    "replace this home with a backup, after checking it",
    example="home-friday.tar.gz",
    params=lambda: [
        arg("file", "FILE", "the archive `backup` wrote"),
        opt(
            "--replace-newer",
            is_flag=True,
            default=False,
            help="restore even over runs saved after the backup (the home is kept first)",
        ),
        opt(
            "--owner-passphrase-fd",
            type=int,
            metavar="N",
            default=None,
            help=f"shop home: read the owner's passphrase from file descriptor N (else ${OWNER_PASSPHRASE_ENV})",
        ),
    ],
)
def cmd_restore(home: Home, args: argparse.Namespace) -> int:
    """Replace this home with a backup after checking it (see :func:`core.ops.maintenance.restore`)."""
    from core.ops.maintenance import not_on_a_team_store, restore  # lazy: not for --help

    not_on_a_team_store(home, "restore")  # before any passphrase
    if home.kind == "shop":
        from core.engine.signing import (  # lazy: not for --help
            OWNER_PASSPHRASE_ENV,
            read_passphrase,
        )

        registry = home.registry()
        owner = str(registry.seal()["owner"])
        registry.valid_entry(owner)  # a damaged registry is said before any passphrase is asked
        registry.unlock(
            owner, read_passphrase("The owner's passphrase, to restore: ", fd=args.owner_passphrase_fd, env=OWNER_PASSPHRASE_ENV)
        )
    done = restore(home, args.file, replace_newer=args.replace_newer, owner_checked=home.kind == "shop")
    if args.json:
        _json({"file": str(args.file), "kept": str(done.kept) if done.kept else None, "lines": done.lines})
        return 0
    _print(done.lines)
    return 0


def _store_place(text: str, where: str) -> Any:
    """The place a store URL names (:func:`core.ground.homepath.parse_store_url`): a folder's Path for
    ``sqlite:///FOLDER``, the URL for ``postgresql://…``. Raises BadArgument (one sentence)."""
    from core.ground.homepath import parse_store_url  # lazy: not for --help

    backend, value = parse_store_url(text, where)
    from pathlib import Path  # lazy: not for --help

    return Path(value).expanduser() if backend == "sqlite" else value


@group(
    "store",
    OPERATORS,
    "the operator's commands: copy a store, check it, migrate it",
    example="copy --from sqlite:///work --to postgresql://127.0.0.1/resolver",
    dest="store_cmd",
    actions=lambda: [
        leaf(
            "copy",
            "copy every run, the audit, approvers and world into an empty store",
            example="--from sqlite:///work --to postgresql://127.0.0.1/resolver",
            params=[
                opt("--from", "from_url", required=True, metavar="URL", help="sqlite:///FOLDER or postgresql://HOST/DATABASE"),
                opt("--to", "to_url", required=True, metavar="URL", help="an empty store: sqlite:///FOLDER or postgresql://…"),
            ],
        ),
        leaf(
            "check", "reachable, its version, rows per table, the audit chain", example="--store postgresql://127.0.0.1/resolver"
        ),
        leaf(
            "migrate",
            "open the store (its migrations run), the version before and after",
            example="--store postgresql://127.0.0.1/resolver",
        ),
        leaf(
            "roles",
            "team store: a database user per kind of user, with named rights (run with an administrator's URL)",
            example="setup --store postgresql://admin@127.0.0.1/resolver --runner-user ana --approver Grace=grace",
            params=[
                arg("roles_action", "setup", "the one action: setup", type=choice(["setup"])),
                opt("--tables-role", default="resolver_tables", metavar="ROLE", help="the NOLOGIN role that owns the tables"),
                *[
                    opt(
                        f"--{kind}-user",
                        f"{kind}_users",
                        multiple=True,
                        metavar="USER",
                        help=f"a database user of the {kind} kind (repeatable)",
                    )
                    for kind in ("owner", "runner", "executor")
                ],
                opt(
                    "--approver",
                    "approvers",
                    multiple=True,
                    metavar="NAME=USER",
                    help="map the registry's approver NAME to the database user USER (repeatable)",
                ),
            ],
        ),
    ],
)
def cmd_store(args: argparse.Namespace) -> int:
    """``resolver store copy|check|migrate`` (:mod:`core.ops.storecopy`): each
    opens the stores it names, never a home. ``check`` and ``migrate`` take the store chosen as
    every command chooses it (``--store``, ``$RESOLVER_STORE``, the config file, else the home
    folder). Exit 0 when all is equal or well, 1 when something differs or fails."""
    from core.ops import storecopy  # lazy: not for --help

    if args.store_cmd == "roles":
        return _store_roles(args)
    if args.store_cmd == "copy":
        report = storecopy.copy_store(_store_place(args.from_url, "--from"), _store_place(args.to_url, "--to"))
    else:
        from core.ground.homepath import locate_home  # lazy: not for --help

        where = locate_home(getattr(args, "home", None), getattr(args, "store", None))
        place = where.store.url if where.store.url is not None else where.path
        act = storecopy.check_store if args.store_cmd == "check" else storecopy.migrate_store
        report = act(place)
    if args.json:
        _json({"ok": report.ok, "lines": report.lines, "problems": report.problems})
    else:
        _print(report.all_lines())
    return 0 if report.ok else EXIT_ERROR


def _store_roles(args: argparse.Namespace) -> int:
    """``resolver store roles setup``: role separation in the team store chosen as every
    command chooses it, with that URL's (an administrator's) rights. Exit 2 for a mapping that
    is not NAME=USER or a store that is not a team store."""
    from core.ground.homepath import locate_home  # lazy: not for --help
    from core.stores import setup_roles  # lazy: not for --help

    mapping: dict[str, str] = {}
    for item in args.approvers:
        name, sep, user = item.partition("=")
        if not sep or not name.strip() or not user.strip():
            raise BadArgument(f"--approver takes NAME=USER (the registry's name, the database user), not {item!r}.")
        mapping[name.strip()] = user.strip()
    where = locate_home(getattr(args, "home", None), getattr(args, "store", None))
    if where.store.url is None:
        raise BadArgument(
            "Role separation is for a team store (PostgreSQL): give --store postgresql://… with an administrator's user."
        )
    users = {"owner": args.owner_users, "runner": args.runner_users, "executor": args.executor_users}
    lines = setup_roles(where.store.url, args.tables_role, users, mapping)
    if args.json:
        _json({"ok": True, "lines": lines})
    else:
        _print(lines)
    return 0


SHELLS = ("bash", "zsh", "fish")


@command(
    "completion",
    OPERATORS,
    'print the shell\'s completion script for resolver (bash, zsh or fish): eval "$(resolver completion bash)" in ~/.bashrc',
    example="bash",
    params=lambda: [arg("shell", "SHELL", "bash, zsh or fish", type=choice(SHELLS))],
    common=False,
)
def cmd_completion(home: Home, args: argparse.Namespace) -> int:  # pragma: no cover - main() prints it without a home
    return 0


def completion_script(shell: str) -> str:
    """The completion script of ``shell`` for the installed ``resolver`` command: click's own
    (the same as ``_RESOLVER_COMPLETE=bash_source resolver`` prints)."""
    from click.shell_completion import get_completion_class  # lazy: not for --help

    from core.cli.tree import build  # lazy: not for --help

    made = get_completion_class(shell)
    assert made is not None  # SHELLS are click's own
    return made(build(), {}, "resolver", COMPLETE_VAR).source()
