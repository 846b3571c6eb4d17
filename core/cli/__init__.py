"""The ``resolver`` command line (also ``python -m core``), on click.

Every command is a thin face on core: writes through :class:`core.api.home.Home`, reads through
its read side ``home.queue`` (:class:`core.api.queue.ApprovalQueue`), refusals from
:func:`core.engine.rulebook.offers`. The commands live in one module per kind of user, each
declared beside its handler: :mod:`core.cli.approver`, :mod:`core.cli.team`,
:mod:`core.cli.trainer` and :mod:`core.cli.operator`; :mod:`core.cli.tree` makes the command
tree, :mod:`core.cli.shared` prints. Modules are imported by the command that needs them, so
``resolver --help`` loads neither pydantic nor SQLite. Expected errors print one sentence on
stderr, never a traceback; the exit codes are in :data:`core.ground.exitcodes.EXIT_CODES` (and
the README). Every line printed goes through :func:`core.ground.safetext.safe_text`, so no
escape sequence from data reaches a terminal; an unexpected error is logged with its stack
trace in the home's ``resolver.log`` (:mod:`core.ground.log`) and shown as one sentence.

``Next:`` and ``Resume with:`` lines name the command the way it was invoked: ``resolver`` for
the installed command and ``python -m core``, ``python -m resolver`` for the lesson's
``python -m resolver`` (the ``prog`` of :func:`main`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from core.cli import approver, operator, shared, team, trainer  # noqa: F401 (each declares its commands when imported)
from core.cli.approver import cmd_runs
from core.cli.shared import (
    COMPLETE_VAR,
    OWNER_PASSPHRASE_ENV,
    PASSPHRASE_ENV,
    READ_ONLY,
    REFUSALS,
    ROLES,
    SORTS,
    STATUSES,
    _print,
    _said,
)
from core.ground.errors import BadArgument, ResolverError
from core.ground.exitcodes import (
    EXIT_CODES,
    EXIT_CRASH,
    EXIT_ERROR,
    EXIT_HANDED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    not_utf8,
)
from core.ground.safetext import nfc, safe_text

if TYPE_CHECKING:
    import argparse

    import click

__all__ = [
    "EXIT_CODES",
    "EXIT_CRASH",
    "EXIT_ERROR",
    "EXIT_HANDED",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "OWNER_PASSPHRASE_ENV",
    "PASSPHRASE_ENV",
    "ROLES",
    "SORTS",
    "STATUSES",
    "build_parser",
    "cmd_runs",
    "entry",
    "main",
    "parse_args",
]


def build_parser(prog: str = "resolver") -> click.Group:
    """The ``resolver`` command tree (:func:`core.cli.tree.build`); ``prog`` is read when it runs."""
    from core.cli.tree import build  # lazy: not for --help

    return build()


def parse_args(argv: Sequence[str], prog: str = "resolver") -> argparse.Namespace:
    """The handler's namespace of ``argv`` (:func:`core.cli.tree.namespace`), names and searches
    in NFC, ``--model`` defaulted by ``--variant``.

    Raises:
        SystemExit: 0 after ``--help`` or ``--version``; 2 for a command line that cannot be
            read (its usage and one ``error:`` line on stderr, as argparse said them).
    """
    import click  # lazy: not for --help

    from core.cli.tree import namespace  # lazy: not for --help

    try:
        parsed = build_parser(prog).main(args=list(argv), prog_name=prog, standalone_mode=False, complete_var=COMPLETE_VAR)
    except click.UsageError as exc:
        _usage_error(exc, prog)
    except click.ClickException as exc:  # pragma: no cover - the tree reads no file
        print(exc.format_message(), file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None
    if not isinstance(parsed, click.Context):  # --help or --version printed
        raise SystemExit(parsed or 0)
    args = namespace(parsed)
    if args.command == "reset" and args.all and args.run:  # either the whole practice world or one run
        _usage_error(click.UsageError("argument --run: not allowed with argument --all", parsed), prog)
    for attr in ("name", "search"):  # names and searches in NFC on the way in, as every face keeps them
        if isinstance(getattr(args, attr, None), str):
            setattr(args, attr, nfc(getattr(args, attr)))
    if getattr(args, "model", "x") is None:
        args.model = "chat-strong" if args.variant == "agent_structured" else "chat-small"
    return args


def _usage_error(exc: click.UsageError, prog: str) -> None:
    """Say a command line that cannot be read as argparse said it: the usage, then
    ``resolver approve: error: ...``, on stderr; exit 2. What was typed is echoed with its
    control characters removed (:func:`core.ground.safetext.safe_text`)."""

    lines = [exc.ctx.get_usage()] if exc.ctx is not None else []
    lines.append(f"{exc.ctx.command_path if exc.ctx is not None else prog}: error: {exc.format_message()}")
    print("\n".join(safe_text(line) for line in lines), file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def _refused_early(argv: Sequence[str]) -> int | None:
    """The exit code when the command line cannot run here at all (not a POSIX system, an
    argument that is not UTF-8), its sentence said; None to go on."""
    from core.ground.platform import require_posix  # lazy: not for --help

    try:
        require_posix()
    except ResolverError as exc:
        print(exc, file=sys.stderr)
        return EXIT_ERROR
    bad = not_utf8(argv)
    if bad is not None:
        print(
            f"The argument {bad} is not UTF-8 text; set your terminal to UTF-8 and type it again. Nothing was changed.",
            file=sys.stderr,
        )
        return EXIT_USAGE
    return None


def main(argv: Sequence[str] | None = None, prog: str = "resolver") -> int:
    """Run the CLI; returns the exit code (:data:`EXIT_CODES`: 0 done, 1 error, 2 bad command
    line, 3 simulated crash, 4 refused, 5 handed to a person).
    ``prog`` is the command as invoked (``python -m resolver`` for the lesson's package)."""
    shared.PROG = prog
    argv = list(sys.argv[1:] if argv is None else argv)
    refused = _refused_early(argv)
    if refused is not None:
        return refused
    app_argv = approver._tui_argv(argv)
    if app_argv is not None:  # `resolver tui ...` is `resolver-tui ...`: every option after it is the app's
        os.execv(sys.executable, [sys.executable, "-m", "resolver_tui", *app_argv])
    args = parse_args(argv, prog)
    if args.command == "runs" and not args.mine:  # a listing reads indexed columns only: no model, policy or world
        listed = _runs_light(args)
        if listed is not None:
            return listed
    return _run(args, argv)


def _run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Run the parsed command; every error it raises said as one sentence with its exit code,
    an unexpected one logged with its stack trace (never on screen)."""
    opened: list[Any] = []  # the home's log, once it is open
    try:
        return _dispatch(args, argv, opened)
    except ResolverError as exc:
        log = opened[0] if opened else None
        if log is not None:
            log.info("%s: %s", "refused" if type(exc).__name__ in REFUSALS else "error", exc)
        code = _said(exc)
        _say_log_problem(log)
        return code
    except KeyboardInterrupt as exc:
        print(interrupted(args, exc), file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `resolver changes | head`: a closed pipe ends quietly (entry)
        raise
    except Exception as exc:  # never a traceback on screen: it goes to the log
        details = "the details are in the home's resolver.log"
        if opened:
            opened[0].exception("unexpected error in %s", args.command)
        else:
            details = "it came before the home's log was open, so no details were kept"
        print(
            f"resolver stopped on an unexpected error ({type(exc).__name__}); {details}. "
            f"Every step before it was saved: `{shared.PROG} show RUN` says where a run stands.",
            file=sys.stderr,
        )
        return EXIT_ERROR


RESUMABLE = ("run", "record", "resume", "approve")
"""The commands whose Ctrl-C leaves a run to resume: a loop going, or the writes of an approval."""


def interrupted(args: argparse.Namespace, exc: KeyboardInterrupt) -> str:
    """What the command line says after Ctrl-C: the run whose last checkpoint is saved and the
    command that resumes it (the runner's :class:`~core.ground.errors.RunInterrupted`, else the
    run the command was given); with no run known, where to look, never an unnamed "resume"."""
    run_id = getattr(exc, "run_id", None) or (getattr(args, "run", None) if args.command in RESUMABLE else None)
    if run_id:
        return f"Interrupted; the last checkpoint of run {run_id} is saved. Resume with `{shared.PROG} resume {run_id}`."
    return f"Interrupted; every step before it was saved: `{shared.PROG} runs` lists the saved runs."


def _dispatch(args: argparse.Namespace, argv: Sequence[str], opened: list[Any]) -> int:
    """Open the home the command needs (none for ``store``; no log for ``doctor`` and ``init``)
    and run the command's handler; the home's log is appended to ``opened`` once open."""
    # the home and the log are imported here, not at the top: `--help` and a plain `runs` never load them
    from core.api.home import Home, locate_home  # lazy: not for --help
    from core.engine.executor import SimulatedCrash  # lazy: not for --help
    from core.ground.log import command_log  # lazy: not for --help

    if args.command == "store":
        return operator.cmd_store(args)
    if args.command == "completion":
        sys.stdout.write(operator.completion_script(args.shell))
        return EXIT_OK
    where = locate_home(getattr(args, "home", None), getattr(args, "store", None))
    if args.command in READ_ONLY and args.command != "doctor":
        where.require_existing()
    if args.command == "doctor":
        return operator.cmd_doctor(where, args)
    root = where.path
    _read_fds_early(args)
    if args.command == "init":
        return team.cmd_init(where, args)
    # a lost runs.sqlite (missing or empty in a used home) is made again only to be reset or restored over
    afresh = args.command == "restore" or (args.command == "reset" and bool(getattr(args, "all", False)))
    home = Home(root, read_only=args.command in READ_ONLY, store=where.store.url, afresh=afresh)
    log = command_log(root)
    opened.append(log)
    log.info("%s %s", args.command, " ".join(ascii(a) for a in argv))  # the log masks the --store URL's password
    try:
        code = int(args.func(home, args))
    except SimulatedCrash as crash:
        log.info("simulated crash: %s", crash)
        _print(f"The process stopped: {crash}. Resume with: {shared.PROG} resume {crash.run_id}")
        sys.stdout.flush()
        return EXIT_CRASH
    log.info("%s ended with exit code %d", args.command, code)
    _say_log_problem(log)
    return code


def _say_log_problem(log: Any) -> None:
    """Say once, on stderr, that the home's log could not be written (:func:`core.ground.log.log_problem`)."""
    if log is None:
        return
    from core.ground.log import log_problem  # lazy: not for --help

    problem = log_problem(log)
    if problem:
        print(problem, file=sys.stderr)


def _read_fds_early(args: argparse.Namespace) -> None:
    """Read ``--passphrase-fd``, ``--owner-passphrase-fd`` and ``--code-fd`` before the home
    opens any file (:func:`core.engine.signing.read_fd_early`): a descriptor number the home's
    own files could take next must be read before they are opened.

    Raises:
        BadArgument: a descriptor that is not open, cannot be read or holds no UTF-8 text (exit 2).
    """
    fds = [getattr(args, name, None) for name in ("passphrase_fd", "owner_passphrase_fd", "code_fd")]
    if not any(fd is not None for fd in fds):
        return
    from core.engine.signing import read_fd_early  # lazy: not for --help

    for fd in fds:
        if fd is not None:
            try:
                read_fd_early(fd)
            except ResolverError as exc:
                raise BadArgument(str(exc)) from None


def _runs_light(args: argparse.Namespace) -> int | None:
    """``resolver runs`` on a store already in the current format, without importing the whole
    home (:mod:`core.api.listing`); None to take the ordinary path."""
    from core.api.listing import listing_home  # lazy: not for --help
    from core.ground.homepath import locate_home  # lazy: not for --help

    try:
        where = locate_home(getattr(args, "home", None), getattr(args, "store", None))
        home = listing_home(where.path) if where.store.url is None else None
        if home is None:
            return None
        return int(approver.cmd_runs(home, args))  # cmd_runs reads home.queue only
    except ResolverError as exc:
        return _said(exc)


def entry(prog: str = "resolver") -> None:
    """Console-script entry point. A closed pipe (``resolver runs | head``) ends quietly."""
    try:
        code = main(prog=prog)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    sys.exit(code)
