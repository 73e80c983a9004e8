"""docs/clients.md as its readers meet it: every command and program of the page runs as written.

Each fenced block of the page is run by a test here (`test_every_block_of_the_page_is_run_here`
keeps that so as the page grows), against one real gateway (the scripted model, the Reasoner, the
ToolService and the gateway as processes) that this module starts. The page addresses the gateway as
127.0.0.1:50050; the only change made to a block is that port, replaced by the one this gateway
bound. Commands run from the repository's root, as the page says (a clone), in bash with errexit,
and with HOME a fresh folder, so everything they write lands there. A program the page says to save
as `$CLIENT/<file>` is written there between the commands that precede and follow it, by a quoted
heredoc in the same shell, so it is the block byte for byte.

Each language compiles once per module (a module-scoped fixture runs its generate-build-run commands
once; its tests read the output). A language whose Debian packages (the page's table) are missing
is skipped with a reason naming them; under CI (`CI` set), where .ci/run installs them, that is a
failure instead.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentloop.cli.demo import services
from tests.support.net import free_port

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]
PAGE = REPO_ROOT / "docs" / "clients.md"
CI_RUN = REPO_ROOT / ".ci" / "run"
PAGE_PORT = "50050"
"""The gateway's port as the page writes it; replaced by the port of this module's gateway."""
CALLER_SETTINGS = frozenset({"NODE_PATH", "GOPATH", "GO111MODULE", "GOFLAGS", "CLASSPATH", "RUBYLIB"})
"""Variables of the caller's environment that would change where the commands look for code."""
BUILD_TIMEOUT_S = 300
"""One language's generate, compile and run on a busy 2-core machine (javac and a cold Go cache)."""

ANSWER = "7006652"
"""1234 * 5678: the scripted model's reply to the page's question quotes the calculator's result."""
REASONING = "I need arithmetic and the clock"
"""The start of that reply's reasoning tokens, which the programs must tell from reply tokens."""


@dataclass(frozen=True)
class Block:
    """The `nth` fenced block of language `lang` under the page's `## section` heading."""

    section: str
    lang: str
    nth: int = 0


NODE = "Node.js (@grpc/grpc-js)"
BUF_GENERATE = Block("Where each language's stubs go", "bash")
SHELL = Block("The shell: buf curl", "bash")
NODE_FROM_CLONE = Block(NODE, "js", 0)
NODE_OWN_PROJECT = Block(NODE, "js", 1)
GO_GENERATE, GO_PROGRAM, GO_RUN = Block("Go", "bash", 0), Block("Go", "go"), Block("Go", "bash", 1)
RUBY_GENERATE, RUBY_PROGRAM = Block("Ruby", "bash", 0), Block("Ruby", "ruby")
RUBY_RUN = Block("Ruby", "bash", 1)
JAVA_PLUGIN, JAVA_GENERATE = Block("Java", "bash", 0), Block("Java", "bash", 1)
JAVA_PROGRAM, JAVA_RUN = Block("Java", "java"), Block("Java", "bash", 2)
PAGING = Block("Paging", "js")
RETRIES = Block("Idempotent retries", "js")
RUN_HERE = {
    BUF_GENERATE, SHELL, NODE_FROM_CLONE, NODE_OWN_PROJECT, GO_GENERATE, GO_PROGRAM, GO_RUN, RUBY_GENERATE,
    RUBY_PROGRAM, RUBY_RUN, JAVA_PLUGIN, JAVA_GENERATE, JAVA_PROGRAM, JAVA_RUN, PAGING, RETRIES,
}  # fmt: skip


