"""Write SVGs of the app's main screens into ``screenshots/``: ``python tools/screenshots.py``.

Uses a temporary home with the demo queue and a fixed clock (Monday 2026-10-12 09:00
America/Toronto), so the pictures only change when the app does.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.clock import FixedClock  # noqa: E402
from core.demo import build_demo  # noqa: E402
from core.home import Home  # noqa: E402
from resolver_tui.app import ResolverApp  # noqa: E402

MONDAY = "2026-10-12T09:00:00-04:00"
SIZE = (120, 40)
OUT = ROOT / "screenshots"


async def settle(pilot) -> None:
    for _ in range(4):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def shoot(home: Home, name: str, keys: list[str]) -> Path:
    app = ResolverApp(home, "team_lead", "Tomás", refresh_interval=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
        app.clear_notifications()
        await settle(pilot)
        path = OUT / f"{name}.svg"
        path.write_text(app.export_screenshot(title=f"resolver-tui: {name.replace('-', ' ')}"), encoding="utf-8")
    return path


async def main() -> None:
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp) / "home", clock=FixedClock(MONDAY))
        shots = [await shoot(home, "empty-home", [])]
        build_demo(home)
        shots += [
            await shoot(home, "queue", []),
            await shoot(home, "request-detail", ["enter", "pagedown"]),
            await shoot(home, "compare", ["j", "d"]),
            await shoot(home, "approve-dialog", ["a"]),
            await shoot(home, "reject-dialog", ["x"]),
            await shoot(home, "help", ["question_mark"]),
            await shoot(home, "running-trace", ["3"]),
            await shoot(home, "executed-run", ["a", "y", "6"]),
        ]
    for path in shots:
        print(path.relative_to(ROOT))


if __name__ == "__main__":
    asyncio.run(main())
