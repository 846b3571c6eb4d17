"""The approvers' commands: the queue (``runs``, ``show``, ``trace``, ``diff``, ``audit``,
``watch``), the decisions (``approve``, ``reject``, ``refresh``, ``resume``), the marks on a
waiting run (``claim``, ``handover``, ``snooze``) and the app (``tui``).

Each command is declared beside its handler; a handler takes the home and the parsed command
line, prints its result (``--json``: the README's stable keys) and returns its exit code.
Modules are imported inside the handlers that need them, so ``resolver --help`` loads neither
pydantic nor SQLite.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

import click

from core.cli import shared
from core.cli.shared import (
    ROLES,
    SORTS,
    STATUSES,
    _ask,
    _ended,
    _json,
    _print,
    _show_request,
    _show_run_outcome,
    _state_json,
    _status,
    decider_options,
    marker_options,
    passphrase_fd,
)
from core.cli.tree import APPROVERS, arg, choice, command, opt
from core.ground.errors import ApprovalRefused, BadArgument, ResolverError, StoreBusy, StoreUnreachable, WorldChanged
from core.ground.exitcodes import EXIT_ERROR, EXIT_OK
from core.ground.safetext import block, name_key, nfc, not_one_line, not_plain_name, one_line, safe_lines, safe_text

if TYPE_CHECKING:
    import argparse

    from core.api.home import Home
    from core.engine.approvers import Unlocked
    from core.engine.rulebook import Approver
    from core.engine.watch import Position
    from core.ground.state import TaskState, WorldSeen


@command(
    "runs",
    APPROVERS,
    "list saved runs",
    example="--status waiting_approval",
    params=lambda: [
        opt("--status", type=choice(STATUSES), default=None, help="only the runs of this status"),
        opt("--search", default=None, help="filter by ticket, order, customer or run ID"),
        opt("--limit", type=int, default=0, help="list at most this many runs (default 0: all)"),
        opt(
            "--sort",
            type=choice(SORTS),
            default=None,
            help="age (oldest change first), updated (newest first), created, amount (largest first), role (highest first); "
            "default: age for waiting runs, else updated",
        ),
        opt("--mine", is_flag=True, default=False, help="only the waiting runs this approver may approve (with --as or --name)"),
        opt("--as", "role", type=choice(ROLES), default=None, help="practice home: the role of --mine"),
        opt(
            "--name",
            default=None,
            help="the approver of --mine (shop home: their role from the registry); default: the config file's name",
        ),
    ],
)
def cmd_runs(home: Home, args: argparse.Namespace) -> int:
    """Print the runs page by page as they are read (``--json``: one JSON array, streamed). The
    light listing (:class:`core.api.listing.ListingQueue`) reads the four printed columns as tuples
    for the text lines, never a summary per run; ``--json`` prints every column of each summary. A
    waiting listing ends with a line saying how many waiting runs the reader may decide are set
    aside, handed to someone else (``--mine``) or claimed by someone else, when any is
    (:class:`core.engine.marks.MarkedAway`): a mark never takes a run out of a queue silently."""
    from core.api.listing import ListingQueue, PrintedPage  # lazy: not for --help

    shown = 0
    if args.limit < 0:
        raise BadArgument(f"--limit {args.limit} is negative: give the number of runs to list, or 0 for all.")
    limit = args.limit or None
    status, max_role = args.status, _mine_role(home, args)
    if max_role is not None and status is None:
        status = "waiting_approval"  # mine: the waiting runs this approver may approve, as the app's filter
    if args.json:
        print("[", end="")
    size = min(1000, limit or 1000)
    queue = home.queue
    marks, now = queue.marks_now()  # the claims, hand-overs and snoozes that stand now
    pages: Iterator[Any]
    if isinstance(queue, ListingQueue) and not args.json and not marks:  # no marks to show or filter by
        pages = queue.printed_pages(status, search=args.search, limit=size, sort=args.sort)
    else:
        pages = queue.pages(status, search=args.search, limit=size, sort=args.sort, max_role=max_role)
    for page in pages:
        # one write per page: 100,000 print calls cost more than the reads
        if isinstance(page, PrintedPage):  # the light listing's tuples (run_id, status, updated_at, state_ok, key)
            printed = page.rows[: limit - shown] if limit else page.rows
            lines = [f"{run:<40} {st:<17} {at}{'' if ok else CORRUPT}" for run, st, at, ok, _key in printed]
        else:
            rows = page.rows
            if marks:
                rows = [r for r in rows if not _marked_out(marks.get(r.run_id), r.status, status, max_role, args.name, now)]
            lines = _summary_lines(rows[: limit - shown] if limit else rows, marks, now, args.json, shown)
        shown += len(lines)
        sys.stdout.write("".join(lines) if args.json else safe_lines(lines))  # JSON escapes controls itself
        sys.stdout.flush()
        if limit and shown >= limit:
            break
    if args.json:
        print("\n]" if shown else "]")
        return 0
    away = None
    if marks and status == "waiting_approval":  # a mark never hides a run without saying so (the rulebook's rule)
        away = queue.marked_away(marks, now, max_role, args.name).line(mine=max_role is not None)
    if not shown:
        _print(_none_listed(home, args, max_role))
    if away:
        _print(away)
    return 0


CORRUPT = "  (corrupt checkpoint)"
"""After the line of a run whose checkpoint does not read."""


def _summary_lines(rows: list[Any], marks: dict[str, Any], now: Any, as_json: bool, shown: int) -> list[str]:
    """The lines of a page of summaries: JSON objects (each after a comma but the listing's
    first, ``shown`` being the count before the page), or the printed columns with the run's
    marks (:class:`core.engine.marks.RunMarks`)."""
    import json  # lazy: not for --help
    from dataclasses import asdict  # lazy: not for --help

    lines: list[str] = []
    for r in rows:
        m = marks.get(r.run_id) if r.status == "waiting_approval" else None
        if as_json:
            row = {**asdict(r), "marks": m.lines(now) if m is not None else []}  # always the key (a new user's trial)
            lines.append(("," if shown + len(lines) else "") + "\n" + json.dumps(row, indent=1))
        else:
            mark = "" if r.state_ok else CORRUPT
            mark += f"  ({m.short(now)})" if m is not None else ""
            lines.append(f"{r.run_id:<40} {r.status:<17} {r.updated_at}{mark}")
    return lines


def _none_listed(home: Home, args: argparse.Namespace, max_role: str | None) -> str:
    """The sentence of a listing that printed no run: what matched nothing, or an empty home."""

    if args.status or args.search:
        return (
            "No runs match"
            + (f" status {args.status}" if args.status else "")
            + (" and" if args.status and args.search else "")
            + (f" {safe_text(args.search)!r}" if args.search else "")
            + f"; {home.queue.total()} run(s) saved in all."
        )
    if max_role is not None:  # --mine (a new user's finding: it read like an empty home)
        return f"None of the {home.queue.total()} saved run(s) is waiting for a decision you may make."
    return "No saved runs. Start one with `resolver run T-65273`."


def _marked_out(m: Any, run_status: str, status: str | None, max_role: str | None, name: str | None, now: Any) -> bool:
    """Whether a listed run leaves the listing for its marks: a run set aside leaves
    ``--status waiting_approval`` until its time; a run handed to someone else leaves ``--mine``
    of ``--name``. ``m``: its standing :class:`core.engine.marks.RunMarks`, or None."""
    from core.engine.marks import hides_from_mine  # lazy: not for --help

    if m is None or run_status != "waiting_approval" or status != "waiting_approval":
        return False
    return bool(m.snoozed(now)) or (max_role is not None and hides_from_mine(m, name))


def _config_name(name: str | None) -> str | None:
    """``--name`` as given, else the config file's ``name`` (:func:`core.engine.approver_config.load`,
    who is at the keyboard, as the app reads it), else None. For ``runs --mine`` and ``watch``
    (a new user's trial: ``watch`` without ``--name`` ignored the file's name).

    Raises:
        ResolverError: a config file that cannot be read (its sentence).
    """
    if name:
        return name
    from core.engine.approver_config import load  # lazy: not for --help

    config = load()
    return nfc(config.name) if config else None  # names in NFC on the way in, as every face keeps them


def _mine_role(home: Home, args: argparse.Namespace) -> str | None:
    """``runs --mine``: the role whose runs are listed, from ``--as ROLE`` in a practice home or
    the approvers registry for ``--name NAME`` in a shop home (no passphrase: a listing decides
    nothing). None without ``--mine``. Raises BadArgument when ``--mine`` says nobody."""
    if not args.mine:
        if args.role or args.name:
            raise BadArgument("--as and --name go with --mine (the runs that approver may approve); add --mine.")
        return None
    from core.api.home import Home as WholeHome  # lazy: not for --help

    whole = home if isinstance(home, WholeHome) else WholeHome(home.root)
    args.name = _config_name(args.name)
    if whole.kind == "shop":
        if args.role:
            raise BadArgument("In a shop home --mine takes --name NAME (the role comes from the approvers registry), not --as.")
        if not args.name:
            raise BadArgument(
                'In a shop home --mine needs your name: --mine --name NAME (or name = "..." in the config file), '
                "and the role comes from the approvers registry."
            )
        return whole.registry().valid_entry(args.name).role
    if not args.role:
        raise BadArgument("--mine needs the approver's role in a practice home: --mine --as ROLE.")
    return str(args.role)


@command(
    "resume",
    APPROVERS,
    "continue a saved run from its checkpoint",
    example="T-65273-agent-chat-small-1",
    params=lambda: [
        arg("run", "RUN", "the run's ID, as `runs` lists it"),
        opt(
            "--accept-changes",
            is_flag=True,
            default=False,
            help="a running loop whose policy, tool schema or model route changed goes on under the new ones",
        ),
    ],
)
def cmd_resume(home: Home, args: argparse.Namespace) -> int:
    from core.api.views import after_resume  # lazy: not for --help
    from core.contract.store import crash_point  # lazy: not for --help
    from core.engine.rulebook import nothing_to_resume  # lazy: not for --help

    done = home.resume(args.run, on_step=lambda s: crash_point("step"), accept_changes=args.accept_changes)
    if args.json:
        _json(_state_json(done.state, resumed=done.kind, before=done.before))
        return _ended(done.state) if done.kind == "executed" else EXIT_OK
    if done.kind == "final":
        _print(nothing_to_resume(done.state))
        return 0
    _print(f"Resuming {args.run} (status {done.before})")
    if done.kind == "continued":
        _show_run_outcome(home, done.state)
    elif done.kind == "request":
        _show_request(home, done.state)
    else:
        _print(after_resume(done.kind, done.before, done.state))
        _status(done.state)
        return _ended(done.state)
    return 0


def _decider(home: Home, args: argparse.Namespace, required: bool = True) -> Unlocked | None:
    """In a shop home, the approver named by ``--name``, unlocked with their passphrase (``--as``
    is refused there); in a practice home, None (``--as`` is required when ``required``)."""
    from core.engine.signing import read_passphrase  # lazy: not for --help

    if _named_approver(home, args, required) is None:
        return None
    return _unlock(home, args.name, read_passphrase, f"Passphrase for {args.name}: ", args.passphrase_fd)


def _unlock(home: Home, name: str, read: Callable[..., str], prompt: str, fd: int | None) -> Unlocked:
    """Unlock ``name`` in a shop home: first whether this machine holds their key at all
    (:meth:`core.engine.approvers.Registry.key_problem`), so a missing key file is said before
    a passphrase is asked; then the passphrase. Raises ApprovalRefused (one sentence)."""

    problem = home.registry().key_problem(name) if home.kind == "shop" else None
    if problem:
        raise ApprovalRefused(problem)
    return home.unlock(name, read(prompt, fd=fd))


def _named_approver(home: Home, args: argparse.Namespace, required: bool = True) -> Approver | None:
    """Who decides, before any passphrase (the cheap refusals come first, so nobody types a passphrase to be refused): in a shop
    home the approver ``--name`` names in the registry, with their role (``--as`` is refused);
    in a practice home None (``--as`` is required when ``required``).

    Raises:
        ApprovalRefused: ``--as`` or no ``--name`` in a shop home, an unknown name (with the
            nearest registered names), a revoked approver or a registry that does not verify.
        ResolverError: no ``--as`` in a practice home.
    """
    from core.engine.rulebook import Approver  # lazy: not for --help

    if home.kind != "shop":
        if required and not args.role:
            raise ResolverError("Say who decides: --as agent, --as team_lead or --as grace.")
        return None
    if args.role:
        raise ApprovalRefused(
            "--as is refused in a shop home: decide as a named approver with --name NAME "
            "(your role comes from the approvers registry)."
        )
    if not args.name:
        raise ApprovalRefused("In a shop home say who decides with --name NAME; your passphrase unlocks your key.")
    entry = home.registry().valid_entry(args.name)  # a clear sentence before asking for a passphrase
    return Approver(entry.role, entry.name)


def _show_then_confirm(
    home: Home, args: argparse.Namespace, verb: Literal["approve", "reject"], who: Approver
) -> tuple[str, WorldSeen | None]:
    """Before a decision pays: print what is decided (the actions and their amounts,
    the reply, who may approve, what changed since the agent looked, the digest and who
    decides; on stderr under ``--json``), refuse what is refused now (before any passphrase),
    then in a shop home ask ``Approve? [y/N]`` on a terminal unless ``--yes`` or ``--digest``.

    Returns the digest the decision binds to (``--digest``, else the one printed) and the
    lookups the world lines were made from. Raises ApprovalRefused: the rulebook refuses,
    approve is refused now (expired evidence, one effect per ticket, a failing precondition in
    a shop home), ``--digest`` is not the current proposal's, no terminal to ask on and neither
    ``--yes`` nor ``--digest``, or the person answered No.
    """
    from core.api.views import approve_dialog, describe, reject_dialog  # lazy: not for --help
    from core.engine.approval import digest_matches  # lazy: not for --help
    from core.engine.rulebook import offers, stale_digest  # lazy: not for --help

    shop = home.kind == "shop"
    done = {"approve": "approved", "reject": "rejected"}[verb]
    state = home.queue.view(args.run)  # what the person reads; approve() loads the run whole to write
    why = offers(state, who)[verb]
    if why:
        raise ApprovalRefused(why)
    decision = describe(state, who).decision
    if decision is None:  # pragma: no cover - offers refuses a run that is not waiting
        raise ApprovalRefused(f"Run {args.run} has nothing to {verb}.")
    seen = None
    lines: list[str] = []
    refused = None
    if verb == "approve":
        seen = home.queue.look(state)  # the approval is bound to what was shown
        lines, refused = home.queue.world_now(state, seen)
    decision = replace(decision, world=tuple(lines))
    said = approve_dialog(decision, who, question=False) if verb == "approve" else reject_dialog(decision, who)
    claimed = _claimed_by_other(home, state, who.name)
    if claimed:  # a colleague is on it; deciding anyway is allowed, after being told
        said = [claimed, "", *said]
    if verb == "reject":
        said += ["", "Reason:", *block(args.reason)]
    out = sys.stderr if args.json else sys.stdout
    print("\n".join(said) + "\n", file=out, flush=True)
    if refused:
        raise ApprovalRefused(refused)
    if args.digest is not None and not digest_matches(args.digest, decision.digest):
        raise ApprovalRefused(stale_digest(args.digest.strip(), decision.digest))
    if shop and not (args.yes or args.digest):
        if not sys.stdin.isatty():
            raise ApprovalRefused(
                f"Nothing was {done}: there is no terminal to ask on. Read the request above and pass "
                f"--digest {decision.digest[:12]} (the decision binds what you read) or --yes."
            )
        if not _ask(f"{verb.capitalize()}? [y/N] ", out):
            raise ApprovalRefused(f"Not {done}: you answered No. Nothing changed.")
    return (args.digest.strip() if args.digest else decision.digest), seen


def _claimed_by_other(home: Home, state: TaskState, name: str | None) -> str | None:
    """``Tomás is on it (claimed 12:03, until 12:33).`` when someone other than ``name`` holds a
    standing claim on ``state``'s run, else None."""

    marks = home.queue.marks(state)
    now = home.clock.now()
    line = marks.claim_line(now)
    if line is None or (name and name_key(marks.claimed_by or "") == name_key(name)):
        return None
    return str(line)


