"""Seed 000 as printed: the lesson page is read at test time and played, step by step.

The page (``../shared/seeds/000_*.txt`` from the project root, or the folder named by
``RESOLVER_SEED_DIR``) is never copied into the project. Where it is absent the tests skip with
the reason; under ``CI=true`` they fail instead.

How the page is played (:func:`plan`):

- Every line that is a ``python -m resolver ...`` command runs as printed, in a new process
  (``python -m resolver`` with this environment's Python), in the page's order, in a fresh
  temporary home (``RESOLVER_HOME`` points into ``tmp_path``; the working folder is ``tmp_path``
  too, never the project, so neither ``./work`` nor a configured home is touched).
- Every Python block runs as an interactive session runs it (``python -i``): the value of the
  last expression is printed, as the page's "Python prints the new refund" expects.
- Commands and claims inside sentences are played from :data:`PROSE`, one row per sentence,
  each found on the page word for word. Mentions that are not steps are in :data:`NOT_RUN`
  with the reason. Every ``python -m resolver`` on the page is one of the three, or the test
  fails: a command added to the page is never skipped in silence.
- The trainer's clock is set at the lesson's times (:data:`TIMES`), with ``python -m resolver
  clock set``, which is not on the page.
- The page's own ``python -m pytest`` lines are not run inside the suite; its test file is cut
  from the page and run on its own (:func:`test_the_pages_own_test_file_passes`).

How output is compared (:func:`compare`): the page's output lines that carry facts are sorted
into kinds (:data:`KINDS`: outcome lines, action lines, ``Status:``, refusals, operations,
``Nothing to resume``, rows of ``runs`` ...). Of our output, the lines of the kinds the page
shows for that step are kept, and must equal the page's, line for line, with these rules:

- whitespace runs count as one space (the page's columns are ours, but copy-paste varies);
- an operation ID (16 hex digits) is opaque: the page's ``b029a4020ded5cae`` came from a
  derivation nobody can reproduce, and ours are bound to each run's unique ``run_uid``;
- the time of a ``runs`` row must be within :data:`TIME_SLACK` of the page's (the trainer's
  clock runs on at real speed from the time set);
- lines of other kinds (the request's ticket line, the evidence, ``Next:`` where the page does
  not show it) are our extra wording and are not compared.

Every deliberate difference from the page is one row of :data:`DIFFERENCES`, with its reason,
and each row must still be needed: a row no step used fails the test.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
SEED_ENV = "RESOLVER_SEED_DIR"
PROGRAM = "python -m resolver"

FRIDAY = "2026-10-09T17:00:00-04:00"
MONDAY = "2026-10-12T09:00:00-04:00"

TIME_SLACK = timedelta(minutes=5)
"""How far a printed time may be from the page's (the clock runs on while the lesson plays)."""

TIMES: tuple[tuple[str, str, str], ...] = (
    ("What you need on your computer", FRIDAY, "before the class: the story starts on Friday 17:00"),
    ("On Monday, Grace opens a new terminal.", MONDAY, "Grace's Monday 09:00"),
    (
        "A crash in the middle of the loop",
        FRIDAY,
        "the page's later examples were recorded at Friday's time (its runs row reads 2026-10-09T17:00:51)",
    ),
)
"""(sentence on the page, the time set just before it is played, why)."""

# -- kinds of fact-carrying lines -------------------------------------------------------------------

STATUSES = "waiting_approval|running|executing|done|handed_to_person|stopped"
OPERATION = r"(request_refund|reship_item|create_return_label|send_reply) \S+: (done|failed|planned|pending) \(operation \S+, \d+ call\(s\)\)"

