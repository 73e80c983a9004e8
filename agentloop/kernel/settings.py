"""Every setting of agentloop, read from the environment in one place.

Each service gets a frozen dataclass built by `from_env()`; command-line flags
override fields with `dataclasses.replace`. The README's configuration table
lists exactly these variables (a test keeps the two in step).
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from agentloop.kernel import retry
from agentloop.kernel.loop_policy import LoopPolicy, parse_policies
from agentloop.kernel.named_models import ModelTable, NamedModel, load_models
from agentloop.kernel.setting_errors import SettingError

DEFAULT_GATEWAY_PORT = 50050
DEFAULT_REASONER_PORT = 50051
DEFAULT_TOOLS_PORT = 50052
DEFAULT_MODEL_PORT = 8400

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant. Use the tools when they help; call several tools in one step when "
    "they do not depend on each other. Answer concisely from the tool results."
)


DATABASE_URL_FORMS = (
    "postgresql://user:password@host:5432/dbname or sqlite:///path/to/file.db "
    "(unset: the embedded SQLite file)"
)


def check_database_url(url: str, name: str = "DATABASE_URL") -> None:
    """SettingError unless `url` is a postgres/postgresql or sqlite URL with a scheme.

    A bare path is refused rather than taken for an SQLite file: a value that
    lost its scheme (a typo, an unexpanded template) would otherwise become a
    new, empty database in the working directory, silently. The URL is never
    echoed in full, as it may hold a password.
    """
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    if "://" not in url:
        raise SettingError(f"{name} has no scheme; use {DATABASE_URL_FORMS}")
    try:
        backend = make_url(url).get_backend_name()
    except (ArgumentError, ValueError):
        raise SettingError(f"{name} is not a valid database URL; use {DATABASE_URL_FORMS}") from None
    if backend not in ("postgres", "postgresql", "sqlite"):
        raise SettingError(f"{name}: unsupported database {backend!r}; use {DATABASE_URL_FORMS}")


def _database_url(env: Mapping[str, str], name: str) -> str:
    url = _get(env, name, "")
    if url:
        check_database_url(url, name)
    return url


DB_TEMP_FILE_LIMIT = "256MB"
"""Most temporary file space one query of the gateway may use on Postgres (AGENTLOOP_DB_TEMP_FILE_LIMIT)."""
_SIZE = re.compile(r"-1|0|[1-9][0-9]*(?:kB|MB|GB|TB)?")


def _size(env: Mapping[str, str], name: str, default: str) -> str:
    """A Postgres size ("256MB", "1GB", "-1" for no limit), checked at startup rather than at connect."""
    raw = _get(env, name, default).strip()
    if not _SIZE.fullmatch(raw):
        raise SettingError(f"{name}={raw!r} is not a size such as 256MB, 1GB or -1 (no limit)")
    return raw


def _get(env: Mapping[str, str], name: str, default: str) -> str:
    value = env.get(name, "")
    return value if value != "" else default


def _int(env: Mapping[str, str], name: str, default: int, minimum: int = 0) -> int:
    return _number(env, name, default, minimum, int, "an integer")


def _float(env: Mapping[str, str], name: str, default: float, minimum: float = 0.0) -> float:
    return _number(env, name, default, minimum, float, "a number")


_N = TypeVar("_N", int, float)


def _number(
    env: Mapping[str, str], name: str, default: _N, minimum: _N, parse: Callable[[str], _N], what: str
) -> _N:
    """A number setting, refused at startup with the variable's name when it is malformed or too small."""
    raw = _get(env, name, str(default))
    try:
        value = parse(raw)
    except ValueError:
        raise SettingError(f"{name}={raw!r} is not {what}") from None
    if value < minimum:
        raise SettingError(f"{name}={value} must be >= {minimum}")
    return value


def _list(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in _get(env, name, "").split(",") if item.strip())


def _loop_policies(env: Mapping[str, str], name: str) -> tuple[tuple[str, LoopPolicy], ...]:
    try:
        return parse_policies(_get(env, name, ""), name)
    except (TypeError, ValueError) as exc:
        raise SettingError(str(exc)) from None