@command(
    "claim",
    APPROVERS,
    "say you are on a waiting run (--release: no longer); it lapses after claim_minutes (30)",
    example="T-65273-agent-chat-small-1 --as team_lead --name Tomás",
    params=lambda: [
        *marker_options(),
        opt("--release", is_flag=True, default=False, help="release your claim"),
    ],
)
@command(
    "handover",
    APPROVERS,
    "hand a waiting run to a named colleague with a note; it shows under their --mine",
    example='T-65273-agent-chat-small-1 --as team_lead --name Tomás --to Ana --note "the customer calls at 3"',
    params=lambda: [
        *marker_options(),
        opt("--to", required=True, metavar="NAME", help="the colleague (shop home: an approver of the registry)"),
        opt("--note", required=True, metavar="TEXT", help="what they should look at (one line)"),
    ],
)
@command(
    "snooze",
    APPROVERS,
    "set a waiting run aside until a time (never past its request's expiry)",
    example="T-65273-agent-chat-small-1 --as team_lead --name Tomás --until 2h",
    params=lambda: [
        *marker_options(),
        opt("--until", required=True, metavar="TIME", help="ISO 8601 time, or a duration from now (90m, 2h)"),
    ],
)
def cmd_mark(home: Home, args: argparse.Namespace) -> int:
    """``claim RUN [--release]``, ``handover RUN --to NAME --note TEXT``, ``snooze RUN --until
    TIME`` (:mod:`core.engine.marks`): checked as a decision is (``--as`` in a practice home,
    ``--name`` and the passphrase in a shop home), recorded in the audit, signed in a shop home.
    A claim, a hand-over or a snooze by a role that may not decide the run, or a hand-over to
    such a colleague, is refused with the rulebook's sentence (exit 4, as a refused decision;
    in a shop home before the passphrase is asked)."""

    said = not_plain_name(args.name)
    if said:
        raise ApprovalRefused(said.replace("Nothing was decided", "Nothing was marked"))
    kind = args.command
    extra: dict[str, Any] = {}
    if kind == "claim" and args.release:
        kind = "release"
    elif kind == "snooze":
        from core.engine.marks import mark_time  # lazy: not for --help

        extra["until"] = mark_time(args.until, home.clock.now())
    elif kind == "handover":
        extra.update(to=args.to, note=args.note)
    who = _named_approver(home, args)
    if home.kind != "shop" and not args.name:
        raise ApprovalRefused(f"Say who you are with --name NAME (and --as ROLE): a {args.command} names its maker.")
    signer = None
    if who is not None:
        from core.engine.rulebook import (  # lazy: not for --help
            may_mark,
            may_receive,
            nothing_to_mark,
        )
        from core.engine.signing import read_passphrase  # lazy: not for --help

        seen = home.queue.view(args.run)  # refused before the passphrase is asked (a trial finding)
        if seen.status != "waiting_approval" or seen.proposal is None:
            raise ApprovalRefused(nothing_to_mark(seen, kind))
        why = may_mark(seen, who.role, kind)  # the role the decision needs: the rulebook's, as the app asks it
        if why is None and kind == "handover":
            to, to_role = home.recipient(args.to)
            why = may_receive(seen, to, to_role)
        if why:
            raise ApprovalRefused(why)
        signer = home.unlock(args.name, read_passphrase(f"Passphrase for {who.name}: ", fd=args.passphrase_fd))
    marks = home.mark(kind, args.run, signer.role if signer else args.role, args.name, signer=signer, **extra)
    now = home.clock.now()
    if args.json:
        _json({"run_id": args.run, "marked": kind, "marks": marks.lines(now)})
        return 0
    done = {
        "claim": f"Claimed {args.run}.",
        "release": f"Released your claim on {args.run}.",
        "handover": f"Handed {args.run} to {one_line(marks.handed_to or '')}.",
        "snooze": f"Set {args.run} aside.",
    }[kind]
    _print([done, *marks.lines(now)])
    return 0


