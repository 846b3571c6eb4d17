"""``resolver-tui`` / ``python -m resolver_tui``: open the approvals app."""

import sys


def main() -> None:
    print("The approvals app is not built yet.", file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
    main()
