"""The chat service's API function: one prompt in, the endpoint's completion out.

The endpoint's /invocations takes {"prompt": ..., "max_tokens": ...} (what `make local` serves too);
the endpoint's name comes from the function's environment.
"""

import json
import os

import boto3

_runtime = boto3.client("sagemaker-runtime")


def handler(event, _context):
    body = json.loads(event.get("body") or "{}")
    request = {"prompt": body["prompt"], "max_tokens": int(body.get("max_tokens", 256))}
    response = _runtime.invoke_endpoint(
        EndpointName=os.environ["ENDPOINT_NAME"],
        ContentType="application/json",
        Body=json.dumps(request),
    )
    completion = json.loads(response["Body"].read())
    return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": json.dumps(completion)}
