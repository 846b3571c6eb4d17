"""Print pip constraints that pin every declared dependency to its lowest declared version.

Reads ``pyproject.toml`` (the runtime dependencies and the ``test`` extra) and turns each
``name>=X`` into ``name==X``; a requirement without a floor is left out. ``.ci/run`` installs the
project with these constraints into a second virtual environment and runs the suite there, so
the floors we declare are floors that work.

Usage: ``python tools/lowest_constraints.py [EXTRA ...] > constraints.txt`` (default extra: test).
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_FLOOR = re.compile(r"^\s*([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?\s*(?:[^>]*?,\s*)?>=\s*([0-9][^,;\s]*)")


def lowest(requirements: list[str]) -> list[str]:
    """``["pydantic>=2.10,<3", "x"]`` -> ``["pydantic==2.10"]``: one pin per requirement with a floor."""
    pins = []
    for req in requirements:
        found = _FLOOR.match(req)
        if found:
            pins.append(f"{found.group(1)}=={found.group(2)}")
    return pins


def main(extras: list[str]) -> int:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    for extra in extras or ["test"]:
        requirements += project["optional-dependencies"][extra]
    print("\n".join(lowest(requirements)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