KINDS: tuple[tuple[str, str], ...] = (
    ("resuming", r"^Resuming \S+ \(status \w+\)$"),
    ("request", r"^Approval needed for run \S+ \(ticket \S+\)$"),
    ("proposed", r"^Proposed by: .+$"),
    ("actions", r"^Actions \(nothing has happened yet\):$"),
    ("action", r"^\d+\. (request_refund|reship_item|create_return_label|send_reply) .+$"),
    ("who", r"^Who may approve: .+$"),
    ("operation", rf"^{OPERATION}.*$"),
    ("status", rf"^Status: ({STATUSES})$"),
    ("outcome", r"^Outcome: .+$"),
    ("stopped", r"^The process stopped: .+$"),
    ("nothing", r"^Nothing to resume: .+$"),
    ("runs_row", rf"^T-\S+ ({STATUSES}) \d{{4}}-\d\d-\d\dT\S+$"),
    ("crash", r"^simulated crash after step \d+$"),
    ("next", r"^Next: .+$"),
)
"""The kinds of output line that carry facts, by pattern (on the line with whitespace collapsed)."""


def squash(line: str) -> str:
    return " ".join(line.split())


def kind_of(line: str) -> str | None:
    text = squash(line)
    return next((name for name, pattern in KINDS if re.match(pattern, text)), None)


def opaque(line: str) -> str:
    """Whitespace collapsed, operation IDs (16 hex digits) replaced by ``<operation>``."""
    return re.sub(r"\b[0-9a-f]{16}\b", "<operation>", squash(line))


# -- the deliberate differences ---------------------------------------------------------------------


@dataclass
class Difference:
    """Our output differs from the page's at ``step`` (a command or block as the page prints
    it): lines of ``kind`` matching ``ours`` are ours alone (not on the page)."""

    step: str
    kind: str
    ours: str
    reason: str
    used: int = 0


DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        "python -m resolver runs",
        "runs_row",
        r"^T-90103-agent-chat-small-[12] waiting_approval ",
        "The page shows only T-65273's row. The two runs of T-90103 from 'The problem' are still saved "
        "(nothing on the page resets in between), so `runs` lists them as well.",
    ),
    Difference(
        "changes prints 0 change(s)",
        "changes",
        r"^0 change\(s\) in the practice world since the last reset$",
        "`changes` says 'in the practice world since the last reset'; the page's sentence says 'in the "
        "practice database'. The number, 0, is compared.",
    ),
    Difference(
        "It shows one refund of 9.95.",
        "changes",
        r"\breply MSG-[0-9A-F]{8}: to ",
        "`changes` also lists the reply sent to the customer, a write of its own; the page counts the refunds: one, of 9.95.",
    ),
    Difference(
        "Python prints the new refund, RF-4CFEAE8E.",
        "python",
        r"^\{'refund_id': 'RF-[0-9A-F]{8}'",
        "request_refund returns the refund as the core's dict (refund ID, order, payment, amount, "
        "currency), so Python prints the dict; the refund ID is compared.",
    ),
    Difference(
        "then finish at step 3",
        "trace",
        r"^step 3: resolve \(rule W7\) ",
        "Our trace names the model's last turn by its outcome, 'step 3: resolve (rule W7) | ...', "
        "where the page says 'finish'. The step numbers are compared.",
    ),
)
"""Every deliberate difference between the page and what the product prints, with its reason.
A later change to a printed line adds its row here."""


def difference(step: str, kind: str, line: str) -> Difference | None:
    for d in DIFFERENCES:
        if d.step == step and d.kind == kind and re.search(d.ours, opaque(line)):
            d.used += 1
            return d
    return None


# -- the page -------------------------------------------------------------------------------------


def seed_folder() -> Path:
    return Path(os.environ[SEED_ENV]) if os.environ.get(SEED_ENV) else ROOT.parent / "shared" / "seeds"


def read_page() -> list[str]:
    """The lines of seed 000; skips (fails under CI=true) when the seed is not there."""
    folder = seed_folder()
    found = sorted(folder.glob("000_*.txt"))
    if not found:
        reason = f"seed 000 (000_*.txt) is not in {folder}; set {SEED_ENV} to the folder that holds it"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{reason} (CI=true: the lesson test must run)")
        pytest.skip(reason)
    return found[0].read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def page() -> list[str]:
    return read_page()


