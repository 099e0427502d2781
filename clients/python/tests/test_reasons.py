"""Refusal reasons decoded from the google.rpc.ErrorInfo a real gRPC server
sends in its status details (an in-process server on loopback)."""

from concurrent import futures

import grpc
import pytest

import ambit_client as ambit
from ambit.error.v1 import error_pb2
from google.protobuf import any_pb2


def _varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number, data):
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def error_info(reason, domain):
    entry = _field(1, b"field") + _field(2, b"salary")  # a metadata map entry, skipped
    return _field(1, reason.encode()) + _field(2, domain.encode()) + _field(3, entry)


def status(code, *details):
    body = _varint(1 << 3 | 0) + _varint(code) + _field(2, b"refused")
    for type_name, value in details:
        body += _field(3, any_pb2.Any(type_url="type.googleapis.com/" + type_name, value=value).SerializeToString())
    return body


CASES = {
    "ambit": [("google.rpc.ErrorInfo", error_info("ERROR_REASON_FIELDS_OUTSIDE_GRANT", "ambit"))],
    "after another detail": [
        ("google.rpc.BadRequest", b"\x0a\x00"),
        ("google.rpc.ErrorInfo", error_info("OTHER", "example.com")),
        ("google.rpc.ErrorInfo", error_info("ERROR_REASON_TASK_NOT_BOUND", "ambit")),
    ],
    "newer reason": [("google.rpc.ErrorInfo", error_info("ERROR_REASON_FROM_THE_FUTURE", "ambit"))],
    "other domain": [("google.rpc.ErrorInfo", error_info("ERROR_REASON_TASK_NOT_BOUND", "example.com"))],
    "no details": [],
    "garbage": None,
}


def _fail(request, context):
    details = CASES[request.decode()]
    value = b"\xff\xff" if details is None else status(7, *details)
    context.set_trailing_metadata((("grpc-status-details-bin", value),))
    context.abort(grpc.StatusCode.PERMISSION_DENIED, "refused")


@pytest.fixture(scope="module")
def call():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("test.Refuser", {"Fail": grpc.unary_unary_rpc_method_handler(_fail)}),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    fail = channel.unary_unary("/test.Refuser/Fail")

    def call(case):
        with pytest.raises(grpc.RpcError) as info:
            fail(case.encode(), timeout=10)
        return info.value

    yield call
    channel.close()
    server.stop(None)


@pytest.mark.parametrize(
    "case, want, want_name",
    [
        ("ambit", error_pb2.ERROR_REASON_FIELDS_OUTSIDE_GRANT, "ERROR_REASON_FIELDS_OUTSIDE_GRANT"),
        ("after another detail", error_pb2.ERROR_REASON_TASK_NOT_BOUND, "ERROR_REASON_TASK_NOT_BOUND"),
        ("newer reason", error_pb2.ERROR_REASON_UNSPECIFIED, "ERROR_REASON_FROM_THE_FUTURE"),
        ("other domain", error_pb2.ERROR_REASON_UNSPECIFIED, None),
        ("no details", error_pb2.ERROR_REASON_UNSPECIFIED, None),
        ("garbage", error_pb2.ERROR_REASON_UNSPECIFIED, None),
    ],
)
def test_reason(call, case, want, want_name):
    err = call(case)
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED
    assert ambit.reason(err) == want
    assert ambit.reason_name(err) == want_name


def test_reason_of_a_plain_exception():
    assert ambit.reason(ValueError("x")) == error_pb2.ERROR_REASON_UNSPECIFIED