@command(
    "watch",
    APPROVERS,
    "print each new event of the queue for you, and run the notify command",
    example="--as team_lead --once",
    params=lambda: [
        opt("--as", "role", type=choice(ROLES), default=None, help="practice home: your role (the requests you may approve)"),
        opt(
            "--name",
            default=None,
            help="your name (hand-overs to you; in a shop home your role from the registry); default: the config file's name",
        ),
        opt("--once", is_flag=True, default=False, help="print what is new since the last time and exit"),
        opt("--interval", type=float, default=1.0, metavar="S", help="seconds between reads (default 1)"),
    ],
)
def cmd_watch(home: Home, args: argparse.Namespace) -> int:
    """``resolver watch [--as ROLE] [--name N] [--once] [--interval S]`` (:mod:`core.engine.watch`):
    print one line per event for this person (``--json``: one object per line; with ``--once``
    one list), run the config file's ``notify`` per event, keep the position in the home folder
    after each. ``--once`` prints what is new and exits. A notify command that fails stops the
    watcher with its sentence (exit 1); the next start delivers that event again.

    On a team store the watcher ``LISTEN``s (:meth:`core.api.home.Home.queue_changes`): a
    notification wakes it at once, and it still reads every ``--interval`` seconds, the safety
    net for a notification lost while its listener reconnected (and the only way on SQLite).
    A store that cannot be reached or stays locked (StoreUnreachable, StoreBusy) is said once, on
    stderr, while it lasts; the watcher keeps its position and goes on when the store answers,
    for it watches for days and a dropped connection is no reason to stop."""
    import threading  # lazy: not for --help
    import time  # lazy: not for --help

    from core.engine.watch import (  # lazy: not for --help
        LAPSE_SWEEP_S,
        Position,
        newest_event,
        notify_command,
        sweep_lapses,
    )
    from core.ground.data import load_policy  # lazy: not for --help
    from core.ground.homepath import config_path, read_config  # lazy: not for --help

    who = _watcher(home, args)
    command = notify_command(read_config(config_path()))
    position = Position.of(home.root, *who)
    if position.fresh:
        newest = newest_event(home.store)
        position.start_at(newest)
        print(f"Watching from event #{newest}: what happens from now on.", file=sys.stderr if args.json else sys.stdout)
        sys.stdout.flush()
    policy = load_policy()
    shown: list[dict[str, object]] = []
    swept = 0.0
    wake = threading.Event()
    listener = None if args.once else home.queue_changes()
    if listener is not None:  # every notification, and a reconnection (what was sent meanwhile is lost), wakes a read
        listener.start(lambda batch: wake.set(), lambda state: wake.set())
    outage = False
    try:
        while True:
            try:
                if time.monotonic() - swept >= LAPSE_SWEEP_S or args.once:  # lapses come by the hour, not the second
                    sweep_lapses(home.store, home.clock.now(), policy)
                    swept = time.monotonic()
                _deliver_new(home, args, position, who, command, shown)
            except (StoreUnreachable, StoreBusy) as exc:
                if args.once:
                    raise
                outage = _store_away(home, exc, position, outage)
            else:
                if outage:
                    home.log.info("watch: the store answers again after event #%d", position.last)
                outage = False
            if args.once:
                if args.json:
                    _json(shown)
                return 0
            wake.wait(args.interval)
            wake.clear()
    except KeyboardInterrupt:
        return 0
    finally:
        if listener is not None:
            listener.stop()