PY_START = re.compile(r"^from resolver\.\w+ import ")
PY_LINE = re.compile(
    r"^(from |import |class |def |try:|except |finally:|if |for |while |with |return |print\(|"
    r"[A-Za-z_][\w.]*\s*=[^=]|[A-Za-z_][\w.]*\()"
)


@dataclass
class Step:
    """One step of the lesson: ``commands`` to run (or a Python ``block``), the page's output
    lines for it, and the prose checks that follow it."""

    key: str
    commands: list[str] = field(default_factory=list)
    block: str | None = None
    expected: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    clock: str | None = None


@dataclass
class Prose:
    """A sentence of the page that holds commands or facts: ``run`` (commands, as printed) and
    ``check`` (a name in :data:`CHECKS`, run on the output of the step it belongs to)."""

    sentence: str
    run: tuple[str, ...] = ()
    check: str | None = None
    own_step: bool = True
    used: int = 0


PROSE: tuple[Prose, ...] = (
    Prose(
        "A fresh practice database: run python -m resolver reset --all once before you start.",
        run=("python -m resolver reset --all",),
    ),
    Prose(
        "The output ends with Next: python -m resolver approve T-65273-agent-chat-small-1 --as team_lead.",
        check="ends_with_next",
        own_step=False,
    ),
    Prose("Python prints the new refund, RF-4CFEAE8E.", check="refund_id", own_step=False),
    Prose("Run python -m resolver reset --all before the next example.", run=("python -m resolver reset --all",)),
    Prose(
        "python -m resolver trace T-65273-crash-1 shows the three steps, numbered 1, 2 and 3.",
        run=("python -m resolver trace T-65273-crash-1",),
        check="trace_steps",
    ),
    Prose(
        "changes prints 0 change(s) in the practice database, and runs shows the run as executing.",
        run=("python -m resolver changes", "python -m resolver runs"),
        check="zero_changes_executing",
    ),
    Prose(
        "A second resume prints Nothing to resume: the run is done.",
        run=("python -m resolver resume T-90104-agent_structured-chat-strong-1",),
        check="nothing_to_resume",
    ),
    Prose(
        "4. Run python -m resolver reset --all. Then run the crash before the write and the resume from this "
        "lesson again, and python -m resolver changes. It shows one refund of 9.95.",
        run=(
            "python -m resolver reset --all",
            "python -m resolver run T-90104 --variant agent_structured --model chat-strong",
            "python -m resolver approve T-90104-agent_structured-chat-strong-1 --as agent --interrupt before-write",
            "python -m resolver resume T-90104-agent_structured-chat-strong-1",
            "python -m resolver changes",
        ),
        check="one_refund_of_9_95",
    ),
    Prose(
        'Change two lines: if state.step == 2: in save_then_crash, and the run ID "T-65273-crash-2". Run the code, then:',
        check="your_turn_block",
    ),
    Prose(
        "The outcome line is the same as before: 3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out.",
        check="same_outcome",
        own_step=False,
    ),
    Prose(
        "The trace shows get_payments at step 2, from before the crash, then finish at step 3.",
        check="get_payments_at_step_2",
        own_step=False,
    ),
)
"""The page's sentences that are steps or checks, each found on the page as printed."""

NOT_RUN: tuple[tuple[str, str], ...] = (
    (
        'raise KeyError(f"No run {run_id}. Run `python -m resolver runs` to see the saved runs.")',
        "a line of the code listing of resolver/checkpoint.py, not a command (our error names `resolver runs`)",
    ),
    (
        "python -m resolver runs shows two runs of T-90103.",
        "the common mistake is a story told, not a step: nobody runs T-90103 again at that point of the lesson",
    ),
    (
        "The process stopped: simulated crash before the write of",
        "an output line the page prints (compared as the output of the approve above it)",
    ),
)
"""(text on the page, why its ``python -m resolver`` is not run)."""


