"""The ``resolver`` command line (also ``python -m core``).

Every command is a thin face on core: writes through :class:`core.api.home.Home`, reads through
its read side ``home.queue`` (:class:`core.api.queue.ApprovalQueue`), refusals from
:func:`core.engine.rulebook.offers`. Modules are imported by the command that needs them, so
``resolver --help`` loads neither pydantic nor SQLite. Expected errors print one sentence on
stderr, never a traceback; the exit codes are in :data:`EXIT_CODES` (and the README). Every
line printed goes through :func:`core.api.views.safe_text`, so no escape sequence from data reaches
a terminal; an unexpected error is logged with its stack trace in the home's ``resolver.log``
(:mod:`core.ground.log`) and shown as one sentence.

``Next:`` and ``Resume with:`` lines name the command the way it was invoked: ``resolver`` for
the installed command and ``python -m core``, ``python -m resolver`` for the lesson's
``python -m resolver`` (the ``prog`` of :func:`main`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TextIO

from core import __version__
from core.ground.errors import BadArgument, ResolverError, StoreBusy, WorldChanged
from core.ground.safetext import nfc, not_one_line, not_plain_name, one_line, pad

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

    from core.api.home import Home
    from core.engine.approvers import Unlocked
    from core.engine.rulebook import Action, Approver
    from core.ground.state import TaskState, WorldSeen
    from core.models.model import LiveRoute

# The parser's choices, spelled here so that ``resolver --help`` imports neither pydantic nor
# SQLite; tests/test_cli.py checks they equal core.ground.state.STATUSES and core.ground.data.ROLES.
STATUSES = ("waiting_approval", "executing", "running", "handed_to_person", "stopped", "done")
ROLES = ("agent", "team_lead", "grace")
SORTS = ("age", "updated", "created", "amount", "role")
"""``runs --sort``: the queue's sorts (tests/test_cli.py checks they equal core.contract.store.SORTS)."""

PASSPHRASE_ENV = "RESOLVER_PASSPHRASE"
OWNER_PASSPHRASE_ENV = "RESOLVER_OWNER_PASSPHRASE"
"""Spelled here for ``--help`` (tests/test_approvers.py checks they equal core.engine.signing's)."""

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_CRASH = 3
EXIT_REFUSED = 4
EXIT_HANDED = 5

EXIT_CODES = {
    EXIT_OK: "done: the command did what it was asked (an approve or resume whose run is done)",
    EXIT_ERROR: "error: one sentence on stderr (unknown run, damaged file, locked database ...)",
    EXIT_USAGE: "the command line could not be read (a bad option or value, text that is not UTF-8)",
    EXIT_CRASH: "a simulated crash (--interrupt): resume the run",
    EXIT_REFUSED: "refused: the rulebook, the approval checks, a lease, a shop home or a separated team store said no; nothing changed",
    EXIT_HANDED: "handed to a person: an approve or resume ended with the run handed_to_person",
}
"""The ``resolver`` command's exit codes (README, "Exit codes")."""


PROG = "resolver"
"""The command as invoked, for ``Next:`` and ``Resume with:`` lines (set by :func:`main`)."""


def _print(lines: Sequence[str] | str = "") -> None:
    """Print lines, each through :func:`core.ground.safetext.safe_text` (no escape sequence from data).
    On a terminal they are folded to its width first (:func:`core.ground.safetext.fold`): a line the
    terminal wrapped itself would start its next row at the margin, unmarked, where a customer's
    text could pose as the request's own line (issue 19). A pipe or a file gets them whole."""
    import shutil

    from core.ground.safetext import fold, safe_text

    if isinstance(lines, str):
        lines = [lines]
    shown = [safe_text(line) for line in lines]
    width = shutil.get_terminal_size((0, 0)).columns if sys.stdout.isatty() else 0
    for line in fold(shown, width - 1) if width > 1 else shown:
        print(line)


def _json(value: object) -> None:
    """Print ``value`` as JSON (control characters escaped as \\uXXXX, so none reaches a terminal)."""
    import json

    print(json.dumps(value, indent=1, ensure_ascii=True, default=str))


def _ended(state: TaskState) -> int:
    """The exit code of an approve or resume that left the run in ``state``."""
    return EXIT_HANDED if state.status == "handed_to_person" else EXIT_OK


def _state_json(state: TaskState, **extra: object) -> dict[str, object]:
    from core.api.views import decision_lines, operation_lines

    return {
        "run_id": state.run_id,
        "status": state.status,
        **extra,
        "decision": decision_lines(state),
        "operations": operation_lines(state),
        "state": state.model_dump(mode="json"),
    }


def _status(state: TaskState) -> None:
    _print(f"Status: {state.status}")


def _show_request(home: Home, state: TaskState) -> None:
    """The approval request, then the command that approves it: with the role it needs in a
    practice home, by a named approver in a shop home (issue 14: ``--as`` is refused there)."""
    from core.engine.rulebook import needed_role, role_label

    shop = home.kind == "shop"
    _print(home.queue.request(state))
    if shop:
        needed = needed_role(state) or "agent"
        _print(["", f"Next: {PROG} approve {state.run_id} --name NAME (an approver who is {role_label(needed)} or above)"])
    else:
        _print(["", f"Next: {PROG} approve {state.run_id} --as {needed_role(state) or 'agent'}"])


def _show_run_outcome(home: Home, state: TaskState) -> None:
    """After a loop: the outcome line, then the request and the next command, or the end."""
    from core.api.views import refused_lines
    from core.engine.runner import outcome_line
    from core.ground.safetext import block, one_line

    if state.proposal is None:
        _print(f"Run {state.run_id}: {state.status} after {state.step} step(s).")
        _status(state)
        return
    _print(f"Outcome: {outcome_line(state)}")
    if state.status == "waiting_approval":
        _show_request(home, state)
        return
    refused = refused_lines(state)
    if refused:  # one line per broken proposal rule, never the reason folded onto one line
        _print([f"Rule {one_line(state.proposal.rule)}: {refused[0]}", *refused[1:]])
        _status(state)
        return
    _print([f"Rule {one_line(state.proposal.rule)}: {one_line(state.proposal.reason)}"])
    if state.proposal.reply_draft:  # a marked block (issue 19): it cannot pose as the command's lines
        _print(["Reply draft:", *block(state.proposal.reply_draft)])
    _status(state)


def _refuse(home: Home, run_id: str, action: Action, role: str) -> None:
    """Refuse with the rulebook's sentence (the one the app shows) when ``action`` is not
    offered to ``role`` on the run. Raises ApprovalRefused."""
    from core.engine.rulebook import Approver, offers
    from core.ground.errors import ApprovalRefused

    why = offers(home.queue.view(run_id), Approver(role))[action]
    if why:
        raise ApprovalRefused(why)


# -- commands ----------------------------------------------------------------------------------


def cmd_run(home: Home, args: argparse.Namespace) -> int:
    from core.contract.store import crash_point

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
        from core.engine.runner import outcome_line

        _json(_state_json(state, outcome=outcome_line(state) if state.proposal else None))
        return 0
    _show_run_outcome(home, state)
    return 0


def cmd_record(home: Home, args: argparse.Namespace) -> int:
    """``resolver record TASK --model ROUTE``: a live run, then its turns as a recording in the
    home (:meth:`core.api.home.Home.record`). Raises BadArgument when ROUTE is not a live route."""
    from core.contract.store import crash_point
    from core.engine.runner import outcome_line

    live = _live_route(args)
    if live is None:
        raise BadArgument(
            f"resolver record runs a live model, and {args.model} is not one: name a [models.NAME] table of the "
            "config file, or describe the route with --base-url, --model-name and --api-key-env."
        )
    done = home.record(args.task, live, args.variant, on_step=lambda s: crash_point("step"))
    r = done.recording
    replay = f"{PROG} run {args.task} --variant {r.variant} --model {r.model} --repeat {r.repeat}"
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


