"""The trainers' commands: runs of the agent (``run``, ``record``), the lesson (``class``,
``exercise``), the practice world (``changes``, ``manual-refund``, ``reset``) and the trainer's
``clock``.

Each command is declared beside its handler. Modules are imported inside the handlers that need
them, so ``resolver --help`` loads neither pydantic nor SQLite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.cli import shared
from core.cli.shared import (
    _json,
    _print,
    _show_run_outcome,
    _state_json,
    check_amount,
    check_id,
)
from core.cli.tree import TRAINERS, arg, choice, command, group, leaf, opt
from core.ground.errors import BadArgument

if TYPE_CHECKING:
    import argparse

    from core.api.home import Home
    from core.models.model import LiveRoute


VARIANTS = ("agent", "agent_structured")
MOMENTS = (
    "friday",
    "crash-in-loop",
    "crash-before-write",
    "crash-after-write",
    "resume-crashed",
    "weekend-call",
    "monday",
    "run-again",
    "all",
)
"""``class``: the lesson's moments (:mod:`core.trainer.lesson`), spelled here so ``--help`` imports no lesson."""
EXERCISES = ("crash-at-step", "corrupt-checkpoint", "migrate-v1", "resume-twice", "lease-owner")
"""``exercise``: the exercises of seeds 000 and 001."""


@command(
    "run",
    TRAINERS,
    "run the agent on a ticket (a new run)",
    example="T-65273",
    params=lambda: [
        arg("task", "TASK", "ticket ID, e.g. T-65273"),
        opt("--variant", default="agent", type=choice(VARIANTS), help="the agent: agent (free text) or agent_structured"),
        opt(
            "--model",
            default=None,
            help="chat-small (default for agent) or chat-strong (recorded), or a live route: a [models.NAME] "
            "table of the config file, or the name of the one --base-url describes",
        ),
        opt("--repeat", type=int, default=None, help="which recorded run to replay (1-3)"),
        opt("--base-url", default=None, help="a live OpenAI-compatible chat-completions server, e.g. http://127.0.0.1:8000/v1"),
        opt("--model-name", default=None, help="with --base-url: the model name the server knows"),
        opt("--api-key-env", default=None, metavar="VAR", help="with --base-url: the environment variable holding the key"),
        opt(
            "--price-as",
            default=None,
            metavar="MODEL",
            help="with --base-url: price the tokens as this model of data/models.json",
        ),
        opt("--run-id", default=None, hidden=True, help="the run's ID (the class and the tests name their runs)"),
    ],
)
def cmd_run(home: Home, args: argparse.Namespace) -> int:
    from core.contract.store import crash_point  # lazy: not for --help

    if args.run_id is not None:
        check_id(args.run_id, "run ID")
    state = home.run(
        args.task,
        args.variant,
        args.model,
        args.repeat,
        args.run_id,
        on_step=lambda s: crash_point("step"),
        live=_live_route(args),
    )
    if args.json:
        from core.engine.runner import outcome_line  # lazy: not for --help

        _json(_state_json(state, outcome=outcome_line(state) if state.proposal else None))
        return 0
    _show_run_outcome(home, state)
    return 0


@command(
    "record",
    TRAINERS,
    "run a ticket on a live model and keep its turns as a recording in the home",
    example="T-65273 --model local",
    params=lambda: [
        arg("task", "TASK", "ticket ID, e.g. T-65273"),
        opt("--variant", default="agent", type=choice(VARIANTS), help="the agent: agent (free text) or agent_structured"),
        opt("--model", required=True, help="a live route: a [models.NAME] table of the config file, or --base-url's name"),
        opt("--base-url", default=None, help="as for run"),
        opt("--model-name", default=None, help="as for run"),
        opt("--api-key-env", default=None, metavar="VAR", help="as for run"),
        opt("--price-as", default=None, metavar="MODEL", help="as for run; the recording's model"),
    ],
)
def cmd_record(home: Home, args: argparse.Namespace) -> int:
    """``resolver record TASK --model ROUTE``: a live run, then its turns as a recording in the
    home (:meth:`core.api.home.Home.record`). Raises BadArgument when ROUTE is not a live route."""
    from core.contract.store import crash_point  # lazy: not for --help
    from core.engine.runner import outcome_line  # lazy: not for --help

    live = _live_route(args)
    if live is None:
        raise BadArgument(
            f"resolver record runs a live model, and {args.model} is not one: name a [models.NAME] table of the "
            "config file, or describe the route with --base-url, --model-name and --api-key-env."
        )
    done = home.record(args.task, live, args.variant, on_step=lambda s: crash_point("step"))
    r = done.recording
    replay = f"{shared.PROG} run {args.task} --variant {r.variant} --model {r.model} --repeat {r.repeat}"
    if args.json:
        _json(
            {
                "run_id": done.state.run_id,
                "outcome": outcome_line(done.state),
                "file": str(done.path),
                "variant": r.variant,
                "model": r.model,
                "repeat": r.repeat,
                "turns": len(r.turns),
                "replay": replay,
            }
        )
        return 0
    _print(
        [
            f"Run {done.state.run_id}: {outcome_line(done.state)}",
            f"Recorded as {args.task} {r.variant}/{r.model}#{r.repeat} ({len(r.turns)} turns) in {done.path}.",
            f"Replay it with: {replay}",
        ]
    )
    return 0


