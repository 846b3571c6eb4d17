"""Fixtures for the app's Pilot and snapshot tests: an empty home with a fixed clock (the demo
queue, ``demo_home``, comes from ``tests/conftest.py``, built once per session)."""

from __future__ import annotations

from pathlib import Path

import pytest
from core.api.home import Home
from tui_helpers import monday_home


@pytest.fixture
def home(tmp_path: Path) -> Home:
    """An empty home on Monday morning (2026-10-12 09:00)."""
    return monday_home(tmp_path / "home")
