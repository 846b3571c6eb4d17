"""Fixtures for the app's Pilot and snapshot tests: a temporary home with a fixed clock."""

from __future__ import annotations

from pathlib import Path

import pytest
from core.demo import build_demo
from core.home import Home
from tui_helpers import monday_home


@pytest.fixture
def home(tmp_path: Path) -> Home:
    """An empty home on Monday morning (2026-10-12 09:00)."""
    return monday_home(tmp_path / "home")


@pytest.fixture
def demo_home(home: Home) -> Home:
    """The demo queue, seen on Monday 2026-10-12 09:00."""
    build_demo(home)
    return home