def _live_route(args: argparse.Namespace) -> LiveRoute | None:
    """The live route ``resolver run`` names: from ``--base-url`` (with ``--model-name`` and
    ``--api-key-env``; ``--model`` is the route's name), else the config file's
    ``[models.MODEL]`` table, else None (a recorded model).

    Raises:
        BadArgument: a flag missing or bad, or a config table that does not read.
    """
    from core.ground.data import load_prices  # lazy: not for --help
    from core.models.model import LiveRoute, load_routes  # lazy: not for --help

    flags = {"--model-name": args.model_name, "--api-key-env": args.api_key_env, "--price-as": args.price_as}
    if args.base_url is None:
        given = [f for f, v in flags.items() if v is not None]
        if given:
            raise BadArgument(f"{given[0]} describes a live model, which needs --base-url too.")
        if args.model in load_prices():
            return None
        return load_routes().get(args.model)
    missing = [f for f in ("--model-name", "--api-key-env") if flags[f] is None]
    if missing:
        raise BadArgument(f"A live model on the command line needs {' and '.join(missing)} beside --base-url.")
    return LiveRoute(
        name=args.model,
        base_url=args.base_url,
        model=args.model_name,
        key_env=args.api_key_env,
        price=args.price_as or "",
    )


@command("changes", TRAINERS, "what changed in the practice world since the last reset", example="--json")
def cmd_changes(home: Home, args: argparse.Namespace) -> int:
    changes = home.queue.changes()
    if args.json:
        _json(changes)
        return 0
    from core.api.views import changes_lines  # lazy: not for --help

    _print(changes_lines(changes))
    return 0


@command(
    "reset",
    TRAINERS,
    "delete the saved runs (--all: rebuild the world too)",
    example="--all",
    params=lambda: [
        opt("--all", is_flag=True, default=False, help="also rebuild the practice world from data/"),
        opt("--run", metavar="RUN", default=None, help="delete only this run (a corrupt one, say)"),
    ],
)
def cmd_reset(home: Home, args: argparse.Namespace) -> int:
    from core.api.homekind import require_practice  # lazy: not for --help

    require_practice(home.root, "`reset`", home.kind)
    if args.run:
        home.delete(args.run, audited=True)
        if args.json:
            _json({"deleted_runs": 1, "run_id": args.run, "world_rebuilt": False})
            return 0
        _print(f"Deleted run {args.run}.")
        return 0
    n = home.reset(args.all)
    if args.json:
        _json({"deleted_runs": n, "run_id": None, "world_rebuilt": bool(args.all)})
        return 0
    _print(f"Deleted {n} saved run(s)." + (" Rebuilt the practice world from data/." if args.all else ""))
    return 0