def plan(page: list[str]) -> list[Step]:
    """The lesson as steps, in the page's order (see the module docstring)."""
    steps: list[Step] = []
    pending_clock: str | None = None
    for prose in PROSE:
        prose.used = 0
    for anchor, _when, _why in TIMES:
        assert sum(1 for line in page if line.strip().startswith(anchor)) == 1, f"TIMES: {anchor!r} is not on the page once"
    i = 0
    crash_block = None
    while i < len(page):
        line = page[i].strip()
        for anchor, when, _why in TIMES:
            if line.startswith(anchor):
                pending_clock = when
        if line.startswith("python -m resolver "):
            commands = []
            while i < len(page) and page[i].strip().startswith("python -m resolver "):
                commands.append(page[i].strip())
                i += 1
            step = Step(" / ".join(commands), commands=commands, clock=pending_clock)
            pending_clock = None
            i = _expected_output(page, i, step)
            steps.append(step)
            continue
        if PY_START.match(page[i]):  # unindented: the page's test file is indented under its step
            start = i
            while i < len(page) and (not page[i].strip() or page[i].startswith((" ", "\t")) or PY_LINE.match(page[i])):
                i += 1
            block = "\n".join(page[start:i]).strip("\n") + "\n"
            ast.parse(block)  # the page's Python is Python
            step = Step(block.splitlines()[0], block=block, clock=pending_clock)
            pending_clock = None
            if "Crash" in block:
                crash_block = block
            i = _expected_output(page, i, step)
            steps.append(step)
            continue
        for prose in PROSE:
            if prose.sentence in line:
                prose.used += 1
                if prose.own_step:
                    step = Step(prose.sentence, commands=list(prose.run), clock=pending_clock)
                    pending_clock = None
                    if prose.check == "your_turn_block":
                        assert crash_block is not None, "the Your-turn exercise comes after the crash block"
                        step.block = your_turn(crash_block)
                    elif prose.check:
                        step.checks.append(prose.check)
                    steps.append(step)
                else:
                    steps[-1].checks.append(prose.check or "")
        i += 1
    return steps


def _expected_output(page: list[str], i: int, step: Step) -> int:
    """Collect the output lines printed after a step, up to the next sentence."""
    while i < len(page):
        text = page[i].strip()
        if not text:
            i += 1
            continue
        if kind_of(text) is None:
            break
        step.expected.append(text)
        i += 1
    return i


def your_turn(block: str) -> str:
    """The crash block with the two lines the page's answer changes."""
    assert block.count("if state.step == 1:") == 1 and block.count('"T-65273-crash-1"') == 1
    changed = block.replace("if state.step == 1:", "if state.step == 2:").replace('"T-65273-crash-1"', '"T-65273-crash-2"')
    return changed.replace('Crash("simulated crash after step 1")', 'Crash("simulated crash after step 2")')


# -- playing it -----------------------------------------------------------------------------------


@dataclass
class Lesson:
    """The temporary folder and home the lesson runs in."""

    folder: Path
    home: Path

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVER_")}
        return {**env, "RESOLVER_HOME": str(self.home)}

    def command(self, line: str) -> subprocess.CompletedProcess:
        assert line.startswith(PROGRAM + " "), line
        argv = [sys.executable, "-m", "resolver", *shlex.split(line[len(PROGRAM) + 1 :])]
        return subprocess.run(argv, capture_output=True, text=True, cwd=self.folder, env=self.env, timeout=120)

    def python(self, block: str) -> subprocess.CompletedProcess:
        """The block pasted into an interactive Python, then end of input."""
        return subprocess.run(
            [sys.executable, "-i", "-q"],
            input=block + "\n",
            capture_output=True,
            text=True,
            cwd=self.folder,
            env=self.env,
            timeout=120,
        )


