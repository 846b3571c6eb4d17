"""What every command module of the ``resolver`` command line shares: printing (every line
through :func:`core.ground.safetext.safe_text`, so no escape sequence from data reaches a
terminal), JSON, the question before a decision, the checks of typed IDs and amounts, the
options several commands take, and how an expected error is said (one sentence on stderr and
its exit code, :mod:`core.ground.exitcodes`).

``Next:`` and ``Resume with:`` lines name the command the way it was invoked (:data:`PROG`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

import click

from core.cli.tree import choice, opt
from core.ground.errors import ApprovalRefused, BadArgument, ResolverError
from core.ground.exitcodes import EXIT_ERROR, EXIT_HANDED, EXIT_OK, EXIT_REFUSED, EXIT_USAGE
from core.ground.safetext import block, fold, one_line, safe_text

if TYPE_CHECKING:
    from core.api.home import Home
    from core.engine.rulebook import Action
    from core.ground.state import TaskState

STATUSES = ("waiting_approval", "executing", "running", "handed_to_person", "stopped", "done")


ROLES = ("agent", "team_lead", "grace")


SORTS = ("age", "updated", "created", "amount", "role")
"""``runs --sort``: the queue's sorts (tests/cli/test_cli.py checks they equal core.contract.store.SORTS)."""


PASSPHRASE_ENV = "RESOLVER_PASSPHRASE"


OWNER_PASSPHRASE_ENV = "RESOLVER_OWNER_PASSPHRASE"
"""Spelled here for ``--help`` (tests/engine/test_approvers.py checks they equal core.engine.signing's)."""


PROG = "resolver"
"""The command as invoked, for ``Next:`` and ``Resume with:`` lines (set by :func:`main`)."""


COMPLETE_VAR = "_RESOLVER_COMPLETE"
"""The environment variable of click's shell completion: ``_RESOLVER_COMPLETE=bash_source resolver``."""


def _print(lines: Sequence[str] | str = "") -> None:
    """Print lines, each through :func:`core.ground.safetext.safe_text` (no escape sequence from data).
    On a terminal they are folded to its width first (:func:`core.ground.safetext.fold`): a line the
    terminal wrapped itself would start its next row at the margin, unmarked, where a customer's
    text could pose as the request's own line. A pipe or a file gets them whole."""
    import shutil  # lazy: not for --help

    if isinstance(lines, str):
        lines = [lines]
    shown = [safe_text(line) for line in lines]
    width = shutil.get_terminal_size((0, 0)).columns if sys.stdout.isatty() else 0
    for line in fold(shown, width - 1) if width > 1 else shown:
        print(line)


def _json(value: object) -> None:
    """Print ``value`` as JSON (control characters escaped as \\uXXXX, so none reaches a terminal)."""
    import json  # lazy: not for --help

    print(json.dumps(value, indent=1, ensure_ascii=True, default=str))


def _ended(state: TaskState) -> int:
    """The exit code of an approve or resume that left the run in ``state``."""
    return EXIT_HANDED if state.status == "handed_to_person" else EXIT_OK


