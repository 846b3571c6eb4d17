"""docs/TRAINER.md played in its own order, each fact it prints checked.

Every ``resolver`` command of the page's ``sh`` blocks (but the install, the app and the lesson
test) is a step of :data:`STEPS`, in the page's order, and so is every command the page names in
its prose for terminal A (the app's keys have their command-line twins there: ``u`` is
``resume``, Grace's ``a`` is ``approve --as grace --name Grace``). Each step runs in a new process
(``python -m core``) in one temporary home, as a trainer types it, and its output must hold the
page's facts (whitespace runs count as one space; an operation ID is opaque: ``…`` on the page).
A command added to the page's blocks and not played here fails the test.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from core.ground.state import SCHEMA_VERSION

from helpers import run_process

ROOT = Path(__file__).resolve().parent.parent.parent
PAGE = (ROOT / "docs" / "TRAINER.md").read_text(encoding="utf-8")
T65273 = "T-65273-agent-chat-small-1"
T90104 = "T-90104-agent_structured-chat-strong-1"


@dataclass(frozen=True)
class Step:
    """One command of the page: ``facts`` must be in its output (stdout and stderr), ``code`` is
    its exit code; ``prose`` marks a command the page names in a sentence, not in a block."""

    command: str
    facts: tuple[str, ...] = ()
    code: int = 0
    prose: bool = False


STEPS: tuple[Step, ...] = (
    Step("resolver reset --all", ("Rebuilt the practice world from data/.",)),
    Step("resolver run T-90103 --repeat 1"),
    Step("resolver run T-90103 --repeat 2"),
    Step(
        "resolver diff T-90103-agent-chat-small-1 T-90103-agent-chat-small-2",
        (
            "  reship_item LK-640436 PLANTER x 1",
            "- create_return_label LK-640436 PLANTER reason damaged (return shipping: free)",
        ),
    ),
    Step("resolver reset --all", prose=True),
    Step(
        "resolver class friday",
        ("resolve (rule W7) | 3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out | US$0.00081",),
    ),
    Step(
        f"resolver show {T65273}",
        (
            "Who may approve: team lead or above",
            "request_refund LK-507862 119.00 CAD RFD-DOUBLE payment PAY-507862-2",
            "get_order",
            "get_payments",
        ),
        prose=True,
    ),
    Step("resolver class monday", ("2026-10-12T09:00",)),
    Step(f"resolver resume {T65273}", ("Who may approve: team lead or above",), prose=True),
    Step("resolver class weekend-call", ("RF-4CFEAE8E",)),
    Step(
        f"resolver show {T65273}",
        (
            "Evidence read 2d 16h ago",
            "get_payments: payment PAY-507862-2: refunded: 0.00 then 119.00",
            "RF-4CFEAE8E: 119.00 CAD of PAY-507862-2 on LK-507862 (RFD-DOUBLE) by operation manual-1 (manual) on Saturday 11:00",
            "Preconditions that fail now",
        ),
        prose=True,
    ),
    Step(
        f"resolver approve {T65273} --as grace --name Grace",
        (
            "request_refund LK-507862: failed (operation …, 1 call(s)) PAY-507862-2 is not a captured charge of LK-507862",
            "Status: handed_to_person",
        ),
        code=5,
        prose=True,
    ),
    Step("resolver changes", ("1 change(s)", "refund RF-4CFEAE8E"), prose=True),
    Step("resolver reset --all"),
    Step(
        "resolver class crash-in-loop",
        ("T-65273-crash-1 is running at step 1 with 1 model call(s) saved.",),
    ),
    Step(
        "resolver resume T-65273-crash-1",
        ("3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out | US$0.00081", "Who may approve"),
        prose=True,
    ),
    Step("resolver trace T-65273-crash-1", ("step 1: get_order", "resumed", "step 2: get_payments", "step 3:"), prose=True),
    Step("resolver class crash-before-write", ("simulated crash before the write",), code=0),
    Step("resolver changes", ("0 change(s)",)),
    Step(f"resolver resume {T90104}", ("request_refund LK-793996: done (operation …, 1 call(s))", "Status: done"), prose=True),
    Step("resolver changes", ("9.95 CAD", "reply MSG-"), prose=True),
    Step(f"resolver resume {T90104}", ("Nothing to resume: the run is done.",), prose=True),
    Step("resolver class run-again", ("T-90103-agent-chat-small-2 is waiting_approval",)),
    Step("resolver approve T-90103-agent-chat-small-1 --as grace --name Grace", ("Status: done",), prose=True),
    Step(
        "resolver approve T-90103-agent-chat-small-2 --as grace --name Grace",
        ("T-90103-agent-chat-small-1 already reshipped an item on LK-640436 (RS-",),
        code=4,
        prose=True,
    ),
    Step(
        "resolver exercise crash-at-step",
        ("3 model call(s), 2 tool call(s) | 7155 tokens in", "step 2: get_payments"),
        prose=True,
    ),
    Step("resolver exercise corrupt-checkpoint", ("is corrupt",), prose=True),
    Step(
        "resolver exercise migrate-v1",
        (f"Loaded as schema version {SCHEMA_VERSION}: reply_channel = 'email'", "the run ID"),
        prose=True,
    ),
    Step("resolver exercise resume-twice", ("2 replies sent", "1 reply sent"), prose=True),
    Step("resolver exercise lease-owner", ("Resume from another owner:", "window-1"), prose=True),
    Step("resolver reset --all", prose=True),
    Step(
        "resolver class all",
        (
            "== resume-crashed",
            "request_refund LK-793996: done (operation …, 1 call(s))",
            "RF-4CFEAE8E",
        ),
        prose=True,
    ),
    Step("resolver runs", prose=True),
    Step("resolver clock real", ("(real)",), prose=True),
)
"""The page's commands in its order, with the facts the page says each prints."""


