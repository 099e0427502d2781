"""Mutually authenticated channels from a key folder.

``ambitctl dev init DIR`` gives each identity a folder DIR/<identity>
holding its TLS certificate and key (<identity>.pem, <identity>.key) and
the CA certificate (ca.pem). Every Ambit server requires a client
certificate signed by that CA, and carries its role in its own certificate
as the URI SAN ambit://role/<role>.

Checking the server's role. gRPC's Python API verifies the server's chain
against the CA and its name against the address, but cannot run a check of
its own inside the handshake. With ``role`` set, :func:`channel` first makes
one TLS handshake of its own with the same keys and refuses a server whose
certificate carries another role (a process pointed at the wrong port, or
at another identity). The check is made once, when the channel is made;
later reconnections are verified against the CA only. Leave ``role`` unset
to skip it.
"""

import os
import socket
import ssl

import grpc

ROLE_KERNEL = "kernel"
ROLE_AGENT = "agent"
ROLE_EVIDENCE = "evidence-adapter"
ROLE_ACTION = "action-adapter"
ROLE_VERIFIER = "verifier"
ROLE_GOVERNANCE = "governance"

_ROLE_PREFIX = "ambit://role/"


class ServerIdentityError(Exception):
    """The server's certificate does not carry the expected role."""


def _paths(identity_dir, identity):
    return (
        os.path.join(identity_dir, "ca.pem"),
        os.path.join(identity_dir, f"{identity}.pem"),
        os.path.join(identity_dir, f"{identity}.key"),
    )


def credentials(identity_dir, identity):
    """Channel credentials of ``identity`` from its key folder: its
    certificate and key, trusting only the folder's CA."""
    ca, cert, key = _paths(identity_dir, identity)
    with open(ca, "rb") as f:
        root = f.read()
    with open(cert, "rb") as f:
        chain = f.read()
    with open(key, "rb") as f:
        private_key = f.read()
    return grpc.ssl_channel_credentials(root_certificates=root, private_key=private_key, certificate_chain=chain)


def _split(address):
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"address {address!r}: want HOST:PORT")
    return host.strip("[]"), int(port)


def server_identity(address, identity_dir, identity, timeout=10.0):
    """The (name, role) the server at ``address`` presents, from a TLS 1.3
    handshake as ``identity`` that verifies the server against the CA."""
    ca, cert, key = _paths(identity_dir, identity)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_verify_locations(cafile=ca)
    ctx.load_cert_chain(certfile=cert, keyfile=key)
    ctx.set_alpn_protocols(["h2"])
    host, port = _split(address)
    with socket.create_connection((host, port), timeout=timeout) as sock:
        with ctx.wrap_socket(sock, server_hostname=host) as tls:
            peer = tls.getpeercert()
    name = next((v for rdn in peer.get("subject", ()) for k, v in rdn if k == "commonName"), "")
    roles = [v[len(_ROLE_PREFIX):] for k, v in peer.get("subjectAltName", ()) if k == "URI" and v.startswith(_ROLE_PREFIX)]
    if not name or len(roles) != 1:
        raise ServerIdentityError(f"server {address}: certificate carries no single Ambit identity (name {name!r}, roles {roles})")
    return name, roles[0]


def channel(address, identity_dir, identity, role=None, timeout=10.0):
    """A channel to ``address`` as ``identity``; with ``role``, the server's
    certificate must carry that role (see the module's notes)."""
    if role is not None:
        name, got = server_identity(address, identity_dir, identity, timeout)
        if got != role:
            raise ServerIdentityError(f"server {address} ({name!r}) has role {got}, want {role}")
    return grpc.secure_channel(address, credentials(identity_dir, identity))
