"""The README stays true: its story runs as written, and CI runs its test command."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(section: str) -> list[str]:
    body = README.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", body, re.S)


def test_ci_runs_exactly_the_readme_test_command():
    setup = _blocks("Set-up")
    assert len(setup) == 2
    test_command = setup[1].strip()
    assert "pytest" in test_command
    assert test_command in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


@pytest.mark.slow
def test_the_friday_to_monday_story_runs_as_written(tmp_path):
    env = {**os.environ, "RESOLVER_HOME": str(tmp_path / "work")}
    env.pop("RESOLVER_KILL_AT", None)
    outputs = []
    for block in _blocks("Friday to Monday, on the command line"):
        for line in block.strip().splitlines():
            if line.startswith(". .venv/bin/activate"):
                continue
            argv = shlex.split(line)
            assert argv[0] == "resolver", line
            result = subprocess.run(
                [sys.executable, "-m", "core", *argv[1:]], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
            )
            handed = line == "resolver approve T-65273-agent-chat-small-1 --as grace --name Grace"
            expected = 3 if "--interrupt" in argv else 5 if handed else 0  # the README's exit codes (issue 13)
            assert result.returncode == expected, f"{line}\n{result.stdout}\n{result.stderr}"
            outputs.append((line, result.stdout))
    text = dict(outputs)
    assert "Status: handed_to_person" in text["resolver approve T-65273-agent-chat-small-1 --as grace --name Grace"]
    assert "RF-4CFEAE8E" in text["resolver manual-refund manual-1 LK-507862 119.00 RFD-DOUBLE PAY-507862-2"]
    resumes = [out for line, out in outputs if line == "resolver resume T-90104-agent_structured-chat-strong-1"]
    assert resumes[-1].strip() == "Nothing to resume: the run is done."
