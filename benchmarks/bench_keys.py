"""What one passphrase guess costs against a stored approver key.

    .venv/bin/python benchmarks/bench_keys.py          # 5 rounds each
    .venv/bin/python benchmarks/bench_keys.py --quick  # 1 round each

Prints the time of one unlock attempt (the attacker's cost per guess, on one core) for a key
encrypted by resolver today (scrypt at ``core.engine.approvers.KEY_COST``, then AES-256-GCM) beside a
key as resolver wrote it before its keys moved to scrypt (PKCS#8 PBES2, PBKDF2-HMAC-SHA256 at 2,048 iterations, what
``cryptography``'s ``BestAvailableEncryption`` writes), and the guesses per second each allows.
The target is about 0.25 s a guess. Nothing is asserted: a busy machine never fails a build.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.engine import approvers
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def _time(fn, rounds: int) -> float:
    runs = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - started)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round each")
    rounds = 1 if parser.parse_args().quick else 5
    key = Ed25519PrivateKey.generate()
    public = approvers.public_hex(key)
    now = approvers._encrypt(key, "correct horse battery")
    before = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"correct horse battery"),
    ).decode("ascii")
    cost = approvers.KEY_COST
    print("## one passphrase guess against a stored key")
    for label, stored in ((f"scrypt n={cost.n} r={cost.r} p={cost.p} (now)", now), ("PBKDF2 2,048 (before scrypt)", before)):
        guess = _time(lambda stored=stored: approvers._decrypt(stored, "wrong guess here", public), rounds)
        print(f"{label:<40} {guess * 1000:9.1f} ms a guess  {1 / guess:9.0f} guesses/s")
    target = 0.25
    guess = _time(lambda: approvers._decrypt(now, "wrong guess here", public), rounds)
    print(f"target about {target:.2f} s a guess: {'met' if guess >= target * 0.8 else 'MISSED'} ({guess:.2f} s)")


if __name__ == "__main__":
    main()
