"""The plan a P-EAGLE endpoint was built from, carried in its template, so the tools that read a synthesized
app (`peagle simulate`) need no deployment file and work on any app's cdk.out, whichever door made it.

PeagleEndpoint records, in the Metadata of each AWS::SageMaker::Endpoint it creates, under METADATA_KEY: the
door that made it (``file``: a deployment file through PeagleEndpoint.from_config; ``props``: the construct's
props), the endpoint's name and the plan of each serving unit (its variants, or its inference components), as
the planner made it (peagle.planning.planner.Plan, round-tripped by pydantic). "The Metadata attribute enables you to
associate structured data with a resource ... CloudFormation doesn't validate the syntax within the metadata
attribute" (CloudFormation User Guide, "Metadata attribute",
https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-metadata.html): nothing is created,
replaced or billed for it. The tools read it from the synthesized template (cdk.out), not from the deployed stack:
"During a stack update, you cannot update the Metadata section by itself. You can update it only when you include
changes that add, modify, or delete resources" (same guide, "CloudFormation template Metadata syntax"), so a deployed
stack can hold an older record when only the plan's notes changed; the cdk.out you deploy from holds the current one
(peagle.cloud_assembly.recorded_stack finds the stack that records one).
No secret is ever in a plan (the guide: "do not use this section to store sensitive information").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from peagle.planning.planner import Plan
from peagle.settings.errors import PeagleError

METADATA_KEY = "peagle:plan"
# The metadata key under which an asynchronous endpoint config records where its callers put InvokeEndpointAsync
# inputs (peagle_cdk/async_endpoint.py writes it): the template's only statement of the input location, which
# each request names ("InputLocation: The Amazon S3 URI where the inference request payload is stored", botocore
# 1.44.5 sagemaker-runtime InvokeEndpointAsync).
ASYNC_INPUT_METADATA_KEY = "peagle:AsyncInputS3Uri"
# Raise when the record's shape changes; a reader refuses a version it does not know, rather than guess.
RECORD_VERSION = 2  # 2: each unit's plan carries its rollout, observability, alarms and container settings
Door = Literal["file", "props"]
ENDPOINT = "AWS::SageMaker::Endpoint"


class PlanRecordError(PeagleError):
    """A template whose recorded plan cannot be read."""


@lru_cache(maxsize=1)
def _plans() -> TypeAdapter:
    return TypeAdapter(Plan)


@dataclass(frozen=True)
class PlanRecord:
    door: Door
    endpoint_name: str
    units: Mapping[str, Plan]  # serving unit (variant or component name) -> its plan, the primary first
    logical_id: str = ""  # the endpoint resource that carries it

    @property
    def primary(self) -> Plan:
        return next(iter(self.units.values()))


def plan_metadata(door: Door, endpoint_name: str, units: Mapping[str, Plan]) -> dict[str, Any]:
    """The JSON a PeagleEndpoint puts in its endpoint resource's Metadata."""
    return {
        "version": RECORD_VERSION,
        "door": door,
        "endpoint_name": endpoint_name,
        "units": {name: _plans().dump_python(plan, mode="json") for name, plan in units.items()},
    }


def read_records(template: Mapping[str, Any], *, source: str) -> list[PlanRecord]:
    """Every endpoint's recorded plan in a template body, in template order (empty: none recorded)."""
    records = []
    for logical_id, resource in (template.get("Resources") or {}).items():
        if resource.get("Type") != ENDPOINT or METADATA_KEY not in (resource.get("Metadata") or {}):
            continue
        data = resource["Metadata"][METADATA_KEY]
        if not isinstance(data, Mapping) or data.get("version") != RECORD_VERSION:
            raise PlanRecordError(
                f"{source}: endpoint {logical_id} records a plan of version {data.get('version')!r}, this peagle reads "
                f"version {RECORD_VERSION}: use the peagle that synthesized it, or synthesize again with this one"
            )
        try:
            units = {name: _plans().validate_python(plan) for name, plan in data["units"].items()}
        except (KeyError, ValidationError) as error:
            raise PlanRecordError(f"{source}: endpoint {logical_id}'s recorded plan cannot be read ({error})") from None
        records.append(PlanRecord(data["door"], data["endpoint_name"], units, logical_id))
    return records
