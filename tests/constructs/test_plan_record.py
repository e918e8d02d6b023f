"""The plan a PeagleEndpoint records in its template (peagle/planning/plan_record.py): the plan it was built from, per
serving unit, with the door that made it, read back equal; what `peagle simulate` reads instead of a deployment
file."""

from __future__ import annotations

import json

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template

from peagle.planning.plan_record import METADATA_KEY, PlanRecordError, read_records
from peagle_cdk import AbBaseline, EndpointMode, ModelWeights, PeagleEndpoint


def _endpoint(stack: Stack, id: str = "Chat", **props) -> PeagleEndpoint:
    props.setdefault("weights", ModelWeights.from_bucket(s3.Bucket(stack, f"{id}Weights"), "models/gpt-oss-20b/"))
    return PeagleEndpoint(stack, id, name=id.lower(), **props)


def test_the_props_door_records_each_units_plan_and_reads_it_back_equal():
    stack = Stack(App(), "Service")
    endpoint = _endpoint(stack, ab_baseline=AbBaseline())
    (record,) = read_records(Template.from_stack(stack).to_json(), source="Service")
    assert record.door == "props" and record.endpoint_name == endpoint.endpoint_name
    assert list(record.units) == ["Primary", "Baseline"]
    assert record.units["Primary"] == endpoint.plan and record.units["Baseline"] == endpoint.baseline_plan
    assert record.primary.instance_type == "ml.g6e.xlarge"


def test_components_and_the_async_endpoint_record_their_plans_too():
    stack = Stack(App(), "Service")
    endpoint = _endpoint(stack, model="qwen3-8b", mode=EndpointMode.inference_components())
    endpoint.add_async_endpoint(bucket_name="jobs")
    records = read_records(Template.from_stack(stack).to_json(), source="Service")
    assert [list(record.units) for record in records] == [["chat-primary"], ["Primary"]]
    assert [record.endpoint_name for record in records] == ["chat-endpoint", "chat-async"]
    assert all(record.primary == endpoint.plan for record in records)


def test_the_yaml_app_records_the_file_door(cdk_synthesized):
    (record,) = read_records(cdk_synthesized().templates["PeagleEndpoint"], source="PeagleEndpoint")
    assert record.door == "file" and record.endpoint_name == "peagle-endpoint"


def test_a_record_of_another_version_is_refused_with_what_to_do():
    stack = Stack(App(), "Service")
    _endpoint(stack)
    template = Template.from_stack(stack).to_json()
    (endpoint,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::Endpoint"]
    endpoint["Metadata"][METADATA_KEY]["version"] = 99
    with pytest.raises(PlanRecordError, match="records a plan of version 99, this peagle reads version 2"):
        read_records(json.loads(json.dumps(template)), source="Service")