@command(
    "manual-refund",
    TRAINERS,
    "refund by hand, outside any run (the weekend phone call)",
    example="manual-1 LK-507862 119.00 RFD-DOUBLE PAY-507862-2",
    params=lambda: [
        arg("operation", "OPERATION_ID", "idempotency key, e.g. manual-1"),
        arg("order", "ORDER", "the order, e.g. LK-507862"),
        arg("amount", "AMOUNT", "CAD, e.g. 119.00"),
        arg("reason_code", "REASON_CODE", "e.g. RFD-DOUBLE"),
        arg("payment", "PAYMENT", "the payment refunded, e.g. PAY-507862-2"),
    ],
)
def cmd_manual_refund(home: Home, args: argparse.Namespace) -> int:
    check_id(args.operation, "operation ID")
    check_amount(args.amount)
    result = home.manual_refund(args.operation, args.order, args.amount, args.reason_code, args.payment)
    if args.json:
        _json({**result, "operation_id": args.operation})
        return 0
    _print(
        f"Refunded by hand: {result['refund_id']} {result['amount']} CAD of {result['payment_id']} on {result['order_id']} (operation {args.operation})"
    )
    return 0


@group(
    "clock",
    TRAINERS,
    "the trainer's clock: show, set, advance, real",
    example="set 2026-10-09T17:00:00-04:00",
    dest="clock_cmd",
    actions=lambda: [
        leaf("show", "the clock's time, and whether it is simulated", example=""),
        leaf(
            "set",
            "set the simulated clock to a time",
            example="2026-10-12T09:00:00-04:00",
            params=[arg("when", "WHEN", "ISO 8601, e.g. 2026-10-12T09:00:00-04:00")],
        ),
        leaf(
            "advance",
            "move the simulated clock on (or back)",
            example="2d16h",
            params=[arg("duration", "DURATION", "e.g. 2d16h, 90m, or 'back 1d'")],
        ),
        leaf("real", "back to real time", example=""),
    ],
)
def cmd_clock(home: Home, args: argparse.Namespace) -> int:
    """``clock show|set|advance|real``. A time that cannot be read, or that ``set`` or ``advance``
    would take outside the supported range (:func:`core.ground.clock.supported`), is a bad value: exit
    2 with its sentence, ``clock.json`` untouched. A damaged ``clock.json`` is exit 1."""
    from core.api.homekind import check_clock_command  # lazy: not for --help
    from core.ground.clock import TimeOutOfRange, iso, parse_duration, parse_time  # lazy: not for --help

    check_clock_command(home.root, args.clock_cmd, home.kind)
    if home.kind == "shop":  # real time only: set and advance were refused above
        if args.json:
            _json({"now": iso(home.clock.now()), "simulated": False})
            return 0
        _print(f"Clock: {iso(home.clock.now())} (real)")
        return 0
    clock = home.trainer_clock()
    if args.clock_cmd == "set":
        try:
            when = parse_time(args.when)
        except ValueError:
            raise BadArgument(f"Cannot read the time {args.when!r}: use ISO 8601, e.g. 2026-10-12T09:00:00-04:00.") from None
        try:
            clock.set(when)
        except TimeOutOfRange as exc:
            raise BadArgument(str(exc)) from None
    elif args.clock_cmd == "advance":
        delta = parse_duration(args.duration)
        clock.now()  # a damaged clock.json or a clock run out of range is the file's error (exit 1), not the value's
        try:
            clock.advance(delta)
        except TimeOutOfRange as exc:
            raise BadArgument(str(exc)) from None
    elif args.clock_cmd == "real":
        clock.real()
    if args.json:
        _json({"now": iso(clock.now()), "simulated": bool(clock.simulated)})
        return 0
    state = "simulated" if clock.simulated else "real"
    _print(f"Clock: {iso(clock.now())} ({state})")
    return 0


@command(
    "class",
    TRAINERS,
    "the trainer's Friday-to-Monday lesson, moment by moment",
    example="friday",
    params=lambda: [
        arg("moment", "MOMENT", "the lesson's moment, or all of them in turn", type=choice(MOMENTS)),
        opt("--after-step", type=int, default=1, help="crash-in-loop: the step after which the loop stops"),
    ],
)
@command(
    "exercise",
    TRAINERS,
    "the exercises of seeds 000 and 001, runnable",
    example="crash-at-step",
    params=lambda: [arg("exercise", "EXERCISE", "the exercise to play", type=choice(EXERCISES))],
)
def cmd_class(home: Home, args: argparse.Namespace) -> int:
    from core.trainer import lesson  # lazy: the trainer kit; imported only when asked for

    lines = lesson.play(home, args)
    if args.json:
        key = "exercise" if getattr(args, "exercise", None) else "moment"
        _json({key: getattr(args, key), "lines": lines})
        return 0
    _print(lines)
    return 0
