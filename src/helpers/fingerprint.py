"""Record or compare what decides the numbers on a machine, from a shell.

    python -m helpers.fingerprint                  # print the fingerprint as a table
    python -m helpers.fingerprint --json FILE      # write it as JSON (FILE may be - for stdout)
    python -m helpers.fingerprint --diff A.json B.json

``--diff`` prints the settings in which two recorded fingerprints differ and exits with 0 when
they agree, 1 when they differ, and 2 (with a message) when a file is missing or malformed.
The functions are ``helpers.diagnose.fingerprint`` and ``diff_fingerprints``. Introduced in lesson 12.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from helpers.diagnose import diff_fingerprints, fingerprint
from helpers.tables import Table

__all__ = ["main"]


def _load(path: str) -> dict:
    """A fingerprint read from a JSON file; ``ValueError`` with a message saying what is wrong."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: cannot read it ({type(error).__name__}: {error})") from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{path}: holds a JSON {type(record).__name__}, not an object of settings")
    return record


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status (0 agree or done, 1 differ, 2 bad file)."""
    parser = argparse.ArgumentParser(
        prog="python -m helpers.fingerprint",
        description="Print, record or compare the settings that decide which numbers PyTorch computes.",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--json", metavar="FILE", help="write the fingerprint as JSON to FILE (- for stdout)")
    group.add_argument("--diff", nargs=2, metavar=("A", "B"), help="compare two recorded fingerprints")
    args = parser.parse_args(argv)

    if args.diff:
        a_path, b_path = args.diff
        try:
            a, b = _load(a_path), _load(b_path)
            table = diff_fingerprints(a, b, title=f"Settings that differ (a: {a_path}, b: {b_path})")
        except (TypeError, ValueError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        if not table.rows:
            print(f"The fingerprints agree ({len(a)} settings).")
            return 0
        print(table)
        return 1

    record = fingerprint()
    if args.json is not None:
        text = json.dumps(record, indent=2, sort_keys=True) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
        else:
            try:
                Path(args.json).write_text(text, encoding="utf-8")
            except OSError as error:
                print(f"error: cannot write {args.json}: {error}", file=sys.stderr)
                return 2
        return 0
    print(Table(["setting", "value"], list(record.items()), title="Fingerprint"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
