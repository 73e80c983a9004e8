"""TLS for every hop: the credentials a server serves with and a client calls with.

Every server can serve TLS (AGENTLOOP_TLS_CERT/KEY) and require client certificates
(AGENTLOOP_TLS_CLIENT_CA: mutual TLS); every client (gateway → reasoner/tools, CLI and client
library → gateway) trusts AGENTLOOP_TLS_CA and presents AGENTLOOP_TLS_CLIENT_CERT/KEY when set.
The files are named by `agentloop.kernel.settings.TlsSettings`; a client process needs this
module and none of the servers' plumbing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc

from agentloop.kernel import channels
from agentloop.kernel.settings import TlsSettings


def server_credentials(tls: TlsSettings) -> grpc.ServerCredentials | None:
    """TLS (or mutual TLS with a client CA) credentials, or None to serve plaintext."""
    if not tls.cert_file:
        return None
    pair = [(Path(tls.key_file).read_bytes(), Path(tls.cert_file).read_bytes())]
    if tls.client_ca_file:
        return grpc.ssl_server_credentials(
            pair, root_certificates=Path(tls.client_ca_file).read_bytes(), require_client_auth=True
        )
    return grpc.ssl_server_credentials(pair)


def channel_credentials(tls: TlsSettings) -> grpc.ChannelCredentials | None:
    """Credentials for calling a TLS server, or None for plaintext."""
    if not tls.ca_file:
        return None
    key = Path(tls.client_key_file).read_bytes() if tls.client_key_file else None
    cert = Path(tls.client_cert_file).read_bytes() if tls.client_cert_file else None
    return grpc.ssl_channel_credentials(Path(tls.ca_file).read_bytes(), key, cert)


def open_channel(
    addr: str,
    tls: TlsSettings | None = None,
    options: Sequence[tuple[str, Any]] = (),
    interceptors: Sequence[Any] = (),
) -> grpc.aio.Channel:
    """A channel to another agentloop service: TLS when a CA is configured, plaintext otherwise.

    Options, reconnect behaviour and address forms are those of agentloop.kernel.channels.
    """
    credentials = channel_credentials(tls) if tls is not None else None
    return channels.open_channel(addr, credentials, options, interceptors)