def _out_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def compare(step: Step, output: str) -> list[str]:
    """What differs between the page's output lines and ours for one step (see the module
    docstring for the rules); [] when they agree."""
    kinds = {kind_of(line) for line in step.expected}
    ours = [line for line in _out_lines(output) if kind_of(line) in kinds]
    ours = [line for line in ours if difference(step.key, kind_of(line) or "", line) is None]
    want = step.expected
    problems: list[str] = []
    if [_without_time(line) for line in ours] != [_without_time(line) for line in want]:
        problems.append(f"{step.key}: the page prints\n    " + "\n    ".join(want) + "\n  we print\n    " + "\n    ".join(ours))
        return problems
    for theirs, mine in zip(want, ours, strict=True):
        if kind_of(theirs) == "runs_row":
            t, m = (datetime.fromisoformat(squash(x).rsplit(" ", 1)[1]) for x in (theirs, mine))
            if abs(m - t) > TIME_SLACK:
                problems.append(
                    f"{step.key}: the runs row's time {m.isoformat()} is not within {TIME_SLACK} of the page's {t.isoformat()}"
                )
    return problems


def _without_time(line: str) -> str:
    text = opaque(line)
    return text.rsplit(" ", 1)[0] if kind_of(line) == "runs_row" else text


def _number(pattern: str, text: str) -> str:
    found = re.search(pattern, text)
    assert found, f"{pattern!r} is not in {text!r}"
    return found.group(1)


def check(name: str, step: Step, output: str, page_text: str) -> list[str]:
    """One prose claim of the page, checked on the output of its step; [] when it holds."""
    lines = _out_lines(output)
    if name == "ends_with_next":
        said = _number(r"The output ends with (Next: python -m resolver [^.]+?)\.", page_text)
        return [] if lines and lines[-1].strip() == said else [f"{step.key}: the output does not end with {said!r}: {lines[-1:]}"]
    if name == "refund_id":
        refund = _number(r"Python prints the new refund, (RF-[0-9A-F]{8})", page_text)
        printed = [line for line in lines if refund in line]
        for line in printed:
            difference("Python prints the new refund, RF-4CFEAE8E.", "python", line)
        return [] if printed else [f"{step.key}: Python did not print {refund}: {lines}"]
    if name == "trace_steps":
        said = [int(n) for n in re.findall(r"\d", _number(r"shows the three steps, numbered ([\d, and]+)", page_text))]
        steps = [int(n) for n in re.findall(r"\bstep (\d+):", output)]
        return [] if steps == said else [f"{step.key}: the trace's steps are {steps}, the page says {said}"]
    if name == "zero_changes_executing":
        said = _number(r"changes prints (\d+) change\(s\)", page_text)
        first = lines[0] if lines else ""
        difference("changes prints 0 change(s)", "changes", first)
        problems = [] if first.startswith(f"{said} change(s)") else [f"{step.key}: changes says {first!r}, the page {said}"]
        rows = [squash(line) for line in lines if kind_of(line) == "runs_row"]
        if not any(r.startswith("T-90104-agent_structured-chat-strong-1 executing ") for r in rows):
            problems.append(f"{step.key}: runs does not show T-90104 executing: {rows}")
        return problems
    if name == "nothing_to_resume":
        said = _number(r"A second resume prints (Nothing to resume: the run is \w+\.)", page_text)
        return [] if said in lines else [f"{step.key}: the second resume prints {lines}, not {said!r}"]
    if name == "one_refund_of_9_95":
        changes = output[output.rindex("change(s) in the practice world") :]
        refunds = re.findall(r"refund RF-[0-9A-F]{8}: ([\d.]+) CAD", changes)
        for line in changes.splitlines()[1:]:
            difference("It shows one refund of 9.95.", "changes", line.strip())
        return [] if refunds == ["9.95"] else [f"{step.key}: changes shows the refunds {refunds}, the page one of 9.95"]
    if name == "same_outcome":
        said = _number(r"The outcome line is the same as before: (3 model call\(s\)[^.]+ out)\.", page_text)
        outcome = [line for line in lines if line.startswith("Outcome: ")]
        return [] if len(outcome) == 1 and said in outcome[0] else [f"{step.key}: the outcome {outcome} does not hold {said!r}"]
    if name == "get_payments_at_step_2":
        problems = []
        if not re.search(r"\bstep 2: get_payments\b", output):
            problems.append(f"{step.key}: the trace has no get_payments at step 2")
        step3 = re.findall(r"\bstep 3: .*", output)
        if len(step3) != 1:
            problems.append(f"{step.key}: the trace has {len(step3)} step 3 line(s), not one: {step3}")
        else:
            difference("then finish at step 3", "trace", step3[0])
        return problems
    raise AssertionError(f"no check named {name}")