def cmd_ticket(home: Home, args: argparse.Namespace) -> int:
    """``resolver ticket add FILE`` (:meth:`core.api.home.Home.add_ticket`) and ``ticket list``
    (:func:`core.ground.tickets.list_tickets`): the home's own tickets."""
    from pathlib import Path

    from core.ground.tickets import TICKETS, list_tickets, ticket_line

    if args.ticket_cmd == "add":
        added = home.add_ticket(Path(args.file))
        t = added.ticket
        if args.json:
            _json({"task_id": t.task_id, "file": str(added.path), "ticket": t.model_dump(mode="json")})
            return 0
        _print(
            [
                f"Added {ticket_line(t)} as {added.path}.",
                f'Run it with: {PROG} run {t.task_id} --model ROUTE (a live route; see "Use a live model")',
            ]
        )
        return 0
    listed = list_tickets(home.root / TICKETS)
    if args.json:
        _json(
            [
                {"task_id": task_id, **(t.model_dump(mode="json") if t else {}), "problem": problem}
                for task_id, t, problem in listed
            ]
        )
        return 0
    if not listed:
        _print(f"No tickets of this home's own in {home.root / TICKETS}; add one with `{PROG} ticket add FILE`.")
        return 0
    _print([ticket_line(t) if t else f"{task_id}  cannot be read: {one_line(problem)}" for task_id, t, problem in listed])
    return 0


def _live_route(args: argparse.Namespace) -> LiveRoute | None:
    """The live route ``resolver run`` names: from ``--base-url`` (with ``--model-name`` and
    ``--api-key-env``; ``--model`` is the route's name), else the config file's
    ``[models.MODEL]`` table, else None (a recorded model).

    Raises:
        BadArgument: a flag missing or bad, or a config table that does not read.
    """
    from core.ground.data import load_prices
    from core.models.model import LiveRoute, load_routes

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


def cmd_runs(home: Home, args: argparse.Namespace) -> int:
    """Print the runs page by page as they are read (``--json``: one JSON array, streamed). The
    light listing (:class:`core.api.listing.ListingQueue`) reads the four printed columns as tuples
    for the text lines (issue 27, item 6); ``--json`` prints every column of each summary. A
    waiting listing ends with a line saying how many waiting runs the reader may decide are set
    aside, handed to someone else (``--mine``) or claimed by someone else, when any is
    (:class:`core.engine.marks.MarkedAway`): a mark never takes a run out of a queue silently."""
    import json
    from dataclasses import asdict

    from core.api.listing import ListingQueue, PrintedPage
    from core.ground.safetext import safe_lines

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
    marks, now = queue.marks_now()  # issue 24: claims, hand-overs and snoozes that stand now
    pages: Iterator[Any]
    if isinstance(queue, ListingQueue) and not args.json and not marks:  # no marks to show or filter by
        pages = queue.printed_pages(status, search=args.search, limit=size, sort=args.sort)
    else:
        pages = queue.pages(status, search=args.search, limit=size, sort=args.sort, max_role=max_role)
    corrupt = "  (corrupt checkpoint)"
    for page in pages:
        lines: list[str]  # one write per page: 100,000 print calls cost more than the reads
        if isinstance(page, PrintedPage):  # the light listing's tuples (run_id, status, updated_at, state_ok, key)
            printed = page.rows[: limit - shown] if limit else page.rows
            lines = [f"{run:<40} {st:<17} {at}{'' if ok else corrupt}" for run, st, at, ok, _key in printed]
            shown += len(printed)
        else:
            rows = page.rows
            if marks:
                rows = [r for r in rows if not _marked_out(marks.get(r.run_id), r.status, status, max_role, args.name, now)]
            rows = rows[: limit - shown] if limit else rows
            lines = []
            for r in rows:
                m = marks.get(r.run_id) if r.status == "waiting_approval" else None
                if args.json:
                    row = {**asdict(r), "marks": m.lines(now) if m is not None else []}  # always the key (a new user's trial)
                    lines.append(("," if shown else "") + "\n" + json.dumps(row, indent=1))
                else:
                    mark = "" if r.state_ok else corrupt
                    mark += f"  ({m.short(now)})" if m is not None else ""
                    lines.append(f"{r.run_id:<40} {r.status:<17} {r.updated_at}{mark}")
                shown += 1
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
        from core.ground.safetext import safe_text

        if args.status or args.search:
            _print(
                "No runs match"
                + (f" status {args.status}" if args.status else "")
                + (" and" if args.status and args.search else "")
                + (f" {safe_text(args.search)!r}" if args.search else "")
                + f"; {home.queue.total()} run(s) saved in all."
            )
        elif max_role is not None:  # --mine (a new user's finding: it read like an empty home)
            _print(f"None of the {home.queue.total()} saved run(s) is waiting for a decision you may make.")
        else:
            _print("No saved runs. Start one with `resolver run T-65273`.")
    if away:
        _print(away)
    return 0


def _marked_out(m: Any, run_status: str, status: str | None, max_role: str | None, name: str | None, now: Any) -> bool:
    """Whether a listed run leaves the listing for its marks (issue 24): a run set aside leaves
    ``--status waiting_approval`` until its time; a run handed to someone else leaves ``--mine``
    of ``--name``. ``m``: its standing :class:`core.engine.marks.RunMarks`, or None."""
    from core.engine.marks import hides_from_mine

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
    from core.engine.approver_config import load

    config = load()
    return nfc(config.name) if config else None  # issue 19: names in NFC on the way in


def _mine_role(home: Home, args: argparse.Namespace) -> str | None:
    """``runs --mine``: the role whose runs are listed, from ``--as ROLE`` in a practice home or
    the approvers registry for ``--name NAME`` in a shop home (no passphrase: a listing decides
    nothing). None without ``--mine``. Raises BadArgument when ``--mine`` says nobody."""
    if not args.mine:
        if args.role or args.name:
            raise BadArgument("--as and --name go with --mine (the runs that approver may approve); add --mine.")
        return None
    from core.api.home import Home as WholeHome

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


def cmd_resume(home: Home, args: argparse.Namespace) -> int:
    from core.api.views import after_resume
    from core.contract.store import crash_point
    from core.engine.rulebook import nothing_to_resume

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
    from core.engine.signing import read_passphrase

    if _named_approver(home, args, required) is None:
        return None
    return _unlock(home, args.name, read_passphrase, f"Passphrase for {args.name}: ", args.passphrase_fd)


def _unlock(home: Home, name: str, read: Callable[..., str], prompt: str, fd: int | None) -> Unlocked:
    """Unlock ``name`` in a shop home: first whether this machine holds their key at all
    (:meth:`core.engine.approvers.Registry.key_problem`, issue 23), so a missing key file is said before
    a passphrase is asked; then the passphrase. Raises ApprovalRefused (one sentence)."""
    from core.ground.errors import ApprovalRefused

    problem = home.registry().key_problem(name) if home.kind == "shop" else None
    if problem:
        raise ApprovalRefused(problem)
    return home.unlock(name, read(prompt, fd=fd))


def _named_approver(home: Home, args: argparse.Namespace, required: bool = True) -> Approver | None:
    """Who decides, before any passphrase (issue 19: the cheap refusals come first): in a shop
    home the approver ``--name`` names in the registry, with their role (``--as`` is refused);
    in a practice home None (``--as`` is required when ``required``).

    Raises:
        ApprovalRefused: ``--as`` or no ``--name`` in a shop home, an unknown name (with the
            nearest registered names), a revoked approver or a registry that does not verify.
        ResolverError: no ``--as`` in a practice home.
    """
    from core.engine.rulebook import Approver
    from core.ground.errors import ApprovalRefused

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


def _ask(question: str, out: TextIO | None = None) -> bool:
    """Ask ``question`` on the terminal (``Approve? [y/N]``): True for y or yes, anything else
    (Enter, end of input, Ctrl-C) is No: nothing was started, so there is nothing to resume.

    The question is written to ``out`` (standard output by default; standard error under
    ``--json``, where standard output holds only the result's JSON)."""
    print(question, end="", file=out or sys.stdout, flush=True)
    try:
        answer = input("")
    except (EOFError, KeyboardInterrupt):
        print(file=sys.stderr)
        return False
    return answer.strip().casefold() in ("y", "yes")


