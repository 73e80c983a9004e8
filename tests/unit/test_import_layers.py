"""The layers of the code, as a table of which package may import which.

Every module of agentloop, reasoner_svc, tool_svc and gateway belongs to one unit: the longest
prefix of its dotted name that `LAYERS` names. A unit may import itself and the units its row
names. The rows run from the ground up and a row names only rows above it, so the table has no
circle and no import runs upward; no circle of modules inside a unit either. The imports are
read from the source, function bodies included (a deferred import closes a circle just the same
once it runs). This test is the code map that cannot go stale:
`pytest tests/unit/test_import_layers.py -q`.

The pages users read import only the public face: README.md, docs/*.md and examples/.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agentloop", "reasoner_svc", "tool_svc", "gateway")

GENERATED = ("agentloop.v1", "agentloop.internal")
CLIENT_KERNEL = (
    "agentloop.kernel.retry",
    "agentloop.kernel.wellknown",
    "agentloop.kernel.loop_policy",
    "agentloop.kernel.setting_errors",
    "agentloop.kernel.named_models",
    "agentloop.kernel.settings",
    "agentloop.kernel.channels",
    "agentloop.kernel.tls",
)
"""What of the kernel a client process needs (how to reach a gateway, how to try again, the
contract's well-known types), in the order they may import one another; no server plumbing."""
KERNEL = ("agentloop.kernel", *CLIENT_KERNEL)
GROUND = (*GENERATED, *KERNEL)
GATEWAY_FLOORS = (
    "gateway.store",
    "gateway.deps",
    "gateway.policies",
    "gateway.journal",
    "gateway.loop",
    "gateway.runs",
    "gateway.api",
)
"""The gateway's sub-packages from the ground up: each may import those before it."""

LAYERS: dict[str, tuple[str, ...]] = {
    # the contract, generated from protos/
    "agentloop.v1": (),
    "agentloop.internal": ("agentloop.v1",),
    # the ground every process stands on
    **{unit: (*GENERATED, *CLIENT_KERNEL[:i]) for i, unit in enumerate(CLIENT_KERNEL)},
    "agentloop.kernel": (*GENERATED, *CLIENT_KERNEL),
    # what stands on the ground alone
    "agentloop.scripted_model": GROUND,
    "agentloop.client": ("agentloop.v1", *CLIENT_KERNEL),
    "reasoner_svc": GROUND,
    "tool_svc": GROUND,
    # the gateway, floor by floor
    **{floor: (*GROUND, *GATEWAY_FLOORS[:i]) for i, floor in enumerate(GATEWAY_FLOORS)},
    "gateway": (*GROUND, "gateway.policies"),
    # the public face and the roof
    "agentloop.tools": (*GROUND, "tool_svc"),
    "agentloop.hooks": (*GROUND, "gateway.policies"),
    "agentloop.testing": (
        *GROUND,
        "agentloop.client",
        "agentloop.scripted_model",
        "reasoner_svc",
        "tool_svc",
        *GATEWAY_FLOORS,
    ),
    "agentloop.cli": (
        *GROUND,
        "agentloop.client",
        "agentloop.scripted_model",
        "reasoner_svc",
        "tool_svc",
        *GATEWAY_FLOORS,
    ),
    "agentloop": (),
}

PUBLIC = ("agentloop.tools", "agentloop.hooks", "agentloop.client", "agentloop.testing", "agentloop.v1")
"""What README.md, docs/ and examples/ may import; docs/scripted-model.md may also import the
scripted model, whose own page it is."""


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).with_suffix("")
            if "migrations" in relative.parts:
                continue
            name = ".".join(relative.parts).removesuffix(".__init__")
            found[name] = path
    return found


def imported(source: str, module: str, is_package: bool, where: str) -> set[str]:
    """Every name an import statement of `source` names, relative imports resolved.

    `from package import module` names the module, not the package's face: the package is
    initialised first whatever is imported from it, as it is for `import package.module`.
    """
    package = module if is_package else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(source, filename=where)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def ours(names: Iterable[str], known: dict[str, Path]) -> set[str]:
    """The modules of this code that `names` refer to (a name of a module's attribute: the module)."""
    found: set[str] = set()
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            found.add(name)
    return found


def unit_of(module: str) -> str:
    candidates = [u for u in LAYERS if module == u or module.startswith(u + ".")]
    assert candidates, f"{module} belongs to no unit of LAYERS"
    return max(candidates, key=len)


def graph() -> dict[str, set[str]]:
    known = modules()
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        names = imported(path.read_text(), name, path.name == "__init__.py", str(path))
        edges[name] = ours(names, known) - {name}
    return edges


def test_the_table_runs_from_the_ground_up() -> None:
    order = list(LAYERS)
    for unit, allowed in LAYERS.items():
        later = [a for a in allowed if order.index(a) >= order.index(unit)]
        assert later == [], f"{unit} may import {later}, which stand above it"


def test_every_import_follows_the_table() -> None:
    offenders = sorted(
        f"{module} -> {target}"
        for module, targets in graph().items()
        for target in targets
        if (u := unit_of(module)) != (t := unit_of(target)) and t not in LAYERS[u]
    )
    assert offenders == []


def test_no_circle_of_modules() -> None:
    edges = graph()
    circles = [c for c in strongly_connected(edges) if len(c) > 1]
    assert circles == []


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of the import graph, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            components.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return components


def test_nothing_imports_the_command_line() -> None:
    importers = sorted(m for m, targets in graph().items() for t in targets if unit_of(t) == "agentloop.cli")
    assert [m for m in importers if unit_of(m) != "agentloop.cli"] == []


CODE_BLOCK = re.compile(r"```python\n(.*?)```", re.S)
IMPORT_LINE = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))", re.M)


def public_offenders(text: str, allowed: tuple[str, ...]) -> list[str]:
    found = []
    for match in IMPORT_LINE.finditer(text):
        name = match.group(1) or match.group(2)
        if name.split(".")[0] in PACKAGES and not any(name == a or name.startswith(a + ".") for a in allowed):
            found.append(name)
    return found


def test_the_pages_users_read_import_only_the_public_face() -> None:
    offenders: dict[str, list[str]] = {}
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        allowed = (*PUBLIC, "agentloop.scripted_model") if page.name == "scripted-model.md" else PUBLIC
        blocks = "\n".join(CODE_BLOCK.findall(page.read_text()))
        if found := public_offenders(blocks, allowed):
            offenders[page.name] = found
    for example in sorted((ROOT / "examples").rglob("*.py")):
        if found := public_offenders(example.read_text(), PUBLIC):
            offenders[str(example.relative_to(ROOT))] = found
    assert offenders == {}


def test_public_modules_declare_what_they_offer() -> None:
    known = modules()
    for name in PUBLIC:
        if name == "agentloop.v1":
            continue
        tree = ast.parse(known[name].read_text())
        assert ast.get_docstring(tree), name
        assert any(
            isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets)
            for node in tree.body
        ), name