def _watcher(home: Home, args: argparse.Namespace) -> tuple[str | None, str | None]:
    """Who watches: their role (``--as`` in a practice home, the registry's in a shop home) and
    name (``--name``, else the config file's). Raises BadArgument for a bad ``--interval`` or
    ``--as`` in a shop home."""
    if args.interval <= 0:
        raise BadArgument(f"--interval {args.interval} must be a positive number of seconds, e.g. 1.")
    name = _config_name(args.name)
    if home.kind != "shop":
        return args.role, name
    if args.role:
        raise BadArgument("In a shop home watch takes --name NAME (the role comes from the approvers registry), not --as.")
    return (home.registry().valid_entry(name).role if name else None), name


def _deliver_new(
    home: Home,
    args: argparse.Namespace,
    position: Position,
    who: tuple[str | None, str | None],
    command: Any,
    shown: list[dict[str, object]],
) -> None:
    """One read of the watcher: each new event for ``who`` printed (``--once --json``: kept in
    ``shown``, printed as one list at the end), the notify command run for it, the position
    kept after each event. Raises ResolverError when the notify command fails (that event is
    delivered again at the next start)."""
    import json  # lazy: not for --help

    from core.engine.watch import new_events, relevant, run_notify  # lazy: not for --help

    for event in new_events(home.store, position):
        if relevant(event, *who):
            if args.json and args.once:
                shown.append(json.loads(event.as_json()))
            else:
                sys.stdout.write(event.as_json() + "\n" if args.json else safe_lines([event.line()]))
                sys.stdout.flush()
            why = run_notify(command, event) if command is not None else None
            if why is not None:
                if shown:
                    _json(shown)
                raise ResolverError(f"{why} The watcher stops here; its next start delivers event #{event.id} again.")
        position.deliver(event.id)


