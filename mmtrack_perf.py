"""Console entry point of the ``mmtrack-perf`` distribution (which imports as ``mmtrack``).

The PyPI name ``mmtrack`` belongs to an unrelated project with the same import name. If that package is
installed over this one, ``import mmtrack`` loads its code instead of ours; this launcher says so in one
line instead of failing with a traceback from someone else's package.
"""

from __future__ import annotations

import sys

DISTRIBUTION = "mmtrack-perf"


def clash_message(detail: str) -> str:
    return (
        f"mmtrack: `import mmtrack` does not load {DISTRIBUTION} ({detail}); the unrelated PyPI package "
        f"'mmtrack' shares its import name: run `pip uninstall mmtrack`, then `pip install --force-reinstall "
        f"{DISTRIBUTION}`"
    )


def main() -> None:
    try:
        import mmtrack
        from mmtrack.cli import main as cli_main
    except ImportError as exc:
        sys.stderr.write(clash_message(f"{type(exc).__name__}: {exc}") + "\n")
        sys.exit(2)
    if getattr(mmtrack, "__distribution__", None) != DISTRIBUTION:
        sys.stderr.write(clash_message(f"it loaded {getattr(mmtrack, '__file__', '?')}") + "\n")
        sys.exit(2)
    cli_main()


if __name__ == "__main__":
    main()
