"""``tools/mutants.py`` stays runnable: every mutant's text is in its file exactly once and every
test it names exists, so a guard that moves fails here, in the ordinary suite, before the mutation
pass in ``.ci/run`` says it went stale."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _mutants():
    spec = importlib.util.spec_from_file_location("resolver_mutants", ROOT / "tools" / "mutants.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_mutant_applies_once_and_names_existing_tests():
    module = _mutants()
    assert len(module.MUTANTS) == len({m.name for m in module.MUTANTS}) >= 20
    for m in module.MUTANTS:
        text = (ROOT / m.path).read_text(encoding="utf-8")
        for before, after in m.edits:
            assert text.count(before) == 1, (m.name, before)
            assert before != after
        assert m.tests, m.name
        for node in m.tests:
            path, name = node.split("::")
            source = (ROOT / path).read_text(encoding="utf-8")
            assert re.search(rf"^def {re.escape(name)}\(", source, re.M), (m.name, node)


def test_the_ci_runs_the_mutants_in_its_first_step():
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    first_step = run.split("# Second step", 1)[0]
    assert "\n.venv/bin/python tools/mutants.py\n" in first_step