def _addr(env: Mapping[str, str], name: str, default: str) -> str:
    """A service address, checked now so a malformed list fails at startup with the variable's name."""
    raw = _get(env, name, default)
    grpc_target(raw, name)
    return raw


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = _get(env, name, "1" if default else "0").strip().lower()
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise SettingError(f"{name}={raw!r} is not a boolean (use 1/0, true/false)")


def _one_of(env: Mapping[str, str], name: str, default: str, choices: tuple[str, ...]) -> str:
    raw = _get(env, name, default).strip().lower()
    if raw not in choices:
        raise SettingError(f"{name}={raw!r} is not one of {', '.join(choices)}")
    return raw


# gRPC name-resolver schemes a target may name explicitly (dns:///host:port, ipv4:a:p,b:p, unix:/path ...).
_TARGET_SCHEMES = ("dns:", "ipv4:", "ipv6:", "unix:", "unix-abstract:", "xds:")


def grpc_target(addr: str, name: str = "address") -> str:
    """The gRPC target for a service address: one `host:port`, a list, or a resolver URI.

    - `host:port` stays as it is (gRPC resolves the name through DNS);
    - a resolver URI (`dns:///reasoner.ns.svc:50051`, `ipv4:...`, `unix:...`) stays as it is;
      with `dns:` every address the name resolves to becomes a replica;
    - a comma-separated list of IP `addr:port` entries becomes an `ipv4:`/`ipv6:` target, one
      replica per entry. Names are refused in a list: gRPC's static resolvers take addresses
      only, and a name belongs in a `dns:///` target, where it is re-resolved as replicas change.
    """
    value = addr.strip()
    if not value:
        raise SettingError(f"{name}: empty address")
    if value.startswith(_TARGET_SCHEMES):
        return value
    entries = [item.strip() for item in value.split(",")]
    if len(entries) == 1:
        return value
    families = {_ip_family(entry, name) for entry in entries}
    if len(families) != 1:
        raise SettingError(f"{name}={addr!r}: mixes IPv4 and IPv6 addresses")
    return f"{families.pop()}:{','.join(entries)}"


def _ip_family(entry: str, name: str) -> str:
    """`ipv4` or `ipv6` for an `ip:port` / `[ip]:port` list entry; SettingError for anything else."""
    host, sep, port = entry.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise SettingError(f"{name}: list entry {entry!r} is not address:port")
    try:
        ip = ipaddress.ip_address(host[1:-1] if host.startswith("[") and host.endswith("]") else host)
    except ValueError:
        raise SettingError(
            f"{name}: list entry {entry!r} is not an IP address; use dns:///{entry} for a name "
            "that resolves to several replicas"
        ) from None
    if ip.version == 6 and not host.startswith("["):
        raise SettingError(f"{name}: write IPv6 list entries as [address]:port, not {entry!r}")
    return f"ipv{ip.version}"


def reuse_port(env: Mapping[str, str] | None = None) -> bool:
    """AGENTLOOP_REUSE_PORT: may servers share their port with others (SO_REUSEPORT)? Off by default."""
    return _bool(os.environ if env is None else env, "AGENTLOOP_REUSE_PORT", False)


@dataclass(frozen=True)
class TlsSettings:
    """Certificates for serving and for calling, all optional (PEM file paths)."""

    cert_file: str = ""
    key_file: str = ""
    client_ca_file: str = ""
    ca_file: str = ""
    client_cert_file: str = ""
    client_key_file: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> TlsSettings:
        return cls(**_texts(env, TLS_VARIABLES))


TLS_VARIABLES = {
    "cert_file": "AGENTLOOP_TLS_CERT",
    "key_file": "AGENTLOOP_TLS_KEY",
    "client_ca_file": "AGENTLOOP_TLS_CLIENT_CA",
    "ca_file": "AGENTLOOP_TLS_CA",
    "client_cert_file": "AGENTLOOP_TLS_CLIENT_CERT",
    "client_key_file": "AGENTLOOP_TLS_CLIENT_KEY",
}
AUTH_VARIABLES = {
    "tokens": "AGENTLOOP_AUTH_TOKENS",
    "tokens_file": "AGENTLOOP_AUTH_TOKENS_FILE",
    "verifier": "AGENTLOOP_AUTH_VERIFIER",
}