FENCE_OR_HEADING = re.compile(r"^## ([^\n]+)$|^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def page_blocks() -> dict[Block, str]:
    """Every fenced block of the page, by its place."""
    blocks: dict[Block, str] = {}
    seen: Counter[tuple[str, str]] = Counter()
    section = ""
    for match in FENCE_OR_HEADING.finditer(PAGE.read_text()):
        heading, lang, code = match.groups()
        if heading is not None:
            section = heading
            continue
        blocks[Block(section, lang, seen[section, lang])] = code
        seen[section, lang] += 1
    return blocks


def block(which: Block, port: int | None = None) -> str:
    """The block's text; with `port`, the page's gateway port (which it must name) replaced by it."""
    code = page_blocks()[which]
    if port is None:
        return code
    assert PAGE_PORT in code, f"{which} does not address the gateway at port {PAGE_PORT}"
    return code.replace(PAGE_PORT, str(port))


def saved_as(path: str, code: str) -> str:
    """Shell that writes `code` to `path` unchanged (a quoted heredoc expands nothing)."""
    assert "\nAGENTLOOP_PAGE_EOF\n" not in code
    return f"cat > {path} <<'AGENTLOOP_PAGE_EOF'\n{code}AGENTLOOP_PAGE_EOF\n"


def debian_packages() -> dict[str, list[str]]:
    """The page's table of what each language needs: language -> its Debian 12 packages."""
    text = PAGE.read_text()
    table = text[text.index("| language | Debian 12 packages |") :].split("\n\n", 1)[0]
    rows = [line.split("|")[1:3] for line in table.splitlines()[2:]]
    return {language.strip(): re.findall(r"`([^`]+)`", cell)[0].split() for language, cell in rows}


def missing_packages(packages: list[str]) -> list[str]:
    """The packages dpkg does not list as installed (all of them where there is no dpkg)."""
    if shutil.which("dpkg-query") is None:
        return packages
    proc = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package} ${db:Status-Status}\n", *packages],
        capture_output=True,
        text=True,
        check=False,
    )
    installed = {line.split()[0] for line in proc.stdout.splitlines() if line.endswith(" installed")}
    return [package for package in packages if package not in installed]


def skip_or_fail(reason: str) -> None:
    """Skip locally; under CI, where .ci/run installs every toolchain, a missing one is a failure."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason}, which .ci/run installs")
    pytest.skip(reason)


def require_language(language: str) -> None:
    """Skip (or fail, under CI) unless the Debian packages the page names for `language` are installed."""
    missing = missing_packages(debian_packages()[language])
    if missing:
        skip_or_fail(
            f"the {language} section of docs/clients.md needs the Debian packages {' '.join(missing)}"
        )


def require_node() -> None:
    """Node and the Node client's packages (`make install-node`, which `make test` runs first)."""
    if shutil.which("node") is None:
        skip_or_fail("the Node and shell sections of docs/clients.md need the Debian package nodejs")
    if not (REPO_ROOT / "clients" / "node" / "node_modules" / ".installed").exists():
        skip_or_fail("the Node and shell sections of docs/clients.md need `make install-node` (npm, nodejs)")


def run(argv: list[str], home: Path, cwd: Path = REPO_ROOT, stdin: str | None = None) -> str:
    """Run `argv` with HOME=`home` from `cwd`; its stdout, after asserting it exited 0."""
    env = {k: v for k, v in os.environ.items() if k not in CALLER_SETTINGS}
    env["HOME"] = str(home)
    proc = subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    assert proc.returncode == 0, (
        f"{argv[:3]} exited {proc.returncode}\n--- stdin\n{stdin or ''}\n"
        f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}"
    )
    return proc.stdout


def bash(script: str, home: Path) -> str:
    """Run `script` from the repository's root in bash with errexit, nounset and pipefail."""
    return run(["bash", "-euo", "pipefail", "-s"], home, stdin=script)


@pytest.fixture(scope="module")
def gateway_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """One gateway for the module, with the scripted model (which answers the page's question)."""
    data = tmp_path_factory.mktemp("gateway")
    env = dict(
        os.environ,
        DATABASE_URL=f"sqlite+aiosqlite:///{data / 'agentloop.db'}",
        OPENAI_BASE_URL="",
        AGENTLOOP_LOG_LEVEL="WARNING",
    )
    with services(env) as ports:
        yield ports["gateway"]


@dataclass(frozen=True)
class Built:
    """What one language's commands printed, and the HOME they wrote into."""

    home: Path
    output: str


