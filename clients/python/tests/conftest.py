"""Fixtures: the live stack (``ambitctl dev up``), a governance channel and
tasks bound to the expense-refund example's contract.

Set AMBIT_STACK to the stack.json of a stack already running to use it
instead of starting one.
"""

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ambit_client  # noqa: E402
import yaml  # noqa: E402
from ambit.contract.v1 import contract_pb2  # noqa: E402
from ambit.kernel.v1 import governance_pb2, governance_pb2_grpc  # noqa: E402
from ambit.ledger.v1 import ledger_pb2  # noqa: E402
from google.protobuf import json_format  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
AMBITCTL = REPO / "bin" / "ambitctl"
CONTRACT = REPO / "examples" / "expense-refund" / "contract.yaml"
START_TIMEOUT = 120.0
STOP_TIMEOUT = 30.0
GOVERNANCE = "policy-owner"
PURPOSE = "expense-refund"


def _has_dev_up():
    out = subprocess.run([str(AMBITCTL), "--help"], capture_output=True, text=True, timeout=30)
    return "dev up" in out.stdout + out.stderr


def _wait_for_stack(proc, path, log):
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"ambitctl dev up exited with {proc.returncode} before writing {path}:\n{log.read_text()}")
        try:
            return json.loads(path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            time.sleep(0.1)
    pytest.fail(f"ambitctl dev up wrote no {path} within {START_TIMEOUT:.0f}s:\n{log.read_text()}")


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    """The running stack's description (stack.json), with its path as _file."""
    if os.environ.get("AMBIT_STACK"):
        path = Path(os.environ["AMBIT_STACK"])
        yield dict(json.loads(path.read_text()), _file=str(path))
        return
    if not AMBITCTL.exists():
        pytest.fail(f"{AMBITCTL} is missing: run make build")
    if not _has_dev_up():
        pytest.skip(f"{AMBITCTL} has no `dev up` command yet: the live tests need it to start the stack")
    root = tmp_path_factory.mktemp("stack")
    log = root / "dev-up.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(AMBITCTL), "dev", "up", str(root / "dev")], stdout=out, stderr=subprocess.STDOUT)
    try:
        path = root / "dev" / "stack.json"
        yield dict(_wait_for_stack(proc, path, log), _file=str(path))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail(f"ambitctl dev up did not stop within {STOP_TIMEOUT:.0f}s of SIGTERM:\n{log.read_text()}")


@pytest.fixture(scope="session")
def agent_name(stack):
    return stack["agents"][0]


@pytest.fixture(scope="session")
def agent_dir(stack, agent_name):
    """The agent's key folder."""
    return os.path.join(stack["pki"], agent_name)


@pytest.fixture(scope="session")
def addresses(stack):
    return ambit_client.Addresses(
        kernel=stack["kernel"]["agent"], evidence=stack["evidence"], action=stack["action"], verifier=stack["verifier"]
    )


@pytest.fixture(scope="session")
def agent(agent_dir, agent_name, addresses):
    with ambit_client.dial(agent_dir, agent_name, addresses) as a:
        yield a


@pytest.fixture(scope="session")
def governance(stack):
    ch = ambit_client.channel(
        stack["kernel"]["governance"],
        os.path.join(stack["pki"], GOVERNANCE),
        GOVERNANCE,
        role=ambit_client.ROLE_KERNEL,
    )
    with ch:
        yield governance_pb2_grpc.GovernanceServiceStub(ch)


def refund_contract(task, claim):
    """The example's contract template, bound to one task and claim for
    four hours."""
    c = json_format.ParseDict(yaml.safe_load(CONTRACT.read_text()), contract_pb2.Contract())
    c.binding.task_id = task
    c.binding.record.key = claim
    c.binding.valid_until.FromDatetime(datetime.now(timezone.utc) + timedelta(hours=4))
    return c


@pytest.fixture
def bind(governance, agent_name):
    """bind(claim) proposes, promotes and binds a fresh task on the claim
    for the agent, and returns the task id."""

    def bind(claim):
        task = f"py-{claim}-{uuid.uuid4().hex[:12]}"
        item_id = f"ctr-{task}"
        item = ledger_pb2.CanonItem(
            canon_item_id=item_id,
            source_origin=ledger_pb2.SOURCE_ORIGIN_POLICY,
            authority_level=ledger_pb2.AUTHORITY_LEVEL_OWNER,
            provenance_ref="policy-repo:examples/expense-refund/contract.yaml",
            scope=ledger_pb2.SCOPE_TASK,
            lifetime=ledger_pb2.LIFETIME_TASK,
            promotion_state=ledger_pb2.PROMOTION_STATE_PROPOSED,
            conflict_state=ledger_pb2.CONFLICT_STATE_NONE,
            kind=ledger_pb2.ITEM_KIND_CONTRACT,
            contract=refund_contract(task, claim),
        )
        governance.ProposeItem(governance_pb2.ProposeItemRequest(item=item), timeout=30)
        promoted = governance.PromoteItem(governance_pb2.PromoteItemRequest(canon_item_id=item_id), timeout=30)
        # "class" is a Python keyword: read the field by name.
        assert getattr(promoted.item, "class") == ledger_pb2.CANON_CLASS_CANONICAL, promoted.item
        governance.BindTask(governance_pb2.BindTaskRequest(task_id=task, contract_item_id=item_id, agent=agent_name), timeout=30)
        return task

    return bind