def play(lesson: Lesson, steps: list[Step], page_text: str) -> tuple[list[str], list[str]]:
    """Play every step; returns (the problems found, a log of what ran)."""
    problems: list[str] = []
    log: list[str] = []
    for step in steps:
        if step.clock:
            set_clock = lesson.command(f"{PROGRAM} clock set {step.clock}")
            assert set_clock.returncode == 0, set_clock.stderr
        output = ""
        if step.block is not None:
            done = lesson.python(step.block)
            log.append(f">>> {step.key}")
            if "Traceback" in done.stderr or done.returncode != 0:
                problems.append(f"{step.key}: Python failed:\n{done.stderr[-2000:]}")
            output += done.stdout
        for command in step.commands:
            done = lesson.command(command)
            log.append(f"$ {command} -> {done.returncode}")
            crashed = done.returncode == 3 and "The process stopped:" in done.stdout
            handed = done.returncode == 5 and done.stdout.rstrip().endswith("Status: handed_to_person")  # documented exit code
            if done.returncode != 0 and not crashed and not handed:
                problems.append(f"{command}: exit code {done.returncode}: {done.stderr.strip()}")
            if "Traceback" in done.stderr:
                problems.append(f"{command}: a traceback:\n{done.stderr[-2000:]}")
            output += done.stdout
        problems += compare(step, output)
        for name in step.checks:
            problems += check(name, step, output, page_text)
    return problems, log


@pytest.mark.slow
def test_the_lesson_runs_as_printed(page, tmp_path):
    steps = plan(page)
    page_text = "\n".join(page)

    unused = [p.sentence for p in PROSE if p.used != 1]
    assert not unused, f"sentences of PROSE not found once on the page (the page changed?): {unused}"
    mentions = sum(line.count("python -m resolver") for line in page)
    played = sum(1 for line in page if line.strip().startswith("python -m resolver "))
    in_prose = sum(p.sentence.count("python -m resolver") for p in PROSE)
    not_run = [text for text, _why in NOT_RUN if text in page_text]
    assert len(not_run) == len(NOT_RUN), f"NOT_RUN rows not on the page: {set(t for t, _ in NOT_RUN) - set(not_run)}"
    accounted = played + in_prose + sum(text.count("python -m resolver") or 1 for text in not_run)
    assert mentions == accounted, f"{mentions} `python -m resolver` on the page, {accounted} played or explained"

    for d in DIFFERENCES:
        d.used = 0
    lesson = Lesson(tmp_path / "lesson", tmp_path / "lesson" / "home")
    lesson.folder.mkdir()
    problems, log = play(lesson, steps, page_text)
    assert not problems, "\n\n".join(problems) + "\n\nSteps:\n" + "\n".join(log)
    stale = [f"{d.step} / {d.kind}" for d in DIFFERENCES if d.used == 0]
    assert not stale, f"rows of DIFFERENCES that no step needed any more (remove them): {stale}"
    assert not (lesson.folder / "work").exists()  # the default home was never touched


def test_the_lesson_plays_the_your_turn_exercise(page):
    steps = plan(page)
    turn = [s for s in steps if s.block and '"T-65273-crash-2"' in s.block]
    assert len(turn) == 1 and "if state.step == 2:" in (turn[0].block or "")
    after = steps[steps.index(turn[0]) + 1]
    assert after.commands == ["python -m resolver resume T-65273-crash-2", "python -m resolver trace T-65273-crash-2"]
    assert {"same_outcome", "get_payments_at_step_2"} <= set(after.checks)