def _show_then_confirm(
    home: Home, args: argparse.Namespace, verb: Literal["approve", "reject"], who: Approver
) -> tuple[str, WorldSeen | None]:
    """Before a decision pays (issue 19): print what is decided (the actions and their amounts,
    the reply, who may approve, what changed since the agent looked, the digest and who
    decides; on stderr under ``--json``), refuse what is refused now (before any passphrase),
    then in a shop home ask ``Approve? [y/N]`` on a terminal unless ``--yes`` or ``--digest``.

    Returns the digest the decision binds to (``--digest``, else the one printed) and the
    lookups the world lines were made from. Raises ApprovalRefused: the rulebook refuses,
    approve is refused now (expired evidence, one effect per ticket, a failing precondition in
    a shop home), ``--digest`` is not the current proposal's, no terminal to ask on and neither
    ``--yes`` nor ``--digest``, or the person answered No.
    """
    from core.api.views import approve_dialog, describe, reject_dialog
    from core.engine.approval import digest_matches
    from core.engine.rulebook import offers, stale_digest
    from core.ground.errors import ApprovalRefused
    from core.ground.safetext import block

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
        seen = home.queue.look(state)  # issue 18: the approval is bound to what was shown
        lines, refused = home.queue.world_now(state, seen)
    decision = replace(decision, world=tuple(lines))
    said = approve_dialog(decision, who, question=False) if verb == "approve" else reject_dialog(decision, who)
    claimed = _claimed_by_other(home, state, who.name)
    if claimed:  # issue 24: a colleague is on it; deciding anyway is allowed, after being told
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
    standing claim on ``state``'s run (issue 24), else None."""
    from core.ground.safetext import name_key

    marks = home.queue.marks(state)
    now = home.clock.now()
    line = marks.claim_line(now)
    if line is None or (name and name_key(marks.claimed_by or "") == name_key(name)):
        return None
    return str(line)


def mark_time(text: str, now: datetime) -> datetime:
    """``snooze --until`` (and the app's snooze dialog): an ISO 8601 time (as ``clock set`` reads it, America/Toronto without an
    offset) or a duration from now (as ``prune --older-than`` reads it: ``90m``, ``2h``, ``1d``).
    Raises BadArgument (exit 2)."""
    from core.ground.clock import parse_time

    try:
        return parse_time(text)
    except ValueError:
        pass
    try:
        return now + parse_duration(text)
    except BadArgument:
        raise BadArgument(
            f"Cannot read the time {text!r}: use ISO 8601 (2026-10-12T15:00:00-04:00) or a duration from now (90m, 2h)."
        ) from None
    except OverflowError:  # a new user's 99999999h: past the last date Python keeps
        raise BadArgument(f"The time {text!r} from now is past any date resolver keeps; give a nearer one.") from None


def cmd_mark(home: Home, args: argparse.Namespace) -> int:
    """``claim RUN [--release]``, ``handover RUN --to NAME --note TEXT``, ``snooze RUN --until
    TIME`` (issue 24, :mod:`core.engine.marks`): checked as a decision is (``--as`` in a practice home,
    ``--name`` and the passphrase in a shop home), recorded in the audit, signed in a shop home.
    A claim, a hand-over or a snooze by a role that may not decide the run, or a hand-over to
    such a colleague, is refused with the rulebook's sentence (exit 4, as a refused decision;
    in a shop home before the passphrase is asked)."""
    from core.ground.errors import ApprovalRefused
    from core.ground.safetext import one_line

    said = not_plain_name(args.name)
    if said:
        raise ApprovalRefused(said.replace("Nothing was decided", "Nothing was marked"))
    kind = args.command
    extra: dict[str, Any] = {}
    if kind == "claim" and args.release:
        kind = "release"
    elif kind == "snooze":
        extra["until"] = mark_time(args.until, home.clock.now())
    elif kind == "handover":
        extra.update(to=args.to, note=args.note)
    who = _named_approver(home, args)
    if home.kind != "shop" and not args.name:
        raise ApprovalRefused(f"Say who you are with --name NAME (and --as ROLE): a {args.command} names its maker.")
    signer = None
    if who is not None:
        from core.engine.rulebook import may_mark, may_receive, nothing_to_mark
        from core.engine.signing import read_passphrase

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
    import json
    import threading
    import time

    from core.engine.watch import (
        LAPSE_SWEEP_S,
        Position,
        new_events,
        newest_event,
        notify_command,
        outage_line,
        relevant,
        run_notify,
        sweep_lapses,
    )
    from core.ground.data import load_policy
    from core.ground.errors import StoreUnreachable
    from core.ground.homepath import config_path, read_config
    from core.ground.safetext import safe_lines

    if args.interval <= 0:
        raise BadArgument(f"--interval {args.interval} must be a positive number of seconds, e.g. 1.")
    name = _config_name(args.name)
    if home.kind == "shop":
        if args.role:
            raise BadArgument("In a shop home watch takes --name NAME (the role comes from the approvers registry), not --as.")
        role = home.registry().valid_entry(name).role if name else None
    else:
        role = args.role
    command = notify_command(read_config(config_path()))
    position = Position.of(home.root, role, name)
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
                for event in new_events(home.store, position):
                    if relevant(event, role, name):
                        if args.json and args.once:
                            shown.append(json.loads(event.as_json()))
                        else:
                            sys.stdout.write(event.as_json() + "\n" if args.json else safe_lines([event.line()]))
                            sys.stdout.flush()
                        if command is not None:
                            why = run_notify(command, event)
                            if why is not None:
                                if shown:
                                    _json(shown)
                                raise ResolverError(
                                    f"{why} The watcher stops here; its next start delivers event #{event.id} again."
                                )
                    position.deliver(event.id)
            except (StoreUnreachable, StoreBusy) as exc:
                if args.once:
                    raise
                home.log.info("watch: %s", exc)
                if not outage:  # once while it lasts: a store down for an hour is not 3,600 lines
                    print(outage_line(exc, position.last), file=sys.stderr)
                    sys.stderr.flush()
                outage = True
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


def cmd_approve(home: Home, args: argparse.Namespace) -> int:
    from core.api.views import after_approve
    from core.engine.rulebook import Approver
    from core.engine.signing import read_passphrase
    from core.ground.errors import ApprovalRefused

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
        f"{first}. The approval is saved and run {run_id} is executing: `{PROG} resume {run_id}` finishes "
        "its writes once the lock is gone (approving again would be refused)."
    )


def cmd_reject(home: Home, args: argparse.Namespace) -> int:
    from core.api.views import after_reject
    from core.engine.approval import REASON_REQUIRED
    from core.engine.rulebook import Approver
    from core.engine.signing import read_passphrase
    from core.ground.errors import ApprovalRefused

    if args.digest is not None and not args.digest.strip():
        raise BadArgument("--digest is empty: give the digest you read (the request's last line), or leave --digest out.")
    said = not_plain_name(args.name)
    if said:  # before the request is shown: a name is one line on every face
        raise ApprovalRefused(said)
    if not (args.reason and args.reason.strip()):  # before any passphrase: the cheap refusals come first (issue 19)
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


def cmd_show(home: Home, args: argparse.Namespace) -> int:
    from core.api.views import approved_vs_current, status_lines

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
        marked = home.queue.marks(state).lines(home.clock.now())  # issue 24: claim, hand-over, snooze
        if marked:
            _print([*marked, ""])
    _print(home.queue.proposal(state))
    _print(["", f"Status: {state.status}", *status_lines(state), *approved_vs_current(state), f"Home: {home.kind}"])
    return 0


def cmd_refresh(home: Home, args: argparse.Namespace) -> int:
    """Read the evidence again and re-derive the preconditions: a new proposal version."""
    from core.engine.rulebook import not_decidable
    from core.ground.errors import ApprovalRefused

    current = home.store.load_view(args.run)  # an unknown or settled run is said before any passphrase (issue 19)
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