def _store_away(home: Home, exc: ResolverError, position: Position, outage: bool) -> bool:
    """A store that cannot be reached or stays locked: logged, and said on stderr once while it
    lasts (a store down for an hour is not 3,600 lines). True: the outage goes on."""
    from core.engine.watch import outage_line  # lazy: not for --help

    home.log.info("watch: %s", exc)
    if not outage:
        print(outage_line(exc, position.last), file=sys.stderr)
        sys.stderr.flush()
    return True


@command(
    "approve",
    APPROVERS,
    "approve a waiting proposal and execute it",
    example="T-65273-agent-chat-small-1 --as grace",
    params=lambda: [
        arg("run", "RUN", "the waiting run's ID, as `runs` lists it"),
        *decider_options("Approve"),
        opt(
            "--interrupt",
            type=choice(["before-write", "after-write"]),
            default=None,
            help="simulate a crash: end the process just before or just after the first write (exit code 3)",
        ),
    ],
)
def cmd_approve(home: Home, args: argparse.Namespace) -> int:
    from core.api.views import after_approve  # lazy: not for --help
    from core.engine.rulebook import Approver  # lazy: not for --help
    from core.engine.signing import read_passphrase  # lazy: not for --help

    if args.digest is not None and not args.digest.strip():
        raise BadArgument("--digest is empty: give the digest you read (the request's last line), or leave --digest out.")
    said = not_plain_name(args.name)
    if said:  # before the request is shown: a name is one line on every face
        raise ApprovalRefused(said)
    who = _named_approver(home, args) or Approver(args.role, args.name or "")
    digest, seen = _show_then_confirm(home, args, "approve", who)
    signer = None
    if home.kind == "shop":
        signer = _unlock(home, args.name, read_passphrase, f"Passphrase for {who.name}: ", args.passphrase_fd)
    role = signer.role if signer else args.role
    try:
        state = home.approve(args.run, role, args.name, digest, interrupt=args.interrupt, signer=signer, seen=seen)
    except StoreBusy as exc:
        raise StoreBusy(_after_lock(home, args.run, str(exc))) from None
    except WorldChanged as exc:
        if not args.json:
            _print([*exc.lines, ""])  # the section as it is now, then the refusal's sentence
        raise
    if args.json:
        _json(_state_json(state))
        return _ended(state)
    _print(after_approve(state))
    _status(state)
    return _ended(state)