PYTEST_COUNTS: tuple[tuple[str, str], ...] = (
    (
        "It prints 45 passed.",
        "the page counts the tests of its own small project; this project has hundreds, and the whole suite "
        "takes minutes: the learner runs the page's file alone, `python -m pytest tests/test_checkpoint.py`",
    ),
    (
        "It prints 47 passed.",
        "the same: `python -m pytest tests/test_checkpoint.py` prints 2 passed, the page's two tests",
    ),
    (
        "tests/test_checkpoint.py: 47 passed.",
        "the recap's count is the page's project's; here the page's file alone: 2 passed",
    ),
)
"""The Guided practice's test counts, which are the page's project's, not this one's: (line on the
page, what the learner sees here and why). The learner's command and its 2 passed are played by
:func:`test_the_guided_practice_in_a_fresh_clone`."""


def _fresh_clone(dest: Path) -> Path:
    """The project's tracked files copied into ``dest``, as a fresh clone has them (no ``.venv``,
    no ``./work``, no caches)."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True)
    for name in listed.stdout.decode().split("\0"):
        source = ROOT / name
        if name and source.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    return dest


def _page_test_file(page: list[str]) -> str:
    text = "\n".join(page)
    start = text.index('"""Checkpoint and resume: the whole state survives the process."""')
    end_marker = 'assert "T-90104-agent-chat-small-1" in capsys.readouterr().out'
    end = text.index(end_marker, start) + len(end_marker)
    # The page indents the file under its step; the first line starts at the marker itself.
    body = text[start:end].splitlines()
    source = body[0] + "\n" + textwrap.dedent("\n".join(body[1:])) + "\n"
    ast.parse(source)
    return source


def test_the_pages_own_test_file_passes(page, tmp_path):
    source = _page_test_file(page)
    project = tmp_path / "learner"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_page_checkpoint.py").write_text(source, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVER_")}
    env["RESOLVER_HOME"] = str(tmp_path / "learner-home")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_page_checkpoint.py"],
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout
    assert not (project / "work").exists()


@pytest.mark.slow
def test_the_guided_practice_in_a_fresh_clone(page, tmp_path):
    """The Guided practice as a learner plays it in a fresh clone, with no ``RESOLVER_HOME`` set:
    ``tests/test_checkpoint.py`` is not a project file (making it loses nothing), the project's
    conftest gives the page's tests a temporary home (its second test calls the command line
    without ``--home``), ``python -m pytest tests/test_checkpoint.py`` prints 2 passed, and
    ``./work`` is never made."""
    page_text = "\n".join(page)
    assert "2. Make the file tests/test_checkpoint.py." in page_text
    missing = [line for line, _why in PYTEST_COUNTS if line not in page_text]
    assert not missing, f"PYTEST_COUNTS rows not on the page (the page changed?): {missing}"
    clone = _fresh_clone(tmp_path / "clone")
    made = clone / "tests" / "test_checkpoint.py"
    assert not made.exists(), "the page's file would overwrite a project file"
    tests_before = sorted(p.name for p in (clone / "tests").rglob("test_*.py"))
    made.write_text(_page_test_file(page), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVER_")}
    env["HOME"] = str(tmp_path / "user")  # no config file of the real user names a home
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tests/test_checkpoint.py"],
        capture_output=True,
        text=True,
        cwd=clone,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout.splitlines()[-1]
    assert not (clone / "work").exists(), "the page's second test wrote into the clone's ./work"
    assert sorted(p.name for p in (clone / "tests").rglob("test_*.py")) == sorted([*tests_before, "test_checkpoint.py"])


def test_without_the_seed_the_lesson_test_skips_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setenv(SEED_ENV, str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"seed 000 .* is not in"):
        read_page()


def test_without_the_seed_the_lesson_test_fails_under_ci(tmp_path, monkeypatch):
    monkeypatch.setenv(SEED_ENV, str(tmp_path))
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        read_page()