def cmd_approvers(home: Home, args: argparse.Namespace) -> int:
    """``approvers init|key|add|list|revoke|recover`` (issue 14): the registry of a shop home;
    ``key`` (issue 23) makes a new approver's key on their own machine."""
    from core.api.homekind import require_shop
    from core.engine.approvers import fingerprint
    from core.engine.signing import OWNER_PASSPHRASE_ENV, read_passphrase, record_registry_change
    from core.ground.safetext import safe_text

    def record(change: str, name: str, role: str) -> Callable[[Unlocked, dict[str, Any]], None]:
        """The registry's change as an owner-signed audit row, with the head (issue 28)."""
        return lambda owner, seal: record_registry_change(home.parts, home.store, owner, change, name, role, seal)

    require_shop(home.root, "`approvers`", home.kind)
    registry = home.registry()
    now = home.clock.now()
    if args.approvers_cmd == "init":
        passphrase = read_passphrase(f"Passphrase for the owner {args.name}: ", fd=args.passphrase_fd, confirm=True)
        made = registry.init(args.name, passphrase, now, record=record("init", args.name.strip(), "grace"))
        if args.json:
            _json({"owner": made.owner, "fingerprint": made.fingerprint, "recovery_code": made.recovery_code})
            return 0
        _print(
            [
                f"Made the approvers registry of {registry.shown}; owner {safe_text(made.owner)} (role grace).",
                f"Owner key fingerprint: {made.fingerprint}",
                "  Write it down: `resolver doctor` shows it, compare the two.",
                f"Recovery code (shown once): {made.recovery_code}",
                "  Keep it on paper, away from this machine: `resolver approvers recover` gives the owner a new passphrase with it.",
            ]
        )
        return 0
    from core.engine.rulebook import role_label

    if args.approvers_cmd == "key":
        passphrase = read_passphrase(f"New passphrase for {args.name}: ", fd=args.passphrase_fd, confirm=True)
        key, path = registry.make_key(args.name, passphrase)
        if args.json:
            _json({"name": key.name, "public_key": key.public_key, "fingerprint": fingerprint(key.public_key), "file": str(path)})
            return 0
        _print(
            [
                f"Made a key for {safe_text(key.name)} on this machine: {path} (mode 0600, encrypted with the passphrase).",
                f"Public key: {key.public_key}",
                f"Fingerprint: {fingerprint(key.public_key)}",
                "  Give the public key and its fingerprint to the owner, who adds it with "
                f"`{PROG} approvers add {_shell_word(key.name)} --role ROLE --public-key {key.public_key} "
                f"--fingerprint {_shell_word(fingerprint(key.public_key))}` (a key of another fingerprint is refused).",
            ]
        )
        return 0
    if args.approvers_cmd == "add":
        if args.public_key is not None:  # before anything is read or asked: exit 2, nothing written
            from core.engine.approvers import RegistryError, check_fingerprint, check_public_key

            try:
                args.public_key = check_public_key(args.public_key)
                if args.fingerprint is not None:  # a typo in the key is caught before anything is written
                    check_fingerprint(args.fingerprint, args.public_key)
            except RegistryError as exc:
                raise BadArgument(str(exc)) from None
        elif args.fingerprint is not None:
            raise BadArgument("--fingerprint checks the key given with --public-key; give both, or neither.")
        registry.valid_entry(registry.seal()["owner"])  # a damaged registry is said before any passphrase is asked
        if args.public_key is not None and args.fingerprint is None:
            _confirm_fingerprint(args.name, args.public_key)
        passphrase = ""
        if args.public_key is None:
            passphrase = read_passphrase(f"New passphrase for {args.name}: ", fd=args.passphrase_fd, confirm=True)
        owner_passphrase = read_passphrase(
            "The owner's passphrase, to sign the entry: ", fd=args.owner_passphrase_fd, env=OWNER_PASSPHRASE_ENV
        )
        entry = registry.add(
            args.name,
            args.role,
            passphrase,
            owner_passphrase,
            now,
            record=record("add", args.name.strip(), args.role),
            public_key=args.public_key,
        )
        kept = registry.keys.path(entry.name) if registry.team and args.public_key is None else None
        if args.public_key is not None and args.fingerprint is None and not sys.stdin.isatty():
            _told_fingerprint(entry.name, args.public_key)
        if args.json:
            _json(
                {
                    "name": entry.name,
                    "role": entry.role,
                    "fingerprint": fingerprint(entry.public_key),
                    "key_file": str(kept) if kept else None,
                }
            )
            return 0
        _print(
            f"Added {one_line(entry.name)} as {role_label(entry.role)}, key {fingerprint(entry.public_key)}; signed by the owner."
        )
        if kept is not None:
            _print(
                f"  Their encrypted key is on this machine: {kept}. Copy that file into the keys folder of their home "
                "folder on their machine (mode 0600), or next time let them make it there with `resolver approvers key`."
            )
        return 0
    if args.approvers_cmd == "revoke":
        owner_passphrase = read_passphrase(
            "The owner's passphrase, to sign the revocation: ", fd=args.owner_passphrase_fd, env=OWNER_PASSPHRASE_ENV
        )
        revoked = next((e for e in registry.entries() if e.name.casefold() == args.name.strip().casefold()), None)
        who, role = (revoked.name, revoked.role) if revoked else (args.name.strip(), "")
        entry = registry.revoke(args.name, owner_passphrase, now, record=record("revoke", who, role))
        if args.json:
            _json({"name": entry.name, "revoked_at": entry.revoked_at})
            return 0
        _print(f"Revoked {safe_text(entry.name)} at {entry.revoked_at}: none of their decisions executes from now on.")
        return 0
    if args.approvers_cmd == "recover":
        code = read_passphrase("Recovery code: ", fd=args.code_fd, env="RESOLVER_RECOVERY_CODE")
        passphrase = read_passphrase("New passphrase for the owner: ", fd=args.passphrase_fd, confirm=True)
        owner_name = str(registry.seal()["owner"])
        new_code = registry.recover(code, passphrase, now, record=record("recover", owner_name, "grace"))
        if args.json:
            _json({"recovery_code": new_code})
            return 0
        _print(
            [
                "The owner's passphrase is changed; the old recovery code no longer works.",
                f"New recovery code (shown once): {new_code}",
            ]
        )
        return 0
    problems = registry.problems()
    if args.json:
        _json(
            {
                "owner_fingerprint": registry.fingerprint(),
                "approvers": [
                    {
                        "name": e.name,
                        "role": e.role,
                        "fingerprint": fingerprint(e.public_key),
                        "added_at": e.added_at,
                        "revoked_at": e.revoked_at if e.revoked else None,
                    }
                    for e in registry.entries()
                ],
                "problems": problems,
            }
        )
        return EXIT_ERROR if problems else 0
    from core.engine.rulebook import role_label

    _print(f"Owner key: {registry.fingerprint()}")
    for e in registry.entries():
        state = f"revoked {e.revoked_at}" if e.revoked else "active"
        _print(f"  {pad(one_line(e.name), 20)} {e.role:<10} {fingerprint(e.public_key)}  added {e.added_at}  {state}")
    if problems:
        raise ResolverError(f"The approvers registry does not verify: {'; '.join(problems)}.")
    return 0


def _shell_word(text: str) -> str:
    """``text`` as one word of a command line to copy (:func:`shlex.quote`, on one line)."""
    import shlex

    return shlex.quote(one_line(text))


