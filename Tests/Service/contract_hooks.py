"""Schemathesis hooks for Tests/Service/openapi_contract.py.

Generated recording settings may hold `stream`, a media server to publish to:
a random URL could name an address beyond this machine, and the tests send
nothing beyond loopback. The key is taken out before each request (the
service's handling of stream URLs is tested by the streaming tests, against
servers on 127.0.0.1)."""

import schemathesis


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.operation.path == "/recordings" and case.method.upper() == "POST" and isinstance(case.body, dict):
        case.body.pop("stream", None)
