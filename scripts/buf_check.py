"""`buf lint` and `buf breaking` on protos/, as `make lint` (and so CI) runs them.

The breaking check compares the working tree with an earlier commit (the
previous commit by default, `--against REF` otherwise), read with
`git archive` so it works the same in a clone, a worktree or a shallow CI
checkout. The contract is guarded from the commit that added buf.yaml on:
against a commit without it, or when there is no such commit at all (the
first commit of a clone), the check is skipped with a message saying why.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUF = ROOT / "clients" / "node" / "node_modules" / ".bin" / "buf"
PROTO_DIR = "protos"
# Vendored Google files the contract imports. The earlier contract is
# compared in today's workspace layout (this buf.yaml, these files): only
# protos/ is ours to keep compatible.
THIRD_PARTY_DIR = "third_party/protos"


def run_buf(*args: str) -> int:
    """Run buf from the repository root; its findings go straight to the terminal."""
    if not BUF.exists():
        print(f"{BUF.relative_to(ROOT)} is missing: run `make install-node`", file=sys.stderr)
        return 2
    return subprocess.run([str(BUF), *args], cwd=ROOT, check=False).returncode


def commit_of(ref: str) -> str | None:
    """The commit `ref` names, or None when it names none (no previous commit)."""
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return found.stdout.strip() or None


def has_path(commit: str, path: str) -> bool:
    """Whether `path` exists in `commit`'s tree."""
    listed = subprocess.run(
        ["git", "ls-tree", "--name-only", commit, path],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return bool(listed.stdout.strip())


def extract(commit: str, path: str, into: Path) -> None:
    """Write `path` as of `commit` under `into` (git archive, so no checkout is touched)."""
    archive = into / "against.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "archive", "--format=tar", commit, path], cwd=ROOT, stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    archive.unlink()


def breaking(ref: str) -> int:
    """`buf breaking` of the working tree against `ref`, or a skip message."""
    commit = commit_of(ref)
    if commit is None:
        print(f"buf breaking: skipped, {ref} names no commit (nothing earlier to compare with)")
        return 0
    if not has_path(commit, "buf.yaml") or not has_path(commit, PROTO_DIR):
        print(f"buf breaking: skipped, {ref} ({commit[:12]}) predates the guarded contract (no buf.yaml)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        extract(commit, PROTO_DIR, Path(tmp))
        shutil.copy(ROOT / "buf.yaml", Path(tmp) / "buf.yaml")
        shutil.copytree(ROOT / THIRD_PARTY_DIR, Path(tmp) / THIRD_PARTY_DIR)
        code = run_buf("breaking", ".", "--against", tmp)
    if code == 0:
        print(f"buf breaking: no breaking change against {ref} ({commit[:12]})")
    return code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="HEAD~1", help="git ref to compare with (default: HEAD~1)")
    args = parser.parse_args()
    code = run_buf("lint")
    if code == 0:
        print("buf lint: clean")
    return code or breaking(args.against)


if __name__ == "__main__":
    sys.exit(main())