def _texts(env: Mapping[str, str] | None, variables: Mapping[str, str]) -> dict[str, str]:
    """Text settings by field name: each variable's value as it is ("" when unset)."""
    e = os.environ if env is None else env
    return {name: e.get(variable, "") for name, variable in variables.items()}


@dataclass(frozen=True)
class AuthSettings:
    """How the gateway knows its users: bearer tokens and an optional verifier (agentloop.kernel.security)."""

    tokens: str = ""
    """AGENTLOOP_AUTH_TOKENS: comma-separated token=user_id pairs."""
    tokens_file: str = ""
    """AGENTLOOP_AUTH_TOKENS_FILE: a file of token=user_id lines."""
    verifier: str = ""
    """AGENTLOOP_AUTH_VERIFIER: module:function called with a token, returning its user or None."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AuthSettings:
        return cls(**_texts(env, AUTH_VARIABLES))


def service_token_from_env(env: Mapping[str, str] | None = None) -> str:
    """AGENTLOOP_SERVICE_TOKEN: the shared secret between the gateway and its Reasoner and ToolService."""
    return (os.environ if env is None else env).get("AGENTLOOP_SERVICE_TOKEN", "").strip()


@dataclass(frozen=True)
class Security:
    """How a server's calls are secured: TLS, the token between services, and users' tokens.

    Read with the rest of a service's settings, so a process reads its environment once; the
    Reasoner and the ToolService use `tls` and `service_token`, the gateway all three.
    """

    tls: TlsSettings = TlsSettings()
    service_token: str = field(default="", repr=False)
    auth: AuthSettings = AuthSettings()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Security:
        return cls(TlsSettings.from_env(env), service_token_from_env(env), AuthSettings.from_env(env))


@dataclass(frozen=True)
class ReasonerSettings:
    """How the Reasoner reaches its OpenAI-compatible endpoint."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_REASONER_PORT
    base_url: str = f"http://127.0.0.1:{DEFAULT_MODEL_PORT}/v1"
    api_key: str = "scripted"
    model: str = "scripted"
    timeout_s: float = 120.0
    max_retries: int = 2
    """Requests after the first a step may make: at most 1 + max_retries per step, across every layer."""
    max_completion_bytes: int = 4 * 1024 * 1024
    think_tags: str = "off"
    """How inline <think>…</think> reasoning is read: off, tags or open (reasoner_svc.think_tags)."""
    max_provider_field_bytes: int = 256 * 1024
    """Bound on what one answer may carry beyond the standard shape (kept and sent back to the model)."""
    protocol: str = "chat"
    """The environment model's wire protocol: chat (completions) or responses
    (agentloop.kernel.named_models)."""
    models_file: str = ""
    """JSON or TOML file of the named models served besides the environment's ("" = none)."""
    security: Security = Security()

    environ: Mapping[str, str] | None = field(default=None, repr=False, compare=False)
    """Where the models file's `api_key_env` variables are looked up: the environment these
    settings were read from (None: the process's)."""

    def environment_model(self) -> NamedModel:
        """The environment's model: OPENAI_BASE_URL, OPENAI_API_KEY, named AGENTLOOP_MODEL."""
        return NamedModel(
            name=self.model,
            model=self.model,
            base_url=self.base_url,
            api_key=self.api_key,
            protocol=self.protocol,
            think_tags=self.think_tags,
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
        )

    def model_table(self, environ: Mapping[str, str] | None = None) -> ModelTable:
        """The models served by name: the environment's, and the models file's (read now).

        The keys the file names by variable are looked up in `environ` (default: the
        environment these settings were read from).
        """
        keys = environ if environ is not None else os.environ if self.environ is None else self.environ
        return load_models(self.environment_model(), self.models_file, keys)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ReasonerSettings:
        """The settings, the models file read and checked too: a bad one stops the Reasoner at start."""
        e = os.environ if env is None else env
        settings = replace(cls._read(e), environ=env)
        settings.model_table(e)
        return settings

    @classmethod
    def _read(cls, e: Mapping[str, str]) -> ReasonerSettings:
        return cls(
            host=_get(e, "AGENTLOOP_HOST", cls.host),
            port=_int(e, "AGENTLOOP_REASONER_PORT", cls.port),
            base_url=_get(e, "OPENAI_BASE_URL", cls.base_url),
            api_key=_get(e, "OPENAI_API_KEY", cls.api_key),
            model=_get(e, "AGENTLOOP_MODEL", cls.model),
            timeout_s=_float(e, "AGENTLOOP_MODEL_TIMEOUT_S", cls.timeout_s),
            max_retries=_int(e, "AGENTLOOP_MODEL_MAX_RETRIES", cls.max_retries, minimum=0),
            max_completion_bytes=_int(
                e, "AGENTLOOP_MAX_COMPLETION_BYTES", cls.max_completion_bytes, minimum=1024
            ),
            think_tags=_one_of(e, "AGENTLOOP_MODEL_THINK_TAGS", cls.think_tags, ("off", "tags", "open")),
            max_provider_field_bytes=_int(
                e, "AGENTLOOP_MAX_PROVIDER_FIELD_BYTES", cls.max_provider_field_bytes, minimum=1024
            ),
            protocol=_one_of(e, "AGENTLOOP_MODEL_PROTOCOL", cls.protocol, ("chat", "responses")),
            models_file=_get(e, "AGENTLOOP_MODELS_FILE", cls.models_file),
            security=Security.from_env(e),
        )


