"""``resolver-tui`` / ``python -m resolver_tui``: open the approvals app on a home folder."""

from __future__ import annotations

import argparse
import sys

from core import __version__
from core.api.home import Home, locate_home
from core.api.homekind import require_practice
from core.engine import approver_config
from core.ground.errors import ResolverError
from core.ground.exitcodes import EXIT_USAGE, not_utf8
from core.ground.safetext import not_plain_name

MIN_REFRESH_S = 0.5
"""The shortest auto-refresh interval, seconds: each refresh reads the queue's page and counts,
so a new user's ``--refresh 0.001`` kept a core at 100 % for nothing a person can see."""


def _seconds(text: str) -> float:
    """A refresh interval: 0 (off), or :data:`MIN_REFRESH_S` seconds or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("the refresh interval is 0 (off) or a positive number of seconds")
    if 0 < value < MIN_REFRESH_S:
        raise argparse.ArgumentTypeError(
            f"the refresh interval is 0 (off) or at least {MIN_REFRESH_S:g} seconds (each refresh reads the queue)"
        )
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """``--home DIR --store URL --as ROLE --name NAME --demo --refresh SECONDS --trainer`` (and ``--version``)."""
    p = argparse.ArgumentParser(prog="resolver-tui", description="The Larkfield approvals queue.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument(
        "--home",
        help="home folder (default: $RESOLVER_HOME, `home` in the config file, else ./work in the project folder or "
        "where it holds a home, else your data folder; `resolver doctor` says which)",
    )
    p.add_argument(
        "--store",
        metavar="URL",
        help="sqlite:///FOLDER (the home folder, the default) or postgresql://HOST/DATABASE, the team store "
        "(default: $RESOLVER_STORE, `store` in the config file)",
    )
    p.add_argument(
        "--as",
        dest="role",
        default=None,
        choices=["agent", "team_lead", "grace"],
        help="your role in a practice home (default: the role in your approver config)",
    )
    p.add_argument("--name", default=None, help="your name, recorded with each decision (default: your config's)")
    p.add_argument(
        "--demo",
        action="store_true",
        help="load the demo queue at start if the home is empty (a home with runs opens as it is, and says so)",
    )
    p.add_argument("--refresh", type=_seconds, default=2.0, metavar="SECONDS", help="auto-refresh interval (0: off)")
    p.add_argument("--trainer", action="store_true", help="trainer mode: the lesson's moments in the palette")
    return p.parse_args(argv)


def who(args: argparse.Namespace, kind: str, ask=input) -> tuple[str, str]:
    """The (role, name) at the keyboard: ``--as``/``--name`` (practice homes), else the approver
    config file; with no file and not both options, ask once on the terminal and save the answer.
    There is no default role. Raises ResolverError with the sentence to show."""
    config = approver_config.load()
    if config is None and not (args.role and args.name):
        if not sys.stdin.isatty() and ask is input:
            raise ResolverError(
                f"Nobody said who is at the keyboard: pass --as ROLE --name NAME, or write "
                f'{approver_config.config_path()} (name = "...", role = "...").'
            )
        try:
            config = approver_config.ask_and_save(ask)
        except (EOFError, KeyboardInterrupt):
            raise ResolverError("Nobody said who is at the keyboard; nothing was saved.") from None
        print(f"Saved in {approver_config.config_path()}; edit it or pass --as/--name to change.")
    return approver_config.resolve(args.role, args.name, kind, config)


def approver_at(home: Home, args: argparse.Namespace, ask=input) -> tuple[str, str]:
    """The (role, name) the app runs as in ``home``: :func:`who`, then in a shop home with a
    registry the registered approver of that name (compared as names are everywhere) and the
    role the owner signed for them, never the config file's (a new user's finding: the app showed
    the config's role as fact and learned otherwise only at the passphrase).

    Raises:
        ResolverError: as :func:`who`; ApprovalRefused (one sentence, with the nearest names):
            a name the registry does not hold, a revoked approver, a registry that does not verify.
            ResolverError too for a ``--name`` that spans lines or holds a control or invisible
            character, refused at the start as the command line refuses it (a new user's trial:
            the app started as "X" and refused the name only at the first approval).
    """
    refused = not_plain_name(args.name)
    if refused:
        raise ResolverError(refused)
    if home.kind == "shop" and args.name and not args.role and home.registry().exists():
        # --name says who; the registry says the role: nothing to ask or save (a new user's trial:
        # the first-start question came anyway, and its answer overwrote the config file)
        entry = home.registry().valid_entry(args.name)
        return entry.role, entry.name
    role, name = who(args, home.kind, ask)
    if home.kind == "shop" and home.registry().exists():
        entry = home.registry().valid_entry(name)
        role, name = entry.role, entry.name
    return role, name


def require_terminal(stdin=None, stdout=None) -> None:
    """Refuse to start the app without a terminal on both ends: started from a pipe, cron or a
    service, Textual waited for a terminal that never came and the process hung until killed.
    Raises ResolverError naming the command line, which needs no terminal."""
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    if not (_is_tty(stdin) and _is_tty(stdout)):
        raise ResolverError(
            "resolver-tui needs a terminal (its input or output is not one); "
            "in a script, use the command line: resolver runs, resolver show RUN."
        )


def _is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # None, or a closed stream
        return False


def main(argv: list[str] | None = None) -> None:
    """Open the app; every start-up error is one sentence on stderr, never a traceback: exit 2
    for an argument that is not UTF-8 (as the CLI, :func:`core.ground.exitcodes.not_utf8`), exit 1 for a
    ResolverError (no home, a damaged ``clock.json``, ``--demo`` in a shop home, nobody at the
    keyboard, no terminal: :func:`require_terminal`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    bad = not_utf8(argv)
    if bad is not None:
        print(
            f"The argument {bad} is not UTF-8 text; set your terminal to UTF-8 and type it again. Nothing was changed.",
            file=sys.stderr,
        )
        sys.exit(EXIT_USAGE)
    args = parse_args(argv)
    try:
        home = Home.at(locate_home(args.home, args.store))
        home.clock.now()  # a damaged clock.json is a sentence here, not a traceback in the app
        if args.demo:
            require_practice(home.root, "--demo (the Larkfield demo queue)", home.kind)
        require_terminal()  # before the first-start question: with no terminal there is nobody to ask
        role, name = approver_at(home, args)
        # lazy: a start-up error is told before Textual and the app load
        from resolver_tui.app import ResolverApp

        app = ResolverApp(home, role, name, refresh_interval=args.refresh or None, demo=args.demo, trainer=args.trainer)
    except ResolverError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
    app.run()


if __name__ == "__main__":
    main()
