"""Ambit's generated API and the small layer a Python agent uses over it.

The generated modules live in ``ambit_client/gen`` and import each other as
``ambit.<area>.v1`` and ``buf.validate``, as protoc writes them; importing
this package puts that folder on ``sys.path`` once so that they resolve::

    import ambit_client
    from ambit.agent.v1 import agent_pb2

Entry points: :func:`dial` (or :class:`Agent` over channels you made),
:meth:`Agent.read`, :meth:`Agent.propose`, :meth:`Agent.execute`,
:meth:`Agent.verify`, :meth:`Agent.do` (all three steps), :func:`money`,
:func:`parse_money`, :func:`reason` and :func:`verify_receipt`.
"""

import os as _os
import sys as _sys

_GEN = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "gen")
if _GEN not in _sys.path:
    _sys.path.append(_GEN)

from .agent import Addresses, Agent, Decision, Evidence, NotAllowed, Outcome, dial  # noqa: E402
from .connect import (  # noqa: E402
    ROLE_ACTION,
    ROLE_AGENT,
    ROLE_EVIDENCE,
    ROLE_GOVERNANCE,
    ROLE_KERNEL,
    ROLE_VERIFIER,
    ServerIdentityError,
    channel,
    credentials,
    server_identity,
)
from .money import Money, exponent, format_money, money, parse_money  # noqa: E402
from .reasons import reason, reason_name  # noqa: E402
from .receipts import ReceiptError, load_public_key, signing_input, verify_receipt  # noqa: E402

__all__ = [
    "Addresses",
    "Agent",
    "Decision",
    "Evidence",
    "Money",
    "NotAllowed",
    "Outcome",
    "ROLE_ACTION",
    "ROLE_AGENT",
    "ROLE_EVIDENCE",
    "ROLE_GOVERNANCE",
    "ROLE_KERNEL",
    "ROLE_VERIFIER",
    "ReceiptError",
    "ServerIdentityError",
    "channel",
    "credentials",
    "dial",
    "exponent",
    "format_money",
    "load_public_key",
    "money",
    "parse_money",
    "reason",
    "reason_name",
    "server_identity",
    "signing_input",
    "verify_receipt",
]
