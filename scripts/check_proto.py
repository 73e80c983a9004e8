"""Fail when the committed stubs differ from what `make proto` would generate."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from protogen import ROOT, generate, generated_files


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        fresh = generated_files(Path(tmp))
    committed = generated_files(ROOT)
    problems = [f"missing: {name}" for name in sorted(fresh.keys() - committed.keys())]
    problems += [f"stale extra file: {name}" for name in sorted(committed.keys() - fresh.keys())]
    problems += [
        f"differs: {name}"
        for name in sorted(fresh.keys() & committed.keys())
        if fresh[name] != committed[name]
    ]
    if problems:
        print("generated protobuf code is out of date; run `make proto` and commit:", file=sys.stderr)
        for line in problems:
            print(f"  {line}", file=sys.stderr)
        return 1
    print(f"generated protobuf code is up to date ({len(fresh)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