@dataclass(frozen=True)
class ToolSettings:
    """Where the ToolService listens, which tools it loads and how it runs them."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_TOOLS_PORT
    timeout_s: float = 30.0
    max_concurrency: int = 16
    modules: tuple[str, ...] = ()
    sql_database: str = ""
    sql_row_limit: int = 100
    sql_max_concurrent: int = 2
    """SQL tool calls that run at once; the others wait (AGENTLOOP_SQL_MAX_CONCURRENT)."""
    max_result_bytes: int = 1024 * 1024
    mcp_config: str = ""
    """Path of the JSON or TOML file declaring MCP servers whose tools are served too ("" = none)."""
    security: Security = Security()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ToolSettings:
        e = os.environ if env is None else env
        modules = _list(e, "AGENTLOOP_TOOL_MODULES")
        return cls(
            host=_get(e, "AGENTLOOP_HOST", cls.host),
            port=_int(e, "AGENTLOOP_TOOLS_PORT", cls.port),
            timeout_s=_float(e, "AGENTLOOP_TOOL_TIMEOUT_S", cls.timeout_s),
            max_concurrency=_int(e, "AGENTLOOP_TOOL_CONCURRENCY", cls.max_concurrency, minimum=1),
            modules=modules,
            sql_database=_get(e, "AGENTLOOP_SQL_DATABASE", cls.sql_database),
            sql_row_limit=_int(e, "AGENTLOOP_SQL_ROW_LIMIT", cls.sql_row_limit, minimum=1),
            sql_max_concurrent=_int(e, "AGENTLOOP_SQL_MAX_CONCURRENT", cls.sql_max_concurrent, minimum=1),
            max_result_bytes=_int(e, "AGENTLOOP_MAX_RESULT_BYTES", cls.max_result_bytes, minimum=1024),
            mcp_config=_get(e, "AGENTLOOP_MCP_CONFIG", cls.mcp_config),
            security=Security.from_env(e),
        )


MIN_CONTEXT_BUDGET_TOKENS = 256
"""The smallest context budget a run may have (0 aside: no limit).

