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

from core.api.home import Home  # noqa: E402
from core.ground.clock import FixedClock  # noqa: E402
from core.ground.identity import SeededRunUids, using  # noqa: E402
from core.trainer import lesson  # noqa: E402
from core.trainer.demo import build_demo  # noqa: E402
from resolver_tui.app import ResolverApp  # noqa: E402

MONDAY = "2026-10-12T09:00:00-04:00"
SIZE = (120, 40)
OUT = ROOT / "screenshots"


async def settle(pilot) -> None:
    for _ in range(4):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def shoot(
    home: Home,
    name: str,
    keys: list[str],
    *,
    role: str = "team_lead",
    who: str = "Tomás",
    select: str | None = None,
    trainer: bool = False,
) -> Path:
    """Open the app, jump to ``select`` if given, press ``keys`` and save the screen as SVG.
    A key ``"@RUN"`` jumps to that run instead."""
    app = ResolverApp(home, role, who, refresh_interval=None, trainer=trainer)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for key in ([f"@{select}"] if select else []) + keys:
            if key.startswith("@"):
                app.queue.jump_to(key[1:])
            else:
                await pilot.press(key)
            await settle(pilot)
        app.clear_notifications()
        await settle(pilot)
        path = OUT / f"{name}.svg"
        path.write_text(app.export_screenshot(title=f"resolver-tui: {name.replace('-', ' ')}"), encoding="utf-8")
    return path


async def trainer_shots(root: Path) -> list[Path]:
    """The screens of docs/TRAINER.md: the class played with the lesson's own moments, with
    seeded run identities so the operation IDs on screen stay the same."""
    with using(SeededRunUids("trainer-screenshots")):
        return await _trainer_shots(root)


async def _trainer_shots(root: Path) -> list[Path]:
    home = Home(root, clock=FixedClock(MONDAY))
    grace = {"role": "grace", "who": "Grace", "trainer": True}
    lesson.moment_friday(home)
    shots = [await shoot(home, "trainer-friday", [], select=lesson.T65273_RUN, **grace)]
    lesson.moment_weekend_call(home)
    lesson.moment_monday(home)
    shots.append(await shoot(home, "trainer-refused", ["a", "y", "4", f"@{lesson.T65273_RUN}"], **grace))
    lesson.moment_crash_before_write(home)
    run = "T-90104-agent_structured-chat-strong-1"
    shots.append(await shoot(home, "trainer-resumed", ["2", f"@{run}", "u", "6", f"@{run}"], **grace))
    lesson.moment_run_again(home)
    shots.append(await shoot(home, "trainer-compare", ["1", "@T-90103-agent-chat-small-1", "d"], **grace))
    return shots


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
        shots += await trainer_shots(Path(tmp) / "class")
    for path in shots:
        print(path.relative_to(ROOT))


if __name__ == "__main__":
    asyncio.run(main())
