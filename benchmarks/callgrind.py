"""Instruction counts of marked regions of a Python process, with valgrind's callgrind.

Wall-clock medians move with the machine's load; the instructions a piece of code executes do
not (to within a fraction of a percent, given the same inputs and hash seed). So beside each
timed figure the benchmarks run a driver process under callgrind and print the instructions of
the same call, and the ratio of ours to the anchor's in instructions.

How a region is counted: the driver runs under ``valgrind --tool=callgrind --collect-atstart=no``
(nothing is counted while Python starts, imports and sets up), and :meth:`Meter.region` brackets
the measured call with callgrind's client requests, the ones ``callgrind.h``'s
``CALLGRIND_ZERO_STATS``, ``CALLGRIND_TOGGLE_COLLECT`` and ``CALLGRIND_DUMP_STATS_AT`` issue: zero,
collect on, the call, collect off, dump with the region's label. Each region is one dump file
whose ``totals:`` line is its instruction count (Ir), every thread included. A client request is
a "magic" no-op instruction sequence that valgrind recognises (valgrind.h, amd64); Python cannot
emit it, so :class:`Meter` writes those 27 bytes of machine code into an executable page and
calls them through ``ctypes``. Outside valgrind the sequence does nothing and returns 0, so a
driver also runs (uncounted) without it. The ``ctypes`` call itself costs a few thousand
instructions per region: :func:`floor` measures an empty region, and the figures subtract it.

Linux on x86-64 only (the byte sequence is amd64's); :func:`available` says whether it can run.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import platform
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["Meter", "available", "counted", "why_not"]

# valgrind.h, VALGRIND_DO_CLIENT_REQUEST_EXPR for amd64-linux: %rax points at the request's six
# words, the default result is in %rdx, and the four rotations of %rdi (3+13+61+51 = 128 bits,
# so %rdi is unchanged) followed by xchg %rbx,%rbx tell valgrind to act on the request.
_CODE = bytes.fromhex(
    "4889f8"  # mov %rdi,%rax      (the argument block, the C function's first argument)
    "31d2"  # xor %edx,%edx        (result 0 when not on valgrind)
    "48c1c703"  # rol $3,%rdi
    "48c1c70d"  # rol $13,%rdi
    "48c1c73d"  # rol $61,%rdi
    "48c1c733"  # rol $51,%rdi
    "4887db"  # xchg %rbx,%rbx
    "4889d0"  # mov %rdx,%rax
    "c3"  # ret
)
_RUNNING_ON_VALGRIND = 0x1001
_CALLGRIND = (ord("C") << 24) | (ord("T") << 16)  # VG_USERREQ_TOOL_BASE('C','T'), callgrind.h
_ZERO_STATS = _CALLGRIND + 1
_TOGGLE_COLLECT = _CALLGRIND + 2
_DUMP_STATS_AT = _CALLGRIND + 3


def why_not() -> str | None:
    """Why instruction counts cannot be taken here, as one sentence; None when they can."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return f"instruction counts need valgrind on Linux x86-64 (this is {platform.system()} {platform.machine()})"
    if shutil.which("valgrind") is None:
        return "instruction counts not measured: valgrind is not installed (apt-get install valgrind)"
    return None


def available() -> bool:
    """True when :func:`counted` can run (Linux x86-64 with ``valgrind`` on the PATH)."""
    return why_not() is None


class Meter:
    """Client requests to callgrind from inside the driver process (see the module's docstring).

    ``Meter().region("save")`` counts the instructions of its block as one region labelled
    ``save``; :attr:`on_valgrind` is False outside valgrind, where regions count nothing."""

    def __init__(self) -> None:
        self._page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        self._page.write(_CODE)
        address = ctypes.addressof(ctypes.c_char.from_buffer(self._page))
        self._call = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t))(address)
        self.on_valgrind = bool(self._request(_RUNNING_ON_VALGRIND))

    def _request(self, code: int, arg: int = 0) -> int:
        block = (ctypes.c_size_t * 6)(code, arg, 0, 0, 0, 0)
        return int(self._call(block))

    def start(self) -> None:
        """Zero the counters and start counting (the first half of :meth:`region`)."""
        self._request(_ZERO_STATS)
        self._request(_TOGGLE_COLLECT)

    def stop(self, label: str) -> None:
        """Stop counting and dump what was counted since :meth:`start` as the region ``label``
        (letters, digits, ``-`` and ``_``)."""
        self._request(_TOGGLE_COLLECT)
        name = ctypes.create_string_buffer(label.encode())
        self._request(_DUMP_STATS_AT, ctypes.addressof(name))

    @contextmanager
    def region(self, label: str) -> Iterator[None]:
        """Count the block's instructions as one region ``label``."""
        self.start()
        try:
            yield
        finally:
            self.stop(label)


def floor(meter: Meter, n: int) -> None:
    """``n`` empty regions labelled ``floor``: the cost of the marking itself."""
    for _ in range(n):
        with meter.region("floor"):
            pass


_TRIGGER = re.compile(r"^desc: Trigger: Client Request: (\S+)$", re.M)
_TOTALS = re.compile(r"^totals: (\d+)", re.M)


def counted(argv: list[str], timeout: float = 1800.0, whole: bool = False) -> tuple[dict[str, list[int]], str]:
    """Run ``argv`` (a Python driver using :class:`Meter`) under callgrind; return the
    instructions of each region by label, in the order counted, and the driver's stdout.
    ``whole=True`` counts the whole process instead (any command; start-up, imports and exit
    included), as the one region ``whole``.

    The driver runs with ``PYTHONHASHSEED=0`` (set orders, hence instructions, repeat). Its
    ``argv[0]`` must be the interpreter itself, not a shell wrapper such as pyenv's shim
    (valgrind does not follow ``exec``; ``sys.executable`` is fine).

    Raises:
        RuntimeError: valgrind is missing, or the driver failed (its stderr's tail in the sentence).
    """
    reason = why_not()
    if reason is not None:
        raise RuntimeError(reason)
    with tempfile.TemporaryDirectory(prefix="callgrind-") as folder:
        out = Path(folder) / "cg.out"
        proc = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--collect-atstart={'yes' if whole else 'no'}",
                f"--callgrind-out-file={out}",
                "--log-file=" + str(Path(folder) / "valgrind.log"),
                *argv,
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        if proc.returncode != 0:
            raise RuntimeError(f"the callgrind driver {' '.join(argv[1:3])} failed: {proc.stderr[-1500:]}")
        regions: dict[str, list[int]] = {}
        if whole:
            totals = _TOTALS.search(out.read_text())
            if totals is None:
                raise RuntimeError(f"callgrind wrote no totals for {' '.join(argv)}")
            return {"whole": [int(totals.group(1))]}, proc.stdout
        dumps = sorted(Path(folder).glob("cg.out.*"), key=lambda p: int(p.suffix[1:]))
        for dump in dumps:
            text = dump.read_text()
            trigger, totals = _TRIGGER.search(text), _TOTALS.search(text)
            if trigger and totals:
                regions.setdefault(trigger.group(1), []).append(int(totals.group(1)))
        return regions, proc.stdout
