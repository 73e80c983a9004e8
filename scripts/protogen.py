"""Generate the Python stubs of protos/ into a directory.

One function shared by `make proto` and `make check-proto`, so the drift check
runs exactly the command that produced the committed files.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
# Google's own files the contract imports (google/rpc/code.proto,
# google/api/field_behavior.proto); their Python modules come from
# googleapis-common-protos, so none is generated.
THIRD_PARTY_ROOT = ROOT / "third_party" / "protos"
# The public contract, and the gateway's private storage format.
GENERATED_PACKAGES = (Path("agentloop") / "v1", Path("agentloop") / "internal" / "v1")


def proto_files() -> list[str]:
    """The .proto files, relative to protos/, in a stable order."""
    return sorted(str(p.relative_to(PROTO_ROOT)) for p in PROTO_ROOT.rglob("*.proto"))


def generate(out_dir: Path) -> None:
    """Run protoc with the Python, gRPC and mypy plugins into out_dir."""
    # The mypy plugins are console scripts installed beside this interpreter.
    bindir = str(Path(sys.executable).parent)
    os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    include = str(Path(protoc.__file__).parent / "_proto")
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"-I{THIRD_PARTY_ROOT}",
        f"-I{include}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        f"--mypy_out={out_dir}",
        f"--mypy_grpc_out={out_dir}",
        *proto_files(),
    ]
    code = protoc.main(args)
    if code != 0:
        raise SystemExit(f"protoc failed with exit code {code}")


def generated_files(directory: Path) -> dict[str, bytes]:
    """Generated files under each generated package of directory, by path."""
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for package in GENERATED_PACKAGES
        for p in sorted((directory / package).glob("*_pb2*"))
    }


def main() -> int:
    for package in GENERATED_PACKAGES:
        for old in (ROOT / package).glob("*_pb2*"):
            old.unlink()
    generate(ROOT)
    print(f"generated {len(generated_files(ROOT))} files into {', '.join(map(str, GENERATED_PACKAGES))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