@pytest.fixture(scope="module")
def go_client(gateway_port: int, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The Go section once: generate with protoc, save main.go, `go run .`."""
    require_language("Go")
    home = tmp_path_factory.mktemp("go-home")
    program = saved_as('"$CLIENT/main.go"', block(GO_PROGRAM, gateway_port))
    return Built(home, bash(block(GO_GENERATE) + program + block(GO_RUN), home))


@pytest.fixture(scope="module")
def ruby_client(gateway_port: int, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The Ruby section once: generate with grpc_tools_ruby_protoc, save agent_client.rb, run it."""
    require_language("Ruby")
    home = tmp_path_factory.mktemp("ruby-home")
    program = saved_as('"$CLIENT/agent_client.rb"', block(RUBY_PROGRAM, gateway_port))
    return Built(home, bash(block(RUBY_GENERATE) + program + block(RUBY_RUN), home))


@pytest.fixture(scope="module")
def java_client(gateway_port: int, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The Java section once: link the plugin, generate, save AgentClient.java, javac and run it."""
    require_language("Java")
    home = tmp_path_factory.mktemp("java-home")
    program = saved_as('"$CLIENT/AgentClient.java"', block(JAVA_PROGRAM, gateway_port))
    return Built(home, bash(block(JAVA_PLUGIN) + block(JAVA_GENERATE) + program + block(JAVA_RUN), home))


def assert_streamed_the_answer(output: str) -> None:
    """A streamed Run of the page's question as the programs print it: tool calls, then the reply alone."""
    assert "→ calculator(" in output, output
    assert "→ current_time(" in output, output
    assert ANSWER in output, output
    assert REASONING not in output, f"reasoning tokens printed as the reply:\n{output}"
    assert "STOP_REASON_COMPLETED" in output, output


def test_every_block_of_the_page_is_run_here() -> None:
    assert set(page_blocks()) == RUN_HERE


def test_ci_installs_every_debian_package_the_page_names() -> None:
    ci = CI_RUN.read_text()
    packages = debian_packages()
    assert {"Go", "Ruby", "Java"} <= set(packages)
    for language in ("Go", "Ruby", "Java"):
        for package in packages[language]:
            assert re.search(rf"(?<![\w.-]){re.escape(package)}(?![\w.-])", ci), f"{package} ({language})"


def test_the_shell_commands_list_invoke_and_stream_a_run(gateway_port: int, tmp_path: Path) -> None:
    require_node()
    output = bash(block(SHELL, gateway_port), tmp_path)
    assert "agentloop.v1.Agent/Run\n" in output
    assert "agentloop.v1.Agent/Invoke\n" in output
    assert f'"finalReply": "1234 × 5678 = {ANSWER}' in output
    assert '"toolStart"' in output  # the streamed Run's events
    assert '"llmToken"' in output


def test_the_node_snippet_streams_reply_tokens_apart_from_reasoning_tokens(
    gateway_port: int, tmp_path: Path
) -> None:
    require_node()
    # From stdin, node resolves the snippet's requires from the working directory: the clone's root.
    output = run(["node", "-"], tmp_path, stdin=block(NODE_FROM_CLONE, gateway_port))
    assert_streamed_the_answer(output)


def test_the_node_snippet_of_a_project_of_ones_own_loads_the_protos(
    gateway_port: int, tmp_path: Path
) -> None:
    require_node()
    project = tmp_path / "project"
    project.mkdir()
    # What `npm install @grpc/grpc-js @grpc/proto-loader` gives, and a clone at ./agentloop.
    (project / "node_modules").symlink_to(REPO_ROOT / "clients" / "node" / "node_modules")
    (project / "agentloop").symlink_to(REPO_ROOT)
    (project / "index.js").write_text(block(NODE_OWN_PROJECT, gateway_port))
    output = run(["node", "index.js"], tmp_path, cwd=project)
    assert ANSWER in output


def test_the_paging_snippet_reads_a_whole_thread(gateway_port: int, tmp_path: Path) -> None:
    require_node()
    harness = f"""
const {{ grpc, loadApi }} = require('./clients/node/loader.js');
const {{ Agent }} = loadApi().agentloop.v1;
const agent = new Agent('127.0.0.1:{gateway_port}', grpc.credentials.createInsecure());
const invoke = require('node:util').promisify(agent.Invoke.bind(agent));
(async () => {{
  const user_id = 'me';
  const {{ thread_id }} = await invoke({{ input: 'What is 1234 * 5678?', user_id }});
{block(PAGING)}
  const total = (await getThread({{ thread_id, user_id }})).total_messages;
  console.log(JSON.stringify({{ total, roles: messages.map((m) => m.role) }}));
  agent.close();
}})().catch((error) => {{ console.error(error); process.exit(1); }});
"""
    output = run(["node", "-"], tmp_path, stdin=harness)
    read = json.loads(output)
    assert read["roles"][0] == "ROLE_USER"
    assert read["roles"][-1] == "ROLE_ASSISTANT"
    assert len(read["roles"]) == read["total"] >= 4  # question, tool calls, their results, answer


def test_the_retry_snippet_retries_an_unavailable_invoke_with_the_same_request_id(
    gateway_port: int, tmp_path: Path
) -> None:
    require_node()
    # `invoke` as the page describes it (promisified agent.Invoke), whose first attempt reaches a
    # port nothing listens on: a real UNAVAILABLE, which the snippet retries.
    harness = f"""
const {{ promisify }} = require('node:util');
const {{ grpc, loadApi }} = require('./clients/node/loader.js');
const {{ Agent }} = loadApi().agentloop.v1;
const agent = new Agent('127.0.0.1:{gateway_port}', grpc.credentials.createInsecure());
const nobody = new Agent('127.0.0.1:{free_port()}', grpc.credentials.createInsecure());
const attempts = [];
const invoke = (request) => {{
  attempts.push(request.request_id);
  const target = attempts.length === 1 ? nobody : agent;
  return promisify(target.Invoke.bind(target))(request);
}};
async function ask() {{
{block(RETRIES)}
}}
ask().then((reply) => {{
  console.log(JSON.stringify({{ attempts, reply: reply.final.final_reply }}));
  agent.close();
  nobody.close();
}}, (error) => {{ console.error(error); process.exit(1); }});
"""
    read = json.loads(run(["node", "-"], tmp_path, stdin=harness))
    assert len(read["attempts"]) == 2
    assert read["attempts"][0] == read["attempts"][1] != ""
    assert ANSWER in read["reply"]


@pytest.mark.timeout(BUILD_TIMEOUT_S + 60)
def test_the_go_program_streams_reply_tokens_apart_from_reasoning_tokens(go_client: Built) -> None:
    assert_streamed_the_answer(go_client.output)


@pytest.mark.timeout(BUILD_TIMEOUT_S + 60)
def test_the_go_program_reads_the_error_info_of_a_failed_call(go_client: Built) -> None:
    assert "NotFound THREAD_NOT_FOUND map[thread_id:no-such-thread]" in go_client.output


@pytest.mark.timeout(BUILD_TIMEOUT_S + 60)
def test_the_ruby_program_streams_reply_tokens_apart_from_reasoning_tokens(ruby_client: Built) -> None:
    assert_streamed_the_answer(ruby_client.output)


@pytest.mark.timeout(BUILD_TIMEOUT_S + 60)
def test_the_ruby_program_reads_the_error_info_of_a_failed_call(ruby_client: Built) -> None:
    assert '5 THREAD_NOT_FOUND {"thread_id"=>"no-such-thread"}' in ruby_client.output


@pytest.mark.timeout(BUILD_TIMEOUT_S + 60)
def test_the_java_program_streams_reply_tokens_apart_from_reasoning_tokens(java_client: Built) -> None:
    assert_streamed_the_answer(java_client.output)


@pytest.mark.timeout(BUILD_TIMEOUT_S + 60)
def test_the_java_program_reads_the_bad_request_of_a_failed_call(java_client: Built) -> None:
    assert "INVALID_ARGUMENT options.max_steps: must be between" in java_client.output


def generated(root: Path) -> dict[str, str]:
    """The files under `root` by relative path, less the line where protoc-gen-go names protoc's version."""
    return {
        str(path.relative_to(root)): re.sub(r"(?m)^// \tprotoc .*\n", "", path.read_text())
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@pytest.mark.timeout(BUILD_TIMEOUT_S + 60)
def test_buf_generate_gives_the_stubs_protoc_gives_java_services_included(
    go_client: Built, java_client: Built, tmp_path: Path
) -> None:
    require_node()
    bash(block(JAVA_PLUGIN) + block(BUF_GENERATE), tmp_path)
    buf_go = generated(tmp_path / "agentclient" / "gen" / "go")
    buf_java = generated(tmp_path / "agentclient" / "gen" / "java")
    assert "dev/agentloop/v1/AgentGrpc.java" in buf_java
    assert "agentloop/v1/agent_grpc.pb.go" in buf_go
    assert buf_go == generated(go_client.home / "go" / "src" / "example.com" / "agentclient" / "gen" / "go")
    protoc_java = generated(java_client.home / "agentclient-java" / "gen" / "java")
    # buf hands protoc descriptors with json_name set, which protoc's Java output quotes in comments
    # and in the embedded descriptor; the files, and the grpc plugin's stubs byte for byte, are the same.
    assert buf_java.keys() == protoc_java.keys()
    stubs = [name for name in buf_java if name.endswith("Grpc.java")]
    assert len(stubs) == 3
    assert all(buf_java[name] == protoc_java[name] for name in stubs)
