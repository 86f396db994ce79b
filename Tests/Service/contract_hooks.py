"""Schemathesis hooks for Tests/Service/openapi_contract.py.

Generated recording settings may hold `stream`, a media server to publish to:
a random URL could name an address beyond this machine, and the tests send
nothing beyond loopback. The key is taken out before each request (the
service's handling of stream URLs is tested by the streaming tests, against
servers on 127.0.0.1).

A WHEP offer is SDP text (application/sdp), which schemathesis has no
serializer for: generated offers are sent as the text they are."""

import schemathesis


@schemathesis.serializer("application/sdp")
def sdp_serializer(ctx, value):
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.method.upper() != "POST" or not isinstance(case.body, dict):
        return
    if case.operation.path == "/recordings":
        case.body.pop("stream", None)
    elif case.operation.path == "/photos":
        bound_photo_series(case.body)


def bound_photo_series(body):
    """A series of photos takes its count times its interval (a time-lapse of
    100 photos a second apart is valid, and takes 100 s): generated series are
    kept short enough to be answered within the run's request timeout (30 s),
    on a busy machine too. At most 20 photos, at most 3 when spaced, at most
    1 s apart; what is refused stays refused (a count of 1 with an interval,
    a count that is not a number)."""
    count = body.get("count")
    try:
        number = None if isinstance(count, bool) else int(str(count))
    except ValueError:
        number = None
    interval = body.get("interval")
    spaced = interval is not None and not isinstance(interval, bool) and interval not in (0, 0.0, "0")
    limit = 3 if spaced else 20
    if number is not None and number > limit:
        body["count"] = limit if isinstance(count, int) else str(limit)
    if spaced and (not isinstance(interval, (int, float)) or interval > 1):
        body["interval"] = 1