def _after_lock(home: Home, run_id: str, sentence: str) -> str:
    """A locked database during approve: when the approval was saved (the run is executing),
    say that ``resume`` finishes the writes; approving again would be refused."""
    try:
        status = home.queue.view(run_id).status
    except ResolverError:
        return sentence
    if status != "executing":
        return sentence
    first = sentence.removesuffix("; try again.").removesuffix(".")
    return (
        f"{first}. The approval is saved and run {run_id} is executing: `{shared.PROG} resume {run_id}` finishes "
        "its writes once the lock is gone (approving again would be refused)."
    )


@command(
    "reject",
    APPROVERS,
    "reject a waiting proposal (hands it to a person)",
    example='T-65273-agent-chat-small-1 --as team_lead --reason "call the customer first"',
    params=lambda: [
        arg("run", "RUN", "the waiting run's ID, as `runs` lists it"),
        *decider_options("Reject"),
        opt("--reason", required=True, help="why (one line, kept in the audit)"),
    ],
)
def cmd_reject(home: Home, args: argparse.Namespace) -> int:
    from core.api.views import after_reject  # lazy: not for --help
    from core.engine.approval import REASON_REQUIRED  # lazy: not for --help
    from core.engine.rulebook import Approver  # lazy: not for --help
    from core.engine.signing import read_passphrase  # lazy: not for --help

    if args.digest is not None and not args.digest.strip():
        raise BadArgument("--digest is empty: give the digest you read (the request's last line), or leave --digest out.")
    said = not_plain_name(args.name)
    if said:  # before the request is shown: a name is one line on every face
        raise ApprovalRefused(said)
    if not (args.reason and args.reason.strip()):  # before any passphrase: the cheap refusals come first
        raise ApprovalRefused(REASON_REQUIRED)
    said = not_one_line(args.reason, "reason")
    if said:
        raise ApprovalRefused(said)
    who = _named_approver(home, args) or Approver(args.role, args.name or "")
    digest, _ = _show_then_confirm(home, args, "reject", who)
    signer = None
    if home.kind == "shop":
        signer = _unlock(home, args.name, read_passphrase, f"Passphrase for {who.name}: ", args.passphrase_fd)
    role = signer.role if signer else args.role
    state = home.reject(args.run, role, args.reason, args.name, digest, signer=signer)
    if args.json:
        _json(_state_json(state))
        return 0
    _print(after_reject(state))
    _status(state)
    return 0


