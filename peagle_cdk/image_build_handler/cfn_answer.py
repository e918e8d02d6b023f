"""The answer to a CloudFormation custom-resource request: a PUT of the response object to the request's pre-signed
ResponseURL. Stdlib only (it runs in AWS Lambda's Python runtime).

The URL lets whoever holds it answer for the stack (aws-cdk packages/aws-cdk-lib/custom-resources/README.md: "Anybody
who can list and read AWS StepFunction executions in your account will be able to write a fake response to this
URL"), so it is never printed, never put in a build, and travels only in the events Lambda passes to this function.
"""

from __future__ import annotations

import json
import time
import urllib.request
from dataclasses import dataclass, field, replace
from typing import Any

# "The total size of the response body can't exceed 4096 bytes" (CloudFormation User Guide, "Custom resource response
# objects"): the reason is cut well below it.
MAX_REASON = 1500
# A PUT that fails (the network, S3) is tried again before the invocation gives up and Lambda retries it.
PUT_PAUSES_SECONDS = (1, 3)


@dataclass(frozen=True)
class Request:
    """What an answer must carry back, from the request's fields ("ResponseURL", "StackId", "RequestId",
    "LogicalResourceId", "PhysicalResourceId": CloudFormation User Guide, "Custom resource request objects")."""

    response_url: str = field(repr=False)  # never in a log line
    stack_id: str
    request_id: str
    logical_resource_id: str
    physical_resource_id: str | None

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> Request:
        return cls(
            response_url=event["ResponseURL"],
            stack_id=event["StackId"],
            request_id=event["RequestId"],
            logical_resource_id=event["LogicalResourceId"],
            physical_resource_id=event.get("PhysicalResourceId"),
        )

    def naming(self, physical_resource_id: str) -> Request:
        return replace(self, physical_resource_id=physical_resource_id)


def respond(request: Request, status: str, reason: str, *, data: dict[str, str] | None = None) -> None:
    """PUT {Status, Reason, PhysicalResourceId, StackId, RequestId, LogicalResourceId, Data} to the ResponseURL,
    with the empty Content-Type the URL was signed for; raises when every try failed."""
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason[:MAX_REASON],
            "PhysicalResourceId": request.physical_resource_id or request.logical_resource_id,
            "StackId": request.stack_id,
            "RequestId": request.request_id,
            "LogicalResourceId": request.logical_resource_id,
            "Data": data or {},
        }
    ).encode()
    for pause in (*PUT_PAUSES_SECONDS, None):
        put = urllib.request.Request(
            request.response_url,
            data=body,
            method="PUT",
            headers={"Content-Type": "", "Content-Length": str(len(body))},
        )
        try:
            with urllib.request.urlopen(put, timeout=30) as answer:
                print(json.dumps({"responded": status, "http": answer.status}))
                return
        except OSError as error:  # urllib's URLError and HTTPError are OSErrors
            if pause is None:
                raise
            print(json.dumps({"response": "retried", "error": type(error).__name__}))
            time.sleep(pause)
