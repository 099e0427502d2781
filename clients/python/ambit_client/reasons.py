"""The machine-readable reason of a refusal from any Ambit process.

Every refusal carries a google.rpc.Status in the ``grpc-status-details-bin``
trailer whose details hold a google.rpc.ErrorInfo with domain "ambit" and
a reason naming an ambit.error.v1.ErrorReason value. Debian's grpcio has
no grpc_status module, so the three small messages are read here straight
from the protobuf wire format.
"""

import grpc
from ambit.error.v1 import error_pb2

_DETAILS_KEY = "grpc-status-details-bin"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
_DOMAIN = "ambit"


def reason(err):
    """The ErrorReason (an int of ambit.error.v1.ErrorReason) of a refusal,
    or ERROR_REASON_UNSPECIFIED for an error that carries none."""
    name = reason_name(err)
    if name is None or name not in error_pb2.ErrorReason.keys():
        return error_pb2.ERROR_REASON_UNSPECIFIED
    return error_pb2.ErrorReason.Value(name)


def reason_name(err):
    """The reason as the server named it (e.g. "ERROR_REASON_TASK_NOT_BOUND"),
    also one newer than this client; None when the error carries none."""
    if not isinstance(err, grpc.Call):
        return None
    for key, value in err.trailing_metadata() or ():
        if key != _DETAILS_KEY:
            continue
        for detail in _repeated(value, 3):  # google.rpc.Status.details
            fields = _strings(detail)  # google.protobuf.Any
            if fields.get(1) != _ERROR_INFO.encode():
                continue
            info = _strings(fields.get(2, b""))  # google.rpc.ErrorInfo
            if info.get(2, b"").decode("utf-8", "replace") == _DOMAIN:
                return info.get(1, b"").decode("utf-8", "replace")
    return None


def _fields(data):
    """Yields (field number, wire type, value) of a serialised message."""
    pos = 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 2:
            size, pos = _varint(data, pos)
            value, pos = data[pos:pos + size], pos + size
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos > len(data):
            raise ValueError("truncated message")
        yield number, wire, value


def _varint(data, pos):
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("bad varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _strings(data):
    """The last length-delimited value of each field number (proto3's rule
    for a repeated singular field)."""
    try:
        return {n: bytes(v) for n, w, v in _fields(data) if w == 2}
    except ValueError:
        return {}


def _repeated(data, number):
    try:
        return [bytes(v) for n, w, v in _fields(data) if n == number and w == 2]
    except ValueError:
        return []