def _norm(text: str) -> str:
    text = re.sub(r"\(operation [0-9a-f]{16},", "(operation …,", text)
    return re.sub(r"\s+", " ", text)


def page_commands() -> list[str]:
    """The ``resolver`` commands of the page's ``sh`` blocks, in order (the install, the app
    and the lesson test are not steps of the class)."""
    found = []
    for block in re.findall(r"```sh\n(.*?)```", PAGE, re.S):
        for line in block.strip().splitlines():
            if line.startswith("resolver ") and not line.startswith("resolver-tui"):
                found.append(line.strip())
    return found


def test_every_command_of_the_page_is_played_in_its_order():
    blocks = [s.command for s in STEPS if not s.prose]
    listed = page_commands()
    exercises = re.findall(r"`(resolver exercise [a-z-]+)`", PAGE)
    assert exercises and all(e in [s.command for s in STEPS] for e in exercises)
    assert blocks == listed, "STEPS and the page's blocks differ"
    flat = re.sub(r"\s+", " ", PAGE)
    missing = [s.command for s in STEPS if s.prose and s.command not in flat]
    assert not missing, f"commands of STEPS the page does not name: {missing}"


def test_the_lease_exercise_uses_a_ticket_no_moment_touches():
    from core.trainer import lesson

    touched = set(re.findall(r"T-\d{5}", Path(lesson.__file__).read_text(encoding="utf-8").split("# --- exercises")[0]))
    assert lesson.LEASE_TICKET not in touched


@pytest.mark.slow
def test_trainer_md_played_in_its_order(tmp_path):
    home = tmp_path / "work"
    problems = []
    outputs = {}
    for step in STEPS:
        argv = shlex.split(step.command)[1:]
        done = run_process(home, *argv)
        out = _norm(done.stdout + done.stderr)
        outputs.setdefault(step.command, []).append(out)
        if done.returncode != step.code:
            problems.append(f"{step.command}: exit {done.returncode}, the page's {step.code}\n{done.stdout}{done.stderr}")
        for fact in step.facts:
            if _norm(fact) not in out:
                problems.append(f"{step.command}: {fact!r} not printed\n{done.stdout}{done.stderr}")
    assert not problems, "\n\n".join(problems)
    # class all: one run of T-90104, stopped before and then after its write (one effect per ticket)
    runs = outputs["resolver runs"][-1]
    assert len(re.findall(r"T-90104-\S+ done", runs)) == 1, runs
    # the page's facts that are numbers in its sentences
    assert "(7)" in PAGE and SCHEMA_VERSION == 7
    assert "on Saturday 11:00" in PAGE and "2d 16h" in PAGE and "**11 tickets**" in PAGE