def _state_json(state: TaskState, **extra: object) -> dict[str, object]:
    from core.api.views import decision_lines, operation_lines  # lazy: not for --help

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
    practice home, by a named approver in a shop home (``--as`` is refused there)."""
    from core.engine.rulebook import needed_role, role_label  # lazy: not for --help

    shop = home.kind == "shop"
    _print(home.queue.request(state))
    if shop:
        needed = needed_role(state) or "agent"
        _print(["", f"Next: {PROG} approve {state.run_id} --name NAME (an approver who is {role_label(needed)} or above)"])
    else:
        _print(["", f"Next: {PROG} approve {state.run_id} --as {needed_role(state) or 'agent'}"])


def _show_run_outcome(home: Home, state: TaskState) -> None:
    """After a loop: the outcome line, then the request and the next command, or the end."""
    from core.api.views import refused_lines  # lazy: not for --help
    from core.engine.runner import outcome_line  # lazy: not for --help

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
    if state.proposal.reply_draft:  # a marked block: it cannot pose as the command's lines
        _print(["Reply draft:", *block(state.proposal.reply_draft)])
    _status(state)


def _refuse(home: Home, run_id: str, action: Action, role: str) -> None:
    """Refuse with the rulebook's sentence (the one the app shows) when ``action`` is not
    offered to ``role`` on the run. Raises ApprovalRefused."""
    from core.engine.rulebook import Approver, offers  # lazy: not for --help

    why = offers(home.queue.view(run_id), Approver(role))[action]
    if why:
        raise ApprovalRefused(why)


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


def _shell_word(text: str) -> str:
    """``text`` as one word of a command line to copy (:func:`shlex.quote`, on one line)."""
    import shlex  # lazy: not for --help

    return shlex.quote(one_line(text))


def check_amount(text: str) -> str:
    """An amount in CAD as typed: ASCII digits with at most two decimals (``119.00``, ``9.95``).
    Raises BadArgument for anything else: ``119.005`` is never rounded, Arabic-Indic or other
    non-ASCII digits are never read as numbers."""
    import re  # lazy: not for --help

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
    import re  # lazy: not for --help

    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,119}", text, flags=re.ASCII):
        raise BadArgument(f"{safe_id(text)} is not a valid {what}: use letters, digits and - _ . : @ (at most 120).")
    return text


def safe_id(text: str) -> str:
    """``text`` quoted for a sentence, with control and non-ASCII characters escaped."""
    return ascii(text)


READ_ONLY = frozenset({"runs", "show", "trace", "diff", "changes", "audit", "doctor", "backup"})
"""Commands that only read: they never create a home folder (a typo in --home makes none)."""


REFUSALS = ("ApprovalRefused", "WorldChanged", "ShopRefused", "LeaseHeld", "ResumeChanged", "DatabaseRefused")


def _say_log_problem(log: Any) -> None:
    """Say once, on stderr, that the home's log could not be written (:func:`core.ground.log.log_problem`)."""
    if log is None:
        return
    from core.ground.log import log_problem  # lazy: not for --help

    problem = log_problem(log)
    if problem:
        print(problem, file=sys.stderr)


def _said(exc: ResolverError) -> int:
    """Print an expected error's one sentence on stderr, every password in it masked
    (:func:`core.ground.masking.mask_text`: a sentence may quote a URL); its exit code (README, "Exit
    codes"): 2 for a value that cannot be taken as typed, 4 for a refusal, else 1."""
    from core.ground.masking import mask_text  # lazy: not for --help

    print(mask_text(safe_text(exc)), file=sys.stderr)
    if isinstance(exc, BadArgument):
        return EXIT_USAGE
    return EXIT_REFUSED if type(exc).__name__ in REFUSALS else EXIT_ERROR


def passphrase_fd() -> click.Option:
    return opt(
        "--passphrase-fd",
        type=int,
        metavar="N",
        default=None,
        help=f"read the passphrase from file descriptor N (else ${PASSPHRASE_ENV}, else the terminal)",
    )


def owner_passphrase_fd() -> click.Option:
    return opt(
        "--owner-passphrase-fd",
        type=int,
        metavar="N",
        default=None,
        help=f"read the owner's passphrase from file descriptor N (else ${OWNER_PASSPHRASE_ENV})",
    )


def decider_options(verb: str) -> list[click.Option]:
    """The options of a decision (``approve``, ``reject``): who decides, on which digest."""
    return [
        opt(
            "--as",
            "role",
            type=choice(ROLES),
            default=None,
            help="practice home: the role you decide as (refused in a shop home)",
        ),
        opt("--name", default=None, help="shop home: the approver who decides (asks for their passphrase)"),
        opt(
            "--digest",
            default=None,
            help="the digest you read; refused if the proposal changed (a shop home then asks no question)",
        ),
        opt("--yes", is_flag=True, default=False, help=f"shop home: decide without the question {verb}? [y/N]"),
        passphrase_fd(),
    ]


def marker_options() -> list[click.Parameter]:
    """The run and the maker of a mark (``claim``, ``handover``, ``snooze``)."""
    from core.cli.tree import arg  # lazy: not for --help

    return [
        arg("run", "RUN", "the waiting run's ID"),
        opt("--as", "role", type=choice(ROLES), default=None, help="practice home: your role (refused in a shop home)"),
        opt("--name", default=None, help="who you are (a shop home asks for your passphrase)"),
        passphrase_fd(),
    ]
