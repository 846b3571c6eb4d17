"""The ``resolver`` command line (also ``python -m core``).

Every command is a thin face on core: writes through :class:`core.home.Home`, reads through
its read side ``home.queue`` (:class:`core.queue.ApprovalQueue`), refusals from
:func:`core.rulebook.offers`. Modules are imported by the command that needs them, so
``resolver --help`` loads neither pydantic nor SQLite. Expected errors print one sentence on
stderr and exit 1, never a traceback; a simulated crash (``--interrupt``) exits 3.

``Next:`` and ``Resume with:`` lines name the command the way it was invoked: ``resolver`` for
the installed command and ``python -m core``, ``python -m resolver`` for the lesson's
``python -m resolver`` (the ``prog`` of :func:`main`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

from core.errors import ResolverError

if TYPE_CHECKING:
    from core.home import Home
    from core.rulebook import Action
    from core.state import TaskState

# The parser's choices, spelled here so that ``resolver --help`` imports neither pydantic nor
# SQLite; tests/test_cli.py checks they equal core.state.STATUSES and core.data.ROLES.
STATUSES = ("waiting_approval", "executing", "running", "handed_to_person", "stopped", "done")
ROLES = ("agent", "team_lead", "grace")

EXIT_ERROR = 1
EXIT_CRASH = 3

PROG = "resolver"
"""The command as invoked, for ``Next:`` and ``Resume with:`` lines (set by :func:`main`)."""


def _print(lines: Sequence[str] | str = "") -> None:
    if isinstance(lines, str):
        lines = [lines]
    for line in lines:
        print(line)


def _status(state: TaskState) -> None:
    _print(f"Status: {state.status}")


def _show_request(state: TaskState) -> None:
    """The approval request, then the command that approves it with the role it needs."""
    from core.rulebook import needed_role
    from core.views import approval_request

    _print(approval_request(state))
    _print(["", f"Next: {PROG} approve {state.run_id} --as {needed_role(state) or 'agent'}"])


def _show_run_outcome(state: TaskState) -> None:
    """After a loop: the outcome line, then the request and the next command, or the end."""
    from core.runner import outcome_line
    from core.views import safe_text

    if state.proposal is None:
        _print(f"Run {state.run_id}: {state.status} after {state.step} step(s).")
        _status(state)
        return
    _print(f"Outcome: {outcome_line(state)}")
    if state.status == "waiting_approval":
        _show_request(state)
        return
    _print([f"Rule {safe_text(state.proposal.rule)}: {safe_text(state.proposal.reason)}"])
    if state.proposal.reply_draft:
        _print(["Reply draft:"] + ["  " + line for line in safe_text(state.proposal.reply_draft).splitlines()])
    _status(state)


def _refuse(home: Home, run_id: str, action: Action, role: str) -> None:
    """Refuse with the rulebook's sentence (the one the app shows) when ``action`` is not
    offered to ``role`` on the run. Raises ApprovalRefused."""
    from core.errors import ApprovalRefused
    from core.rulebook import Approver, offers

    why = offers(home.queue.load(run_id), Approver(role))[action]
    if why:
        raise ApprovalRefused(why)


# -- commands ----------------------------------------------------------------------------------


def cmd_run(home: Home, args: argparse.Namespace) -> int:
    from core.checkpoint import crash_point

    state = home.run(args.task, args.variant, args.model, args.repeat, args.run_id, on_step=lambda s: crash_point("step"))
    _show_run_outcome(state)
    return 0


def cmd_runs(home: Home, args: argparse.Namespace) -> int:
    """Print the runs page by page as they are read (``--json``: one JSON array, streamed)."""
    import json
    from dataclasses import asdict

    from core.views import safe_text

    shown = 0
    limit = args.limit or None
    if args.json:
        print("[", end="")
    for page in home.queue.pages(args.status, search=args.search, limit=min(1000, limit or 1000)):
        rows = page.rows[: limit - shown] if limit else page.rows
        for r in rows:
            if args.json:
                print(("," if shown else "") + "\n" + json.dumps(asdict(r), indent=1), end="")
            else:
                mark = "" if r.state_ok else "  (corrupt checkpoint)"
                print(f"{r.run_id:<40} {r.status:<17} {r.updated_at}{mark}")
            shown += 1
        sys.stdout.flush()
        if limit and shown >= limit:
            break
    if args.json:
        print("\n]" if shown else "]")
        return 0
    if not shown:
        if args.status or args.search:
            _print("No runs match" + (f" status {args.status}" if args.status else "") + (" and" if args.status and args.search else "")
                   + (f" {safe_text(args.search)!r}" if args.search else "") + f"; {home.queue.total()} run(s) saved in all.")
        else:
            _print("No saved runs. Start one with `resolver run T-65273`.")
    return 0


def cmd_resume(home: Home, args: argparse.Namespace) -> int:
    from core.checkpoint import crash_point
    from core.rulebook import nothing_to_resume
    from core.views import after_resume

    done = home.resume(args.run, on_step=lambda s: crash_point("step"))
    if done.kind == "final":
        _print(nothing_to_resume(done.state))
        return 0
    _print(f"Resuming {args.run} (status {done.before})")
    if done.kind == "continued":
        _show_run_outcome(done.state)
    elif done.kind == "request":
        _show_request(done.state)
    else:
        _print(after_resume(done.kind, done.before, done.state))
        _status(done.state)
    return 0


def cmd_approve(home: Home, args: argparse.Namespace) -> int:
    from core.views import after_approve

    _refuse(home, args.run, "approve", args.role)
    state = home.approve(args.run, args.role, args.name, args.digest, interrupt=args.interrupt)
    _print(after_approve(state))
    _status(state)
    return 0


def cmd_reject(home: Home, args: argparse.Namespace) -> int:
    from core.views import after_reject

    if args.reason and args.reason.strip():
        _refuse(home, args.run, "reject", args.role)
    state = home.reject(args.run, args.role, args.reason, args.name, args.digest)
    _print(after_reject(state))
    _status(state)
    return 0


def cmd_show(home: Home, args: argparse.Namespace) -> int:
    from core.views import proposal_record, status_lines

    if args.run is None:
        _print(f"Home: {home.root} ({home.kind})")
        return 0
    state = home.queue.load(args.run)  # the same status text as the app's pane (core.views)
    _print(proposal_record(state))
    _print(["", f"Status: {state.status}", *status_lines(state), f"Home: {home.kind}"])
    return 0


def cmd_trace(home: Home, args: argparse.Namespace) -> int:
    lines = home.queue.trace(args.run)
    _print(f"Trace of {args.run}: {len(lines)} event(s)")
    _print(lines)
    return 0


def cmd_diff(home: Home, args: argparse.Namespace) -> int:
    _print(home.queue.compare(args.run_a, args.run_b)[1])
    return 0


def cmd_changes(home: Home, args: argparse.Namespace) -> int:
    changes = home.queue.changes()
    _print(f"{len(changes)} change(s) in the practice world since the last reset")
    _print([f"  {c['at']}  {c['line']}" for c in changes])
    return 0


def cmd_reset(home: Home, args: argparse.Namespace) -> int:
    from core.homekind import require_practice

    require_practice(home.root, "`reset`")
    if args.run:
        home.delete(args.run)
        _print(f"Deleted run {args.run}.")
        return 0
    n = home.reset(args.all)
    _print(f"Deleted {n} saved run(s)." + (" Rebuilt the practice world from data/." if args.all else ""))
    return 0


def cmd_manual_refund(home: Home, args: argparse.Namespace) -> int:
    result = home.manual_refund(args.operation, args.order, args.amount, args.reason_code, args.payment)
    _print(f"Refunded by hand: {result['refund_id']} {result['amount']} CAD of {result['payment_id']} on {result['order_id']} (operation {args.operation})")
    return 0


def cmd_clock(home: Home, args: argparse.Namespace) -> int:
    from core.clock import FileClock, iso, parse_time
    from core.homekind import check_clock_command

    check_clock_command(home.root, args.clock_cmd)
    if home.kind == "shop":  # real time only: set and advance were refused above
        _print(f"Clock: {iso(home.clock.now())} (real)")
        return 0
    clock = FileClock(home.root / "clock.json")
    if args.clock_cmd == "set":
        try:
            clock.set(parse_time(args.when))
        except ValueError:
            raise ResolverError(f"Cannot read the time {args.when!r}: use ISO 8601, e.g. 2026-10-12T09:00:00-04:00.") from None
    elif args.clock_cmd == "advance":
        clock.advance(parse_duration(args.duration))
    elif args.clock_cmd == "real":
        clock.real()
    state = "simulated" if clock.simulated else "real"
    _print(f"Clock: {iso(clock.now())} ({state})")
    return 0


def parse_duration(text: str) -> timedelta:
    """``2d``, ``3h``, ``90m``, ``45s`` or combinations like ``2d16h``; ``back 1d`` goes
    backwards (a leading ``-`` would read as an option). Raises ResolverError."""
    import re

    parts = re.fullmatch(r"\s*(back\s+)?(?:(\d+)d)?\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s)?\s*", text or "")
    if not parts or not any(parts.groups()[1:]):
        raise ResolverError(f"Cannot read the duration {text!r}: use e.g. 2d16h, 90m, 45s or 'back 1d'.")
    d, h, m, s = (int(x or 0) for x in parts.groups()[1:])
    delta = timedelta(days=d, hours=h, minutes=m, seconds=s)
    return -delta if parts.group(1) else delta


def cmd_tui(home: Home, args: argparse.Namespace) -> int:
    argv = [sys.executable, "-m", "resolver_tui", "--home", str(home.root), *args.rest]
    os.execv(sys.executable, argv)
    return 0  # not reached


def cmd_class(home: Home, args: argparse.Namespace) -> int:
    from core import lesson  # the trainer kit; imported only when asked for

    return lesson.main(home, args)


# -- the parser ----------------------------------------------------------------------------------


def build_parser(prog: str = "resolver") -> argparse.ArgumentParser:
    """The ``resolver`` argument parser (every subcommand also takes ``--home DIR``)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--home", default=argparse.SUPPRESS, help="home folder (default: $RESOLVER_HOME or ./work)")
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Checkpoint, approve and execute the Larkfield support agent's work exactly once.",
        parents=[common],
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("run", parents=[common], help="run the agent on a ticket (a new run)")
    p.add_argument("task", metavar="TASK", help="ticket ID, e.g. T-65273")
    p.add_argument("--variant", default="agent", choices=["agent", "agent_structured"])
    p.add_argument("--model", default=None, help="chat-small (default for agent) or chat-strong")
    p.add_argument("--repeat", type=int, default=None, help="which recorded run to replay (1-3)")
    p.add_argument("--run-id", default=None, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("runs", parents=[common], help="list saved runs")
    p.add_argument("--status", choices=STATUSES)
    p.add_argument("--search", help="filter by ticket, order, customer or run ID")
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_runs)

    for name, func, text in (("resume", cmd_resume, "continue a saved run from its checkpoint"),
                             ("trace", cmd_trace, "the events of a run")):
        p = sub.add_parser(name, parents=[common], help=text)
        p.add_argument("run", metavar="RUN")
        p.set_defaults(func=func)

    p = sub.add_parser("show", parents=[common], help="the request, decision and operations of a run; without RUN, the home and its kind")
    p.add_argument("run", metavar="RUN", nargs="?")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("init", parents=[common], help="make the home folder (--shop: a shop home, for good)")
    p.add_argument("--shop", action="store_true", help="a shop home: real time only, the lesson's commands refused")
    p.set_defaults(func=None)

    p = sub.add_parser("approve", parents=[common], help="approve a waiting proposal and execute it")
    p.add_argument("run", metavar="RUN")
    p.add_argument("--as", dest="role", required=True, choices=ROLES)
    p.add_argument("--name")
    p.add_argument("--digest", help="the digest you read; refused if the proposal changed")
    p.add_argument("--interrupt", choices=["before-write", "after-write"],
                   help="simulate a crash: end the process just before or just after the first write (exit code 3)")
    p.set_defaults(func=cmd_approve)

    p = sub.add_parser("reject", parents=[common], help="reject a waiting proposal (hands it to a person)")
    p.add_argument("run", metavar="RUN")
    p.add_argument("--as", dest="role", required=True, choices=ROLES)
    p.add_argument("--name")
    p.add_argument("--digest")
    p.add_argument("--reason", required=True)
    p.set_defaults(func=cmd_reject)

    p = sub.add_parser("diff", parents=[common], help="compare the actions of two runs line by line")
    p.add_argument("run_a", metavar="RUN_A")
    p.add_argument("run_b", metavar="RUN_B")
    p.set_defaults(func=cmd_diff)

    p = sub.add_parser("changes", parents=[common], help="what changed in the practice world since the last reset")
    p.set_defaults(func=cmd_changes)

    p = sub.add_parser("reset", parents=[common], help="delete the saved runs (--all: rebuild the world too)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--all", action="store_true", help="also rebuild the practice world from data/")
    what.add_argument("--run", metavar="RUN", help="delete only this run (a corrupt one, say)")
    p.set_defaults(func=cmd_reset)

    p = sub.add_parser("manual-refund", parents=[common], help="refund by hand, outside any run (the weekend phone call)")
    p.add_argument("operation", metavar="OPERATION_ID", help="idempotency key, e.g. manual-1")
    p.add_argument("order", metavar="ORDER")
    p.add_argument("amount", metavar="AMOUNT", help="CAD, e.g. 119.00")
    p.add_argument("reason_code", metavar="REASON_CODE", help="e.g. RFD-DOUBLE")
    p.add_argument("payment", metavar="PAYMENT")
    p.set_defaults(func=cmd_manual_refund)

    p = sub.add_parser("clock", parents=[common], help="the trainer's clock: show, set, advance, real")
    csub = p.add_subparsers(dest="clock_cmd", required=True)
    csub.add_parser("show", parents=[common])
    c = csub.add_parser("set", parents=[common])
    c.add_argument("when", metavar="WHEN", help="ISO 8601, e.g. 2026-10-12T09:00:00-04:00")
    c = csub.add_parser("advance", parents=[common])
    c.add_argument("duration", metavar="DURATION", help="e.g. 2d16h, 90m, or 'back 1d'")
    csub.add_parser("real", parents=[common])
    p.set_defaults(func=cmd_clock)

    p = sub.add_parser("tui", parents=[common], help="open the approvals app (resolver-tui)")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="options for resolver-tui (--as, --name, --demo ...)")
    p.set_defaults(func=cmd_tui)

    p = sub.add_parser("class", parents=[common], help="the trainer's Friday-to-Monday lesson, moment by moment")
    p.add_argument("moment", choices=["friday", "crash-in-loop", "crash-before-write", "crash-after-write",
                                      "weekend-call", "monday", "run-again", "all"])
    p.add_argument("--after-step", type=int, default=1)
    p.set_defaults(func=cmd_class)

    p = sub.add_parser("exercise", parents=[common], help="the exercises of seeds 000 and 001, runnable")
    p.add_argument("exercise", choices=["crash-at-step", "corrupt-checkpoint", "migrate-v1", "resume-twice", "lease-owner"])
    p.set_defaults(func=cmd_class)
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "resolver") -> int:
    """Run the CLI; returns the exit code (0 ok, 1 expected error, 3 simulated crash).
    ``prog`` is the command as invoked (``python -m resolver`` for the lesson's package)."""
    global PROG
    PROG = prog
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if getattr(args, "model", "x") is None:
        args.model = "chat-strong" if args.variant == "agent_structured" else "chat-small"
    from core.executor import SimulatedCrash
    from core.home import Home, resolve_home
    from core.homekind import init_home
    from core.views import safe_text

    try:
        root = resolve_home(getattr(args, "home", None))
        if args.command == "init":
            made = init_home(root, shop=args.shop)
            Home(root)  # builds the databases (the kind is already written)
            _print(made)
            return 0
        home = Home(root)
        return args.func(home, args)
    except SimulatedCrash as crash:
        _print(f"The process stopped: {crash}. Resume with: {PROG} resume {crash.run_id}")
        sys.stdout.flush()
        return EXIT_CRASH
    except ResolverError as exc:
        print(safe_text(exc), file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(f"Interrupted; the last checkpoint is saved. Resume with `{PROG} resume RUN`.", file=sys.stderr)
        return 130


def entry(prog: str = "resolver") -> None:
    """Console-script entry point. A closed pipe (``resolver runs | head``) ends quietly."""
    try:
        code = main(prog=prog)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    sys.exit(code)