def _confirm_fingerprint(name: str, public_key: str) -> None:
    """``approvers add NAME --public-key HEX`` without ``--fingerprint`` (a new user's trial: a
    typo in the key took the name for good): on a terminal, show the key's fingerprint and ask
    whether it is the one ``approvers key`` printed (anything but y refuses, exit 4, nothing
    written); without a terminal (a script) go on: :func:`_told_fingerprint` says the
    fingerprint once the key is added.

    Raises:
        ApprovalRefused: the owner did not confirm.
    """
    from core.engine.approvers import fingerprint
    from core.ground.errors import ApprovalRefused
    from core.ground.safetext import safe_text

    said = fingerprint(public_key)
    if not sys.stdin.isatty():  # said once the key is added (:func:`_told_fingerprint`)
        return
    question = (
        f"The public key's fingerprint is {said}.\nIs it the one `approvers key` printed on {one_line(name)}'s machine? [y/N] "
    )
    print(safe_text(question), end="", file=sys.stderr, flush=True)  # stderr: stdout stays the result's (--json)
    if not _ask(""):
        raise ApprovalRefused(
            f"Not added: the fingerprint was not confirmed. Nothing was written; check the key, or pass --fingerprint {said!r}."
        )


def _told_fingerprint(name: str, public_key: str) -> None:
    """After ``approvers add NAME --public-key HEX`` without ``--fingerprint`` and without a
    terminal: the added key's fingerprint on stderr (for the script's log), to compare with the
    one ``approvers key`` printed."""
    from core.engine.approvers import fingerprint
    from core.ground.safetext import safe_text

    print(
        safe_text(
            f"The key added for {one_line(name)} has the fingerprint {fingerprint(public_key)}; compare it with the one "
            "`resolver approvers key` printed on their machine (--fingerprint checks it before anything is written)."
        ),
        file=sys.stderr,
    )


def _audit_verify(home: Home, as_json: bool = False) -> int:
    """``audit verify`` (issue 14): the hash chain, the triggers, and in a shop home each
    decision's signature and the signed ``audit.head``. Exit 1 when anything is found."""
    from core.engine.signing import verify_home_audit
    from core.ground.safetext import safe_text

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


def cmd_trace(home: Home, args: argparse.Namespace) -> int:
    lines = home.queue.trace(args.run)
    if args.json:
        _json({"run_id": args.run, "events": lines})
        return 0
    _print(f"Trace of {args.run}: {len(lines)} event(s)")
    _print(lines)
    return 0


def cmd_diff(home: Home, args: argparse.Namespace) -> int:
    title, lines = home.queue.compare(args.run_a, args.run_b)
    if args.json:
        _json({"run_a": args.run_a, "run_b": args.run_b, "title": title, "lines": lines})
        return 0
    _print(lines)
    return 0


def cmd_changes(home: Home, args: argparse.Namespace) -> int:
    changes = home.queue.changes()
    if args.json:
        _json(changes)
        return 0
    from core.api.views import changes_lines

    _print(changes_lines(changes))
    return 0


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
    from core.engine.rulebook import person, role_label

    if not r.get("role") and not r.get("name"):
        return f"  {r.get('at')}  {r.get('run_id')}  {r.get('decision')}: {one_line(r.get('detail'))}"
    role = str(r.get("role") or "")
    who = person(str(r["name"]), role) if r.get("name") else f"role {role_label(role)}"  # issue 19
    return f"  {r.get('at')}  {r.get('run_id')}  {r.get('decision')} by {who}  digest {r.get('digest')}"


def cmd_reset(home: Home, args: argparse.Namespace) -> int:
    from core.api.homekind import require_practice

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


def check_amount(text: str) -> str:
    """An amount in CAD as typed: ASCII digits with at most two decimals (``119.00``, ``9.95``).
    Raises BadArgument for anything else: ``119.005`` is never rounded, Arabic-Indic or other
    non-ASCII digits are never read as numbers."""
    import re

    if not re.fullmatch(r"[0-9]{1,9}(\.[0-9]{1,2})?", text, flags=re.ASCII):
        raise BadArgument(
            f"{text!r} is not an amount in CAD as typed: use ASCII digits with at most two decimals, e.g. 119.00 "
            "(nothing is rounded)."
        )
    return text


def check_id(text: str, what: str = "ID") -> str:
    """An ID as typed or made: letters, digits and ``- _ . : @`` only, 1 to 120 characters
    (``r-1``, ``T-65273-crash-1``, ``manual-1``). Raises BadArgument for anything else, so no
    control character or escape sequence is stored as an ID."""
    import re

    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,119}", text, flags=re.ASCII):
        raise BadArgument(f"{safe_id(text)} is not a valid {what}: use letters, digits and - _ . : @ (at most 120).")
    return text


def safe_id(text: str) -> str:
    """``text`` quoted for a sentence, with control and non-ASCII characters escaped."""
    return ascii(text)


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


def cmd_clock(home: Home, args: argparse.Namespace) -> int:
    """``clock show|set|advance|real``. A time that cannot be read, or that ``set`` or ``advance``
    would take outside the supported range (:func:`core.ground.clock.supported`), is a bad value: exit
    2 with its sentence, ``clock.json`` untouched. A damaged ``clock.json`` is exit 1."""
    from core.api.homekind import check_clock_command
    from core.ground.clock import TimeOutOfRange, iso, parse_time

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


def parse_duration(text: str) -> timedelta:
    """``2d``, ``3h``, ``90m``, ``45s`` or combinations like ``2d16h``; ``back 1d`` goes
    backwards (a leading ``-`` would read as an option). Raises BadArgument (exit 2)."""
    import re

    parts = re.fullmatch(r"\s*(back\s+)?(?:(\d+)d)?\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s)?\s*", text or "")
    if not parts or not any(parts.groups()[1:]):
        raise BadArgument(f"Cannot read the duration {text!r}: use e.g. 2d16h, 90m, 45s or 'back 1d'.")
    d, h, m, s = (int(x or 0) for x in parts.groups()[1:])
    try:
        delta = timedelta(days=d, hours=h, minutes=m, seconds=s)
    except OverflowError:
        raise BadArgument(f"The duration {text!r} is too long for the clock; use at most a few thousand days.") from None
    return -delta if parts.group(1) else delta


def cmd_doctor(home: Home, args: argparse.Namespace) -> int:  # pragma: no cover - main() answers doctor
    return 0


def cmd_prune(home: Home, args: argparse.Namespace) -> int:
    """Delete finished runs whose last checkpoint is older than ``--older-than``."""
    from core.ground.clock import TimeOutOfRange
    from core.ops.maintenance import prune, prune_cutoff

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
        from core.ground.clock import format_duration

        _json({"older_than": format_duration(age), "removed": removed, "lines": lines})
        return 0
    _print(lines)
    return 0


def cmd_backup(home: Home, args: argparse.Namespace) -> int:
    """Copy the whole home into one archive (see :func:`core.ops.maintenance.backup`)."""
    from core.ops.maintenance import backup

    lines = backup(home, args.file)
    if args.json:
        _json({"file": str(args.file), "lines": lines})
        return 0
    _print(lines)
    return 0


def cmd_restore(home: Home, args: argparse.Namespace) -> int:
    """Replace this home with a backup after checking it (see :func:`core.ops.maintenance.restore`)."""
    from core.ops.maintenance import not_on_a_team_store, restore

    not_on_a_team_store(home, "restore")  # before any passphrase
    if home.kind == "shop":
        from core.engine.signing import OWNER_PASSPHRASE_ENV, read_passphrase

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


def cmd_class(home: Home, args: argparse.Namespace) -> int:
    from core.trainer import lesson  # the trainer kit; imported only when asked for

    lines = lesson.play(home, args)
    if args.json:
        key = "exercise" if getattr(args, "exercise", None) else "moment"
        _json({key: getattr(args, key), "lines": lines})
        return 0
    _print(lines)
    return 0


# -- the parser ----------------------------------------------------------------------------------


def _store_place(text: str, where: str) -> Any:
    """The place a store URL names (:func:`core.ground.homepath.parse_store_url`): a folder's Path for
    ``sqlite:///FOLDER``, the URL for ``postgresql://…``. Raises BadArgument (one sentence)."""
    from core.ground.homepath import parse_store_url

    backend, value = parse_store_url(text, where)
    from pathlib import Path

    return Path(value).expanduser() if backend == "sqlite" else value