@command(
    "show",
    APPROVERS,
    "the request, decision and operations of a run; without RUN, the home and its kind",
    example="T-65273-agent-chat-small-1",
    params=lambda: [arg("run", "RUN", "the run's ID (none: the home and its kind)", required=False, default=None)],
)
def cmd_show(home: Home, args: argparse.Namespace) -> int:
    from core.api.views import approved_vs_current, status_lines  # lazy: not for --help

    if args.run is None:
        if args.json:
            _json({"home": str(home.root), "kind": home.kind})
            return 0
        _print(f"Home: {home.root} ({home.kind})")
        return 0
    # the same status text as the app's pane (core.api.views); --json prints the whole state
    state = home.queue.load(args.run) if args.json else home.queue.view(args.run)
    if args.json:
        marks = home.queue.marks(state).lines(home.clock.now()) if state.status == "waiting_approval" else []
        _json(_state_json(state, home_kind=home.kind, request=home.queue.request(state), marks=marks))
        return 0
    if state.status == "waiting_approval" and state.proposal is not None:
        lines, refused = home.queue.world_now(state)
        _print([*lines, *([f"Approve is refused now: {refused}"] if refused else []), ""])
        marked = home.queue.marks(state).lines(home.clock.now())  # its claim, hand-over and snooze
        if marked:
            _print([*marked, ""])
    _print(home.queue.proposal(state))
    _print(["", f"Status: {state.status}", *status_lines(state), *approved_vs_current(state), f"Home: {home.kind}"])
    return 0


@command(
    "refresh",
    APPROVERS,
    "read a waiting run's evidence again (a new proposal version and digest; earlier approvals void)",
    example="T-65273-agent-chat-small-1 --as team_lead",
    params=lambda: [
        arg("run", "RUN", "the waiting run's ID"),
        opt(
            "--as",
            "role",
            type=choice(ROLES),
            default=None,
            help="practice home: the role you refresh as (recorded in the audit)",
        ),
        opt(
            "--name",
            default=None,
            help="who refreshes: recorded in the audit; in a shop home the approver, signed (asks their passphrase)",
        ),
        passphrase_fd(),
    ],
)
def cmd_refresh(home: Home, args: argparse.Namespace) -> int:
    """Read the evidence again and re-derive the preconditions: a new proposal version."""
    from core.engine.rulebook import not_decidable  # lazy: not for --help

    current = home.store.load_view(args.run)  # an unknown or settled run is said before any passphrase
    if current.status != "waiting_approval" or current.proposal is None:
        raise ApprovalRefused(not_decidable(current))
    signer = _decider(home, args, required=False)
    state = home.refresh(args.run, args.role, args.name, signer=signer)
    p = state.proposal
    if args.json:
        _json(_state_json(state, version=p.version if p else None, digest=p.digest if p else None))
        return 0
    _print(
        f"Run {state.run_id}: evidence read again; proposal version {p.version if p else '?'}, digest {p.short_digest if p else '-'}; "
        "earlier approvals are void."
    )
    _show_request(home, state)
    return 0