Below it not even a summary call (its instruction, a little conversation and a
minimal summary) fits, so every model call would be over the budget and
trimmed to nothing."""


def _context_budget(env: Mapping[str, str], name: str, default: int) -> int:
    value = _int(env, name, default)
    if 0 < value < MIN_CONTEXT_BUDGET_TOKENS:
        raise SettingError(
            f"{name}={value} is too small: 0 (no limit) or at least {MIN_CONTEXT_BUDGET_TOKENS}"
        )
    return value


@dataclass(frozen=True)
class ServerLimits:
    """What one server lets its clients hold, so that no client can make it unreachable for the others.

    Every agentloop server applies these (agentloop.kernel.serving.Server.listen). gRPC's own
    transport enforces the connection bounds: a connection beyond `max_connections` is
    closed as soon as it is accepted; one that has not sent HTTP/2's opening (preface
    and SETTINGS) within `handshake_timeout_s` is closed, so a bare TCP connection
    holds nothing for long; one with no call in flight for `connection_idle_s` is
    closed (a call refused for a missing token ends at once, so it does not keep a
    connection busy); every connection is asked to go away after `connection_age_s`
    and cut `connection_age_grace_s` later. A connection carries at most
    `max_streams_per_connection` calls at once (further calls wait in the client).
    The call bounds are counted in the server (agentloop.kernel.call_limits), since gRPC
    has no per-peer bound: a call beyond `max_calls` in all, or beyond
    `max_calls_per_peer` from one address, is refused with RESOURCE_EXHAUSTED.
    0 turns a bound off (gRPC's default then applies).
    """

    max_connections: int = 10_000
    """Connections held at once; never more than half the process's open-file limit (the
    rest stays for the database, the model provider and the dependencies)."""
    handshake_timeout_s: float = 10.0
    connection_idle_s: float = 60.0
    connection_age_s: float = 3600.0
    connection_age_grace_s: float = 3600.0
    max_streams_per_connection: int = 0
    max_calls: int = 10_000
    max_calls_per_peer: int = 0

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, defaults: ServerLimits | None = None
    ) -> ServerLimits:
        """The limits the environment sets, `defaults` (this class's own when None) for the rest."""
        e = os.environ if env is None else env
        d = defaults or cls()
        return cls(
            max_connections=_int(e, "AGENTLOOP_MAX_CONNECTIONS", d.max_connections),
            handshake_timeout_s=_float(e, "AGENTLOOP_HANDSHAKE_TIMEOUT_S", d.handshake_timeout_s, 0.001),
            connection_idle_s=_float(e, "AGENTLOOP_CONNECTION_IDLE_S", d.connection_idle_s),
            connection_age_s=_float(e, "AGENTLOOP_CONNECTION_AGE_S", d.connection_age_s),
            connection_age_grace_s=_float(e, "AGENTLOOP_CONNECTION_AGE_GRACE_S", d.connection_age_grace_s),
            max_streams_per_connection=_int(
                e, "AGENTLOOP_MAX_STREAMS_PER_CONNECTION", d.max_streams_per_connection
            ),
            max_calls=_int(e, "AGENTLOOP_MAX_CALLS", d.max_calls),
            max_calls_per_peer=_int(e, "AGENTLOOP_MAX_CALLS_PER_PEER", d.max_calls_per_peer),
        )


GATEWAY_LIMITS = ServerLimits(max_streams_per_connection=1000, max_calls_per_peer=2000)
"""The gateway faces clients: one connection carries at most as many calls as the gateway runs runs
(1,000 by default), one address at most twice that (each run's stream and a watcher). The Reasoner
and the ToolService serve gateways only, which carry every run's calls on one connection: there
these two bounds are off unless set."""


@dataclass(frozen=True)
class GatewaySettings:
    """Where the gateway listens, where its two dependencies are and the loop's defaults."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_GATEWAY_PORT
    reasoner_addr: str = f"127.0.0.1:{DEFAULT_REASONER_PORT}"
    tools_addr: str = f"127.0.0.1:{DEFAULT_TOOLS_PORT}"
    max_steps: int = 25
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    rpc_attempts: int = retry.RPC_ATTEMPTS
    rpc_backoff_s: float = retry.RPC_BACKOFF_S
    rpc_wait_s: float = retry.RPC_WAIT_S
    step_timeout_s: float = 300.0
    tools_cache_s: float = 5.0
    database_url: str = ""
    db_connect_s: float = 10.0
    db_migrate: bool = True
    db_pool_size: int = 20
    db_temp_file_limit: str = DB_TEMP_FILE_LIMIT
    lease_s: float = 30.0
    orphan_scan_s: float = 5.0
    context_budget_tokens: int = 100_000
    instance_id: str = ""
    retention_keep_checkpoints: int = 0
    retention_idle_ttl_s: float = 0.0
    retention_interval_s: float = 3600.0
    hooks: tuple[str, ...] = ()
    """Hooks every run uses; a client cannot switch them off (AGENTLOOP_HOOKS)."""
    client_hooks: tuple[str, ...] = ("redact_secrets",)
    """Hooks a client may add to its run (AGENTLOOP_CLIENT_HOOKS; "" for none)."""
    hook_modules: tuple[str, ...] = ()
    max_active_runs: int = 1000
    max_active_runs_per_caller: int = 0
    """Run slots one caller (its user with authentication, else its address) may hold; 0 = half of
    max_active_runs, rounded up. `run_share` is the number in force."""
    max_tool_calls_per_step: int = 32
    max_argument_bytes: int = 64 * 1024
    max_run_s: float = 3600.0
    max_message_bytes: int = 32 * 1024 * 1024
    health_interval_s: float = 5.0
    loop_policies: tuple[tuple[str, LoopPolicy], ...] = ()
    """Loop-detection policies by tool name; each replaces the one the tool's spec declares."""
    store_retry_budget_s: float = retry.STORE_RETRY_BUDGET_S
    limits: ServerLimits = GATEWAY_LIMITS
    """What the gateway's port lets clients hold (connections, calls); see ServerLimits."""
    security: Security = Security()

    @property
    def run_share(self) -> int:
        """The run slots one caller may hold: max_active_runs_per_caller, or half of max_active_runs."""
        share = self.max_active_runs_per_caller or -(-self.max_active_runs // 2)
        return min(share, self.max_active_runs)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GatewaySettings:
        e = os.environ if env is None else env
        return cls(
            host=_get(e, "AGENTLOOP_HOST", cls.host),
            port=_int(e, "AGENTLOOP_GATEWAY_PORT", cls.port),
            reasoner_addr=_addr(e, "AGENTLOOP_REASONER_ADDR", cls.reasoner_addr),
            tools_addr=_addr(e, "AGENTLOOP_TOOLS_ADDR", cls.tools_addr),
            max_steps=_int(e, "AGENTLOOP_MAX_STEPS", cls.max_steps, minimum=1),
            system_prompt=_get(e, "AGENTLOOP_SYSTEM_PROMPT", cls.system_prompt),
            rpc_attempts=_int(e, "AGENTLOOP_RPC_ATTEMPTS", cls.rpc_attempts, minimum=1),
            rpc_backoff_s=_float(e, "AGENTLOOP_RPC_BACKOFF_S", cls.rpc_backoff_s),
            rpc_wait_s=_float(e, "AGENTLOOP_RPC_WAIT_S", cls.rpc_wait_s),
            step_timeout_s=_float(e, "AGENTLOOP_STEP_TIMEOUT_S", cls.step_timeout_s),
            tools_cache_s=_float(e, "AGENTLOOP_TOOLS_CACHE_S", cls.tools_cache_s),
            database_url=_database_url(e, "DATABASE_URL"),
            db_connect_s=_float(e, "AGENTLOOP_DB_CONNECT_S", cls.db_connect_s),
            db_migrate=_bool(e, "AGENTLOOP_DB_MIGRATE", cls.db_migrate),
            db_pool_size=_int(e, "AGENTLOOP_DB_POOL_SIZE", cls.db_pool_size, minimum=1),
            db_temp_file_limit=_size(e, "AGENTLOOP_DB_TEMP_FILE_LIMIT", cls.db_temp_file_limit),
            lease_s=_float(e, "AGENTLOOP_LEASE_S", cls.lease_s, minimum=0.1),
            orphan_scan_s=_float(e, "AGENTLOOP_ORPHAN_SCAN_S", cls.orphan_scan_s, minimum=0.05),
            context_budget_tokens=_context_budget(
                e, "AGENTLOOP_CONTEXT_BUDGET_TOKENS", cls.context_budget_tokens
            ),
            instance_id=_get(e, "AGENTLOOP_INSTANCE_ID", cls.instance_id),
            retention_keep_checkpoints=_int(e, "AGENTLOOP_KEEP_CHECKPOINTS", cls.retention_keep_checkpoints),
            retention_idle_ttl_s=_float(e, "AGENTLOOP_THREAD_TTL_S", cls.retention_idle_ttl_s),
            retention_interval_s=_float(e, "AGENTLOOP_RETENTION_INTERVAL_S", cls.retention_interval_s, 1.0),
            hooks=_list(e, "AGENTLOOP_HOOKS"),
            client_hooks=(
                _list(e, "AGENTLOOP_CLIENT_HOOKS") if "AGENTLOOP_CLIENT_HOOKS" in e else cls.client_hooks
            ),
            hook_modules=_list(e, "AGENTLOOP_HOOK_MODULES"),
            max_active_runs=_int(e, "AGENTLOOP_MAX_ACTIVE_RUNS", cls.max_active_runs, minimum=1),
            max_active_runs_per_caller=_int(
                e, "AGENTLOOP_MAX_ACTIVE_RUNS_PER_CALLER", cls.max_active_runs_per_caller
            ),
            max_tool_calls_per_step=_int(
                e, "AGENTLOOP_MAX_TOOL_CALLS_PER_STEP", cls.max_tool_calls_per_step, minimum=1
            ),
            max_argument_bytes=_int(e, "AGENTLOOP_MAX_ARGUMENT_BYTES", cls.max_argument_bytes, minimum=2),
            max_run_s=_float(e, "AGENTLOOP_MAX_RUN_S", cls.max_run_s, minimum=0.1),
            max_message_bytes=_int(e, "AGENTLOOP_MAX_MESSAGE_BYTES", cls.max_message_bytes, minimum=1024),
            health_interval_s=_float(e, "AGENTLOOP_HEALTH_INTERVAL_S", cls.health_interval_s, minimum=0.05),
            loop_policies=_loop_policies(e, "AGENTLOOP_LOOP_POLICIES"),
            store_retry_budget_s=_float(
                e, "AGENTLOOP_STORE_RETRY_BUDGET_S", cls.store_retry_budget_s, minimum=0.1
            ),
            limits=ServerLimits.from_env(e, GATEWAY_LIMITS),
            security=Security.from_env(e),
        )


TRACE_EXPORTERS = frozenset({"otlp", "console"})
METRIC_EXPORTERS = frozenset({"otlp", "console", "prometheus"})
DEFAULT_METRICS_PORT = 9464


def _exporters(env: Mapping[str, str], name: str, known: frozenset[str]) -> tuple[str, ...]:
    """A comma-separated OTEL_*_EXPORTER value; "none" (the default here) means no exporter."""
    names = tuple(dict.fromkeys(n.strip().lower() for n in _get(env, name, "none").split(",") if n.strip()))
    chosen = tuple(n for n in names if n != "none")
    unknown = [n for n in chosen if n not in known]
    if unknown:
        options = " | ".join(sorted(known | {"none"}))
        raise SettingError(f"{name}={','.join(names)!r}: unknown exporter {unknown[0]!r} (use {options})")
    return chosen


@dataclass(frozen=True)
class TelemetrySettings:
    """Traces and metrics of one process, from the standard OpenTelemetry variables.

    Exporters default to none (tests and demos stay quiet). The OTLP endpoints
    are left empty when unset, so the exporter applies its own default and the
    other OTEL_EXPORTER_OTLP_* variables (headers, certificates, timeout);
    batching (OTEL_BSP_*), sampling (OTEL_TRACES_SAMPLER*) and resource
    attributes (OTEL_RESOURCE_ATTRIBUTES) are read by the SDK itself.
    """

    service_name: str = "agentloop"
    traces_exporters: tuple[str, ...] = ()
    metrics_exporters: tuple[str, ...] = ()
    otlp_traces_endpoint: str = ""
    otlp_metrics_endpoint: str = ""
    metrics_host: str = "127.0.0.1"
    metrics_port: int = DEFAULT_METRICS_PORT

    @classmethod
    def from_env(cls, default_service_name: str, env: Mapping[str, str] | None = None) -> TelemetrySettings:
        e = os.environ if env is None else env
        endpoint = _get(e, "OTEL_EXPORTER_OTLP_ENDPOINT", "")
        return cls(
            service_name=_get(e, "OTEL_SERVICE_NAME", default_service_name),
            traces_exporters=_exporters(e, "OTEL_TRACES_EXPORTER", TRACE_EXPORTERS),
            metrics_exporters=_exporters(e, "OTEL_METRICS_EXPORTER", METRIC_EXPORTERS),
            otlp_traces_endpoint=_get(e, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint),
            otlp_metrics_endpoint=_get(e, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", endpoint),
            metrics_host=_get(e, "AGENTLOOP_HOST", cls.metrics_host),
            metrics_port=_int(e, "AGENTLOOP_METRICS_PORT", cls.metrics_port),
        )


def gateway_addr(env: Mapping[str, str] | None = None) -> str:
    """Address `agentloop ask` connects to."""
    e = os.environ if env is None else env
    return _get(e, "AGENTLOOP_GATEWAY_ADDR", f"127.0.0.1:{DEFAULT_GATEWAY_PORT}")


def client_token(env: Mapping[str, str] | None = None) -> str:
    """AGENTLOOP_TOKEN: the bearer token agentloop.client and the command line send ("" = none)."""
    return (os.environ if env is None else env).get("AGENTLOOP_TOKEN", "")


def model_endpoint_named(env: Mapping[str, str] | None = None) -> bool:
    """Whether OPENAI_BASE_URL names a model endpoint (else `agentloop dev` runs the scripted model)."""
    return bool((os.environ if env is None else env).get("OPENAI_BASE_URL"))


def data_home(env: Mapping[str, str] | None = None) -> Path:
    """Where agentloop keeps its embedded database: AGENTLOOP_HOME, else ~/.local/share/agentloop."""
    home = (os.environ if env is None else env).get("AGENTLOOP_HOME", "")
    return Path(home).expanduser() if home else Path.home() / ".local" / "share" / "agentloop"


def cache_home(env: Mapping[str, str] | None = None) -> Path:
    """XDG_CACHE_HOME, else ~/.cache: where rebuildable files (the SQL tool's sample database) go."""
    return Path((os.environ if env is None else env).get("XDG_CACHE_HOME") or str(Path.home() / ".cache"))


EVENT_LOOP = "AGENTLOOP_EVENT_LOOP"


def event_loop_choice(env: Mapping[str, str] | None = None) -> str:
    """AGENTLOOP_EVENT_LOOP: uvloop (the default, where installed) or asyncio."""
    return (os.environ if env is None else env).get(EVENT_LOOP, "uvloop").strip().lower()


@dataclass(frozen=True)
class LogSettings:
    """How a process logs: AGENTLOOP_LOG_LEVEL ("" = the command's default), AGENTLOOP_LOG_FORMAT,
    and the provider key that must never reach a log line (OPENAI_API_KEY)."""

    level: str = ""
    format: str = "text"
    api_key: str = field(default="", repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> LogSettings:
        e = os.environ if env is None else env
        return cls(
            level=e.get("AGENTLOOP_LOG_LEVEL", ""),
            format=(e.get("AGENTLOOP_LOG_FORMAT") or "text").strip().lower(),
            api_key=e.get("OPENAI_API_KEY", ""),
        )


def environment() -> Mapping[str, str]:
    """The process's environment as it is, for what hands it on unread.

    A child process inherits it, a command is looked up on its PATH, a configuration file's
    `${VAR}` names one of its variables. What agentloop itself reads from the environment is
    read above, in this module only (a test keeps it so).
    """
    return os.environ