def cmd_store(args: argparse.Namespace) -> int:
    """``resolver store copy|check|migrate`` (issue 23, item 4; :mod:`core.ops.storecopy`): each
    opens the stores it names, never a home. ``check`` and ``migrate`` take the store chosen as
    every command chooses it (``--store``, ``$RESOLVER_STORE``, the config file, else the home
    folder). Exit 0 when all is equal or well, 1 when something differs or fails."""
    from core.ops import storecopy

    if args.store_cmd == "roles":
        return _store_roles(args)
    if args.store_cmd == "copy":
        report = storecopy.copy_store(_store_place(args.from_url, "--from"), _store_place(args.to_url, "--to"))
    else:
        from core.ground.homepath import locate_home

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
    """``resolver store roles setup`` (issue 25): role separation in the team store chosen as every
    command chooses it, with that URL's (an administrator's) rights. Exit 2 for a mapping that
    is not NAME=USER or a store that is not a team store."""
    from core.ground.homepath import locate_home
    from core.stores.postgres import setup_roles

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


class _Parser(argparse.ArgumentParser):
    """argparse, whose messages echo what was typed (``unrecognized arguments: ...``): a message
    holding a control character goes through :func:`core.api.views.safe_text` first. ``--help``
    holds none, so it still imports neither pydantic nor SQLite."""

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if any((ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F for c in message):
            from core.api.views import safe_text

            message = safe_text(message)
        super()._print_message(message, file)


def build_parser(prog: str = "resolver") -> argparse.ArgumentParser:
    """The ``resolver`` argument parser (every subcommand also takes ``--home DIR``)."""
    common = _Parser(add_help=False)
    common.add_argument(
        "--home",
        default=argparse.SUPPRESS,
        help="home folder (default: --home, $RESOLVER_HOME, `home` in the config file, or ./work)",
    )
    common.add_argument(
        "--store",
        default=argparse.SUPPRESS,
        metavar="URL",
        help="where runs, audit and world live: sqlite:///FOLDER (the home folder, the default) or "
        "postgresql://HOST/DATABASE, the team store (default: $RESOLVER_STORE, `store` in the config file)",
    )
    parser = _Parser(
        prog=prog,
        description="Checkpoint, approve and execute the Larkfield support agent's work exactly once.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    home_only = common
    common = _Parser(add_help=False, parents=[home_only])
    common.add_argument(
        "--json", action="store_true", help='print the result as JSON (stable keys: README, "JSON output")'
    )  # every subcommand prints its result as JSON with --json (the app's `tui` is not a result)

    passphrase_fd = _Parser(add_help=False)
    passphrase_fd.add_argument(
        "--passphrase-fd",
        type=int,
        metavar="N",
        default=None,
        help=f"read the passphrase from file descriptor N (else ${PASSPHRASE_ENV}, else the terminal)",
    )

    p = sub.add_parser("run", parents=[common], help="run the agent on a ticket (a new run)")
    p.add_argument("task", metavar="TASK", help="ticket ID, e.g. T-65273")
    p.add_argument("--variant", default="agent", choices=["agent", "agent_structured"])
    p.add_argument(
        "--model",
        default=None,
        help="chat-small (default for agent) or chat-strong (recorded), or a live route: a [models.NAME] "
        "table of the config file, or the name of the one --base-url describes",
    )
    p.add_argument("--repeat", type=int, default=None, help="which recorded run to replay (1-3)")
    p.add_argument(
        "--base-url", default=None, help="a live OpenAI-compatible chat-completions server, e.g. http://127.0.0.1:8000/v1"
    )
    p.add_argument("--model-name", default=None, help="with --base-url: the model name the server knows")
    p.add_argument("--api-key-env", default=None, metavar="VAR", help="with --base-url: the environment variable holding the key")
    p.add_argument(
        "--price-as", default=None, metavar="MODEL", help="with --base-url: price the tokens as this model of data/models.json"
    )
    p.add_argument("--run-id", default=None, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "record", parents=[common], help="run a ticket on a live model and keep its turns as a recording in the home"
    )
    p.add_argument("task", metavar="TASK", help="ticket ID, e.g. T-65273")
    p.add_argument("--variant", default="agent", choices=["agent", "agent_structured"])
    p.add_argument("--model", required=True, help="a live route: a [models.NAME] table of the config file, or --base-url's name")
    p.add_argument("--base-url", default=None, help="as for run")
    p.add_argument("--model-name", default=None, help="as for run")
    p.add_argument("--api-key-env", default=None, metavar="VAR", help="as for run")
    p.add_argument("--price-as", default=None, metavar="MODEL", help="as for run; the recording's model")
    p.set_defaults(func=cmd_record)

    p = sub.add_parser("ticket", parents=[common], help="the home's own tickets: add one from TOML or JSON, list them")
    tsub = p.add_subparsers(dest="ticket_cmd", required=True)
    t = tsub.add_parser("add", parents=[common], help="add a ticket from a .toml or .json file (checked whole)")
    t.add_argument("file", metavar="FILE", help="the ticket: the keys of data/tickets/T-nnnnn.json, in TOML or JSON")
    tsub.add_parser("list", parents=[common], help="the home's own tickets")
    p.set_defaults(func=cmd_ticket)

    p = sub.add_parser("runs", parents=[common], help="list saved runs")
    p.add_argument("--status", choices=STATUSES)
    p.add_argument("--search", help="filter by ticket, order, customer or run ID")
    p.add_argument("--limit", type=int, default=0)
    p.add_argument(
        "--sort",
        choices=SORTS,
        default=None,
        help="age (oldest change first), updated (newest first), created, amount (largest first), role (highest first); "
        "default: age for waiting runs, else updated",
    )
    p.add_argument("--mine", action="store_true", help="only the waiting runs this approver may approve (with --as or --name)")
    p.add_argument("--as", dest="role", choices=ROLES, help="practice home: the role of --mine")
    p.add_argument(
        "--name", help="the approver of --mine (shop home: their role from the registry); default: the config file's name"
    )
    p.set_defaults(func=cmd_runs)

    for name, func, text in (
        ("resume", cmd_resume, "continue a saved run from its checkpoint"),
        ("trace", cmd_trace, "the events of a run"),
    ):
        p = sub.add_parser(name, parents=[common], help=text)
        p.add_argument("run", metavar="RUN")
        p.set_defaults(func=func)
        if name == "resume":
            p.add_argument(
                "--accept-changes",
                action="store_true",
                help="a running loop whose policy, tool schema or model route changed goes on under the new ones",
            )

    p = sub.add_parser(
        "refresh",
        parents=[common, passphrase_fd],
        help="read a waiting run's evidence again (a new proposal version and digest; earlier approvals void)",
    )
    p.add_argument("run", metavar="RUN")
    p.add_argument("--as", dest="role", choices=ROLES, help="practice home: the role you refresh as (recorded in the audit)")
    p.add_argument(
        "--name", help="who refreshes: recorded in the audit; in a shop home the approver, signed (asks their passphrase)"
    )
    p.set_defaults(func=cmd_refresh)

    p = sub.add_parser(
        "show", parents=[common], help="the request, decision and operations of a run; without RUN, the home and its kind"
    )
    p.add_argument("run", metavar="RUN", nargs="?")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser(
        "audit",
        parents=[common],
        help="export the audit of decisions (who decided what, when, on which digest); `audit verify` checks it",
    )
    p.add_argument(
        "run",
        metavar="RUN|verify",
        nargs="?",
        help="one run's rows; `verify` checks the hash chain, the triggers and, in a shop home, every signature",
    )
    p.add_argument("--name", default=None, help="only the rows of this approver's decisions and refusals")
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser(
        "doctor", parents=[common], help="check the home: where it is and why, file modes, key, databases, versions"
    )
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser(
        "prune", parents=[common], help="delete finished runs older than DURATION (the audit keeps who decided what)"
    )
    p.add_argument("--older-than", required=True, metavar="DURATION", help="e.g. 90d, 2d16h")
    p.set_defaults(func=cmd_prune)

    p = sub.add_parser(
        "backup", parents=[common], help="copy the whole home into one archive, consistently, while the app is open"
    )
    p.add_argument("file", metavar="FILE", help="the archive to write (.tar.gz); refused if it exists")
    p.set_defaults(func=cmd_backup)

    p = sub.add_parser("restore", parents=[common], help="replace this home with a backup, after checking it")
    p.add_argument("file", metavar="FILE")
    p.add_argument(
        "--replace-newer", action="store_true", help="restore even over runs saved after the backup (the home is kept first)"
    )
    p.add_argument(
        "--owner-passphrase-fd",
        type=int,
        metavar="N",
        default=None,
        help=f"shop home: read the owner's passphrase from file descriptor N (else ${OWNER_PASSPHRASE_ENV})",
    )
    p.set_defaults(func=cmd_restore)

    p = sub.add_parser("init", parents=[common], help="make the home folder (--shop: a shop home, for good)")
    p.add_argument("--shop", action="store_true", help="a shop home: real time only, the lesson's commands refused")
    p.set_defaults(func=None)

    p = sub.add_parser("approve", parents=[common, passphrase_fd], help="approve a waiting proposal and execute it")
    p.add_argument("run", metavar="RUN")
    p.add_argument("--as", dest="role", choices=ROLES, help="practice home: the role you decide as (refused in a shop home)")
    p.add_argument("--name", help="shop home: the approver who decides (asks for their passphrase)")
    p.add_argument("--digest", help="the digest you read; refused if the proposal changed (a shop home then asks no question)")
    p.add_argument("--yes", action="store_true", help="shop home: decide without the question Approve? [y/N]")
    p.add_argument(
        "--interrupt",
        choices=["before-write", "after-write"],
        help="simulate a crash: end the process just before or just after the first write (exit code 3)",
    )
    p.set_defaults(func=cmd_approve)

    p = sub.add_parser("reject", parents=[common, passphrase_fd], help="reject a waiting proposal (hands it to a person)")
    p.add_argument("run", metavar="RUN")
    p.add_argument("--as", dest="role", choices=ROLES, help="practice home: the role you decide as (refused in a shop home)")
    p.add_argument("--name", help="shop home: the approver who decides (asks for their passphrase)")
    p.add_argument("--digest", help="the digest you read; refused if the proposal changed (a shop home then asks no question)")
    p.add_argument("--yes", action="store_true", help="shop home: decide without the question Reject? [y/N]")
    p.add_argument("--reason", required=True)
    p.set_defaults(func=cmd_reject)

    for command, text in (
        ("claim", "say you are on a waiting run (--release: no longer); it lapses after claim_minutes (30)"),
        ("handover", "hand a waiting run to a named colleague with a note; it shows under their --mine"),
        ("snooze", "set a waiting run aside until a time (never past its request's expiry)"),
    ):
        p = sub.add_parser(command, parents=[common, passphrase_fd], help=text)
        p.add_argument("run", metavar="RUN")
        p.add_argument("--as", dest="role", choices=ROLES, help="practice home: your role (refused in a shop home)")
        p.add_argument("--name", help="who you are (a shop home asks for your passphrase)")
        if command == "claim":
            p.add_argument("--release", action="store_true", help="release your claim")
        elif command == "handover":
            p.add_argument("--to", required=True, metavar="NAME", help="the colleague (shop home: an approver of the registry)")
            p.add_argument("--note", required=True, metavar="TEXT", help="what they should look at (one line)")
        else:
            p.add_argument("--until", required=True, metavar="TIME", help="ISO 8601 time, or a duration from now (90m, 2h)")
        p.set_defaults(func=cmd_mark)

    p = sub.add_parser("watch", parents=[common], help="print each new event of the queue for you, and run the notify command")
    p.add_argument("--as", dest="role", choices=ROLES, help="practice home: your role (the requests you may approve)")
    p.add_argument(
        "--name",
        help="your name (hand-overs to you; in a shop home your role from the registry); default: the config file's name",
    )
    p.add_argument("--once", action="store_true", help="print what is new since the last time and exit")
    p.add_argument("--interval", type=float, default=1.0, metavar="S", help="seconds between reads (default 1)")
    p.set_defaults(func=cmd_watch)

    p = sub.add_parser(
        "approvers", parents=[common], help="shop home: the approvers registry (init, key, add, list, revoke, recover)"
    )
    asub = p.add_subparsers(dest="approvers_cmd", required=True)
    a = asub.add_parser("init", parents=[common, passphrase_fd], help="the owner makes the registry and their key")
    a.add_argument("--name", default="Grace", help="the owner's name (default Grace)")
    a = asub.add_parser(
        "key", parents=[common, passphrase_fd], help="a new approver makes their key on their own machine (prints the public key)"
    )
    a.add_argument("--name", required=True, help="the new approver's name, as the owner will add it")
    a = asub.add_parser("add", parents=[common, passphrase_fd], help="add an approver (their passphrase, then the owner's)")
    a.add_argument("name", metavar="NAME")
    a.add_argument("--role", required=True, choices=ROLES)
    a.add_argument(
        "--public-key",
        metavar="HEX",
        default=None,
        help="the public key `approvers key` printed on the approver's machine (then no passphrase of theirs is asked)",
    )
    a.add_argument(
        "--fingerprint",
        metavar="FP",
        default=None,
        help="the fingerprint `approvers key` printed beside the key: a key of another fingerprint is refused, nothing written "
        "(without it a terminal asks to confirm the fingerprint)",
    )
    a.add_argument(
        "--owner-passphrase-fd",
        type=int,
        metavar="N",
        default=None,
        help=f"read the owner's passphrase from file descriptor N (else ${OWNER_PASSPHRASE_ENV})",
    )
    asub.add_parser("list", parents=[common], help="every approver, their role, key fingerprint and state")
    a = asub.add_parser("revoke", parents=[common], help="revoke an approver (the owner's passphrase)")
    a.add_argument("name", metavar="NAME")
    a.add_argument("--owner-passphrase-fd", type=int, metavar="N", default=None)
    a = asub.add_parser("recover", parents=[common, passphrase_fd], help="a new owner passphrase with the recovery code")
    a.add_argument("--code-fd", type=int, metavar="N", default=None, help="read the recovery code from file descriptor N")
    p.set_defaults(func=cmd_approvers)

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

    p = sub.add_parser("tui", parents=[home_only], help="open the approvals app (resolver-tui)")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="options for resolver-tui (--as, --name, --demo ...)")
    p.set_defaults(func=cmd_tui)

    p = sub.add_parser("class", parents=[common], help="the trainer's Friday-to-Monday lesson, moment by moment")
    p.add_argument(
        "moment",
        choices=[
            "friday",
            "crash-in-loop",
            "crash-before-write",
            "crash-after-write",
            "resume-crashed",
            "weekend-call",
            "monday",
            "run-again",
            "all",
        ],
    )
    p.add_argument("--after-step", type=int, default=1)
    p.set_defaults(func=cmd_class)

    p = sub.add_parser("store", parents=[common], help="the operator's commands: copy a store, check it, migrate it")
    ssub = p.add_subparsers(dest="store_cmd", required=True, metavar="ACTION")
    s = ssub.add_parser("copy", parents=[common], help="copy every run, the audit, approvers and world into an empty store")
    s.add_argument("--from", dest="from_url", required=True, metavar="URL", help="sqlite:///FOLDER or postgresql://HOST/DATABASE")
    s.add_argument("--to", dest="to_url", required=True, metavar="URL", help="an empty store: sqlite:///FOLDER or postgresql://…")
    ssub.add_parser("check", parents=[common], help="reachable, its version, rows per table, the audit chain")
    ssub.add_parser("migrate", parents=[common], help="open the store (its migrations run), the version before and after")
    s = ssub.add_parser(
        "roles",
        parents=[common],
        help="team store: a database user per kind of user, with named rights (run with an administrator's URL)",
    )
    s.add_argument("roles_action", choices=["setup"], metavar="setup")
    s.add_argument("--tables-role", default="resolver_tables", metavar="ROLE", help="the NOLOGIN role that owns the tables")
    for kind in ("owner", "runner", "executor"):
        s.add_argument(f"--{kind}-user", dest=f"{kind}_users", action="append", default=[], metavar="USER")
    s.add_argument(
        "--approver",
        dest="approvers",
        action="append",
        default=[],
        metavar="NAME=USER",
        help="map the registry's approver NAME to the database user USER (repeatable)",
    )
    p.set_defaults(func=None)

    p = sub.add_parser("exercise", parents=[common], help="the exercises of seeds 000 and 001, runnable")
    p.add_argument("exercise", choices=["crash-at-step", "corrupt-checkpoint", "migrate-v1", "resume-twice", "lease-owner"])
    p.set_defaults(func=cmd_class)
    return parser


READ_ONLY = frozenset({"runs", "show", "trace", "diff", "changes", "audit", "doctor", "backup"})
"""Commands that only read: they never create a home folder (issue 13)."""

REFUSALS = ("ApprovalRefused", "WorldChanged", "ShopRefused", "LeaseHeld", "ResumeChanged", "DatabaseRefused")


def _not_utf8(argv: Sequence[str]) -> str | None:
    """The first argument holding bytes that are not UTF-8 (Python keeps them as lone
    surrogates), shown with those bytes escaped; None when every argument is text."""
    for arg in argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            return ascii(arg.encode("utf-8", "surrogateescape"))[1:]
    return None


def main(argv: Sequence[str] | None = None, prog: str = "resolver") -> int:
    """Run the CLI; returns the exit code (:data:`EXIT_CODES`: 0 done, 1 error, 2 bad command
    line, 3 simulated crash, 4 refused, 5 handed to a person).
    ``prog`` is the command as invoked (``python -m resolver`` for the lesson's package)."""
    global PROG
    PROG = prog
    from core.ground.platform import require_posix

    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        require_posix()
    except ResolverError as exc:
        print(exc, file=sys.stderr)
        return EXIT_ERROR
    bad = _not_utf8(argv)
    if bad is not None:
        print(
            f"The argument {bad} is not UTF-8 text; set your terminal to UTF-8 and type it again. Nothing was changed.",
            file=sys.stderr,
        )
        return EXIT_USAGE
    parser = build_parser(prog)
    app_argv = _tui_argv(argv)
    if app_argv is not None:  # `resolver tui ...` is `resolver-tui ...`: every option after it is the app's
        os.execv(sys.executable, [sys.executable, "-m", "resolver_tui", *app_argv])
    args = parser.parse_args(argv)
    for attr in ("name", "search"):  # issue 19: names and searches in NFC on the way in
        if isinstance(getattr(args, attr, None), str):
            setattr(args, attr, nfc(getattr(args, attr)))
    if getattr(args, "model", "x") is None:
        args.model = "chat-strong" if args.variant == "agent_structured" else "chat-small"
    if args.command == "runs" and not args.mine:  # a listing reads indexed columns only: no model, policy or world
        listed = _runs_light(args)
        if listed is not None:
            return listed
    log = None
    try:
        from core.api.home import Home, locate_home
        from core.api.homekind import init_home
        from core.engine.executor import SimulatedCrash
        from core.ground.log import command_log

        if args.command == "store":
            return cmd_store(args)
        where = locate_home(getattr(args, "home", None), getattr(args, "store", None))
        if args.command in READ_ONLY and args.command != "doctor":
            where.require_existing()
        if args.command == "doctor":
            from core.ops.doctor import doctor_lines

            lines, code = doctor_lines(where)
            if args.json:
                _json({"home": str(where.path), "ok": code == 0, "lines": lines})
                return code
            _print(lines)
            return code
        root = where.path
        _read_fds_early(args)
        store = where.store.url
        if args.command == "init":
            made = init_home(root, shop=args.shop, store=store)
            Home(root, store=store)  # builds the databases (the kind is already written)
            if args.json:
                _json({"home": str(root), "kind": "shop" if args.shop else "practice", "lines": made})
                return 0
            _print(made)
            return 0
        # a lost runs.sqlite (missing or empty in a used home) is made again only to be reset or restored over
        afresh = args.command == "restore" or (args.command == "reset" and bool(getattr(args, "all", False)))
        home = Home(root, read_only=args.command in READ_ONLY, store=store, afresh=afresh)
        log = command_log(root)
        log.info("%s %s", args.command, " ".join(ascii(a) for a in argv))  # the log masks the --store URL's password
        try:
            code = args.func(home, args)
        except SimulatedCrash as crash:
            log.info("simulated crash: %s", crash)
            _print(f"The process stopped: {crash}. Resume with: {PROG} resume {crash.run_id}")
            sys.stdout.flush()
            return EXIT_CRASH
        log.info("%s ended with exit code %d", args.command, code)
        _say_log_problem(log)
        return code
    except ResolverError as exc:
        if log is not None:
            log.info("%s: %s", "refused" if type(exc).__name__ in REFUSALS else "error", exc)
        code = _said(exc)
        _say_log_problem(log)
        return code
    except KeyboardInterrupt:
        print(f"Interrupted; the last checkpoint is saved. Resume with `{PROG} resume RUN`.", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `resolver changes | head`: a closed pipe ends quietly (entry)
        raise
    except Exception as exc:  # never a traceback on screen: it goes to the log
        details = "the details are in the home's resolver.log"
        if log is not None:
            log.exception("unexpected error in %s", args.command)
        else:
            details = "it came before the home's log was open, so no details were kept"
        print(
            f"resolver stopped on an unexpected error ({type(exc).__name__}); {details}. "
            f"Every step before it was saved: `{PROG} show RUN` says where a run stands.",
            file=sys.stderr,
        )
        return EXIT_ERROR


def _say_log_problem(log: Any) -> None:
    """Say once, on stderr, that the home's log could not be written (:func:`core.ground.log.log_problem`)."""
    if log is None:
        return
    from core.ground.log import log_problem

    problem = log_problem(log)
    if problem:
        print(problem, file=sys.stderr)


def _read_fds_early(args: argparse.Namespace) -> None:
    """Read ``--passphrase-fd``, ``--owner-passphrase-fd`` and ``--code-fd`` before the home
    opens any file (:func:`core.engine.signing.read_fd_early`, issue 28).

    Raises:
        BadArgument: a descriptor that is not open, cannot be read or holds no UTF-8 text (exit 2).
    """
    fds = [getattr(args, name, None) for name in ("passphrase_fd", "owner_passphrase_fd", "code_fd")]
    if not any(fd is not None for fd in fds):
        return
    from core.engine.signing import read_fd_early

    for fd in fds:
        if fd is not None:
            try:
                read_fd_early(fd)
            except ResolverError as exc:
                raise BadArgument(str(exc)) from None


def _runs_light(args: argparse.Namespace) -> int | None:
    """``resolver runs`` on a store already in the current format, without importing the whole
    home (:mod:`core.api.listing`); None to take the ordinary path."""
    from core.api.listing import listing_home
    from core.ground.homepath import locate_home

    try:
        where = locate_home(getattr(args, "home", None), getattr(args, "store", None))
        home = listing_home(where.path) if where.store.url is None else None
        if home is None:
            return None
        return int(cmd_runs(home, args))  # type: ignore[arg-type]  # cmd_runs reads home.queue only
    except ResolverError as exc:
        return _said(exc)


def _said(exc: ResolverError) -> int:
    """Print an expected error's one sentence on stderr, every password in it masked
    (:func:`core.ground.masking.mask_text`: a sentence may quote a URL); its exit code (README, "Exit
    codes"): 2 for a value that cannot be taken as typed, 4 for a refusal, else 1."""
    from core.ground.masking import mask_text
    from core.ground.safetext import safe_text

    print(mask_text(safe_text(exc)), file=sys.stderr)
    if isinstance(exc, BadArgument):
        return EXIT_USAGE
    return EXIT_REFUSED if type(exc).__name__ in REFUSALS else EXIT_ERROR


def entry(prog: str = "resolver") -> None:
    """Console-script entry point. A closed pipe (``resolver runs | head``) ends quietly."""
    try:
        code = main(prog=prog)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    sys.exit(code)