def _audit_verify(home: Home, as_json: bool = False) -> int:
    """``audit verify``: the hash chain, the triggers, and in a shop home each
    decision's signature and the signed ``audit.head``. Exit 1 when anything is found."""
    from core.engine.signing import verify_home_audit  # lazy: not for --help

    report = verify_home_audit(home.root, home.store, home.kind, home.world_at)
    if as_json:
        _json({"ok": report.ok, "lines": report.lines()})
        return 0 if report.ok else EXIT_ERROR
    if report.ok:
        _print(report.lines())
        return 0
    for line in report.lines():
        print(safe_text(line), file=sys.stderr)
    return EXIT_ERROR


@command(
    "trace",
    APPROVERS,
    "the events of a run",
    example="T-65273-agent-chat-small-1",
    params=lambda: [arg("run", "RUN", "the run's ID")],
)
def cmd_trace(home: Home, args: argparse.Namespace) -> int:
    lines = home.queue.trace(args.run)
    if args.json:
        _json({"run_id": args.run, "events": lines})
        return 0
    _print(f"Trace of {args.run}: {len(lines)} event(s)")
    _print(lines)
    return 0


@command(
    "diff",
    APPROVERS,
    "compare the actions of two runs line by line",
    example="T-90103-agent-chat-small-1 T-90103-agent-chat-small-2",
    params=lambda: [arg("run_a", "RUN_A", "the first run's ID"), arg("run_b", "RUN_B", "the second run's ID")],
)
def cmd_diff(home: Home, args: argparse.Namespace) -> int:
    title, lines = home.queue.compare(args.run_a, args.run_b)
    if args.json:
        _json({"run_a": args.run_a, "run_b": args.run_b, "title": title, "lines": lines})
        return 0
    _print(lines)
    return 0


@command(
    "audit",
    APPROVERS,
    "export the audit of decisions (who decided what, when, on which digest); `audit verify` checks it",
    example="verify",
    params=lambda: [
        arg(
            "run",
            "RUN|verify",
            "one run's rows; `verify` checks the hash chain, the triggers and, in a shop home, every signature",
            required=False,
            default=None,
        ),
        opt("--name", default=None, help="only the rows of this approver's decisions and refusals"),
    ],
)
def cmd_audit(home: Home, args: argparse.Namespace) -> int:
    """``audit [RUN] [--json]``: the audit of decisions and refusals (oldest first), for one run
    or all, as lines or ``--json`` rows; ``audit verify`` checks it (:func:`_audit_verify`)."""
    if args.run == "verify":
        return _audit_verify(home, args.json)
    rows = home.queue.audit(args.run, name=args.name)
    if args.json:
        _json(rows)
        return 0
    _print(
        f"{len(rows)} decision(s) in the audit"
        + (f" of {args.run}" if args.run else "")
        + (f" by {one_line(args.name)}" if args.name else "")
    )
    _print([_audit_line(r) for r in rows])
    return 0


def _audit_line(r: dict[str, object]) -> str:
    """One audit row as a line: who decided what on which digest; a row nobody decided (a
    reset) with what it did."""
    from core.engine.rulebook import person, role_label  # lazy: not for --help

    if not r.get("role") and not r.get("name"):
        return f"  {r.get('at')}  {r.get('run_id')}  {r.get('decision')}: {one_line(r.get('detail'))}"
    role = str(r.get("role") or "")
    who = (
        person(str(r["name"]), role) if r.get("name") else f"role {role_label(role)}"
    )  # a person by name, else the role in words
    return f"  {r.get('at')}  {r.get('run_id')}  {r.get('decision')} by {who}  digest {r.get('digest')}"


@command(
    "tui",
    APPROVERS,
    "open the approvals app (resolver-tui)",
    example="--as team_lead",
    params=lambda: [arg("rest", "ARGS", "options for resolver-tui (--as, --name, --demo ...)", nargs=-1, type=click.UNPROCESSED)],
    common=False,
    context={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
def cmd_tui(home: Home, args: argparse.Namespace) -> int:  # pragma: no cover - main() execs the app first
    store = ["--store", home.store_url] if home.store_url else []
    os.execv(sys.executable, [sys.executable, "-m", "resolver_tui", "--home", str(home.root), *store, *args.rest])
    return 0  # not reached


def _tui_argv(argv: list[str]) -> list[str] | None:
    """The app's arguments when ``argv`` is ``[--home DIR] [--store URL] tui ARGS...``, else None.

    ``resolver tui`` hands everything after ``tui`` to ``resolver-tui`` unparsed (``--as``,
    ``--name``, ``--trainer``, ``--version`` ...), with a ``--home`` or ``--store`` given before
    it; argparse's remainder dropped options it did not know (a new user's finding: ``resolver
    tui --as grace`` said "unrecognized arguments")."""
    before: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in ("--home", "--store") and i + 1 < len(argv):
            before += argv[i : i + 2]
            i += 2
        elif word.startswith(("--home=", "--store=")):
            before.append(word)
            i += 1
        elif word == "tui":
            return [*before, *argv[i + 1 :]]
        else:
            return None
    return None
