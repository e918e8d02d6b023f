"""The account side of `peagle traffic`: which metric names the traffic, and its sums per period.

The metric: "Invocations - The number of InvokeEndpoint requests sent to a model endpoint. To get the
total number of requests sent to a model endpoint, use the Sum statistic. Units: None. Valid
statistics: Sum", in the AWS/SageMaker namespace, where "Metrics are available at a 1-minute
frequency". Its dimensions ("Dimensions for endpoint invocation metrics"): "EndpointName, VariantName
- Filters endpoint invocation metrics for a ProductionVariant of the specified endpoint and variant"
and "InferenceComponentName - Filters inference component invocation metrics" ("Amazon SageMaker AI
metrics in Amazon CloudWatch", section "SageMaker AI endpoint invocation metrics",
https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html). A query names every
dimension the metric was published with: "If the metric contains multiple dimensions, you must include
a value for each dimension. CloudWatch treats each unique combination of dimensions as a separate
metric" (GetMetricStatistics, Amazon CloudWatch API Reference,
https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_GetMetricStatistics.html).

Every call goes through ``aws_call`` (peagle/aws.py); boto3 is imported only inside functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from peagle.aws import AwsCallError, aws_call, aws_client, aws_session
from peagle.traffic.window import TrafficHistoryError, Window, utc_text

NAMESPACE = "AWS/SageMaker"
METRIC_NAME = "Invocations"
STATISTIC = "Sum"
ENDPOINT_NAME_DIMENSION = "EndpointName"
VARIANT_NAME_DIMENSION = "VariantName"
COMPONENT_NAME_DIMENSION = "InferenceComponentName"
# MetricDataQuery Id: "The first character must be a lowercase letter"
# (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_MetricDataQuery.html).
QUERY_ID = "invocations"
# Service Authorization Reference, "Actions, resources, and condition keys for Amazon CloudWatch"
# (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazoncloudwatch.html):
# GetMetricData "Grants permission to retrieve batch amounts of CloudWatch metric data and perform
# metric math on retrieved data", access level Read, no resource type (Resource "*").
GET_METRIC_DATA_PERMISSION = 'cloudwatch:GetMetricData (Resource "*")'
# Service Authorization Reference, "Actions, resources, and condition keys for Amazon SageMaker AI"
# (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonsagemaker.html):
# DescribeEndpoint "Grants permission to return the description of an endpoint", resource type endpoint.
DESCRIBE_ENDPOINT_PERMISSION = "sagemaker:DescribeEndpoint on the endpoint"


@dataclass(frozen=True)
class Source:
    """Whose invocations: a production variant of an endpoint, or an inference component."""

    endpoint: str | None
    variant: str | None = None
    component: str | None = None

    def dimensions(self) -> list[dict[str, str]]:
        if self.component is not None:
            return [{"Name": COMPONENT_NAME_DIMENSION, "Value": self.component}]
        return [
            {"Name": ENDPOINT_NAME_DIMENSION, "Value": str(self.endpoint)},
            {"Name": VARIANT_NAME_DIMENSION, "Value": str(self.variant)},
        ]

    def describe(self) -> str:
        if self.component is not None:
            return f"inference component {self.component}" + (f" (endpoint {self.endpoint})" if self.endpoint else "")
        return f"endpoint {self.endpoint}, variant {self.variant}"

    def in_dimensions(self) -> str:
        return " ".join(f"{dimension['Name']}={dimension['Value']}" for dimension in self.dimensions())


@dataclass(frozen=True)
class History:
    sums: dict[datetime, float]  # period start (UTC) -> the Sum of Invocations over that period
    messages: tuple[str, ...]  # what GetMetricData said about the request or the data (Messages)


def _session(region: str | None) -> Any:
    return aws_session(region)


def _client(session: Any, service: str) -> Any:
    return aws_client(session, service)


def only_variant(sagemaker: Any, endpoint: str) -> str:
    """The endpoint's one production variant (DescribeEndpoint); several are an error naming them."""
    from botocore.exceptions import ClientError

    region = sagemaker.meta.region_name
    with aws_call(
        f"describing endpoint {endpoint} (SageMaker DescribeEndpoint)", permission=DESCRIBE_ENDPOINT_PERMISSION
    ):
        try:
            description = sagemaker.describe_endpoint(EndpointName=endpoint)
        except ClientError as error:
            details = error.response.get("Error", {})
            if details.get("Code") == "ValidationException" and "could not find" in str(details.get("Message")).lower():
                raise TrafficHistoryError(
                    f"endpoint {endpoint} not found in {region} ({details.get('Message')}); check --endpoint and "
                    f"--region (`aws sagemaker list-endpoints --region {region}`). A deleted endpoint's metrics stay "
                    "in CloudWatch: pass --variant NAME to read them without describing the endpoint"
                ) from None
            raise
    variants = [variant["VariantName"] for variant in description.get("ProductionVariants", [])]
    if len(variants) == 1:
        return variants[0]
    if not variants:
        raise TrafficHistoryError(
            f"endpoint {endpoint} has no production variant yet ({description.get('EndpointStatus', 'status unknown')}); "
            "pass --variant NAME, or --inference-component NAME for a component's traffic"
        )
    raise TrafficHistoryError(
        f"endpoint {endpoint} has {len(variants)} variants ({', '.join(variants)}); pass --variant with one of "
        "them (each variant's invocations are a metric of their own)"
    )


def invocations(cloudwatch: Any, source: Source, window: Window) -> History:
    """The Sum of Invocations per period of ``window``, every page of GetMetricData read."""
    query = {
        "Id": QUERY_ID,
        "MetricStat": {
            "Metric": {"Namespace": NAMESPACE, "MetricName": METRIC_NAME, "Dimensions": source.dimensions()},
            "Period": window.period_seconds,
            "Stat": STATISTIC,
        },
        "ReturnData": True,
    }
    doing = f"reading {NAMESPACE} {METRIC_NAME} for {source.describe()} (CloudWatch GetMetricData)"
    sums: dict[datetime, float] = {}
    messages: list[str] = []
    with aws_call(doing, permission=GET_METRIC_DATA_PERMISSION):
        # The paginator passes each NextToken on: "Include this value, if it was returned by the previous
        # GetMetricData operation, to get the next set of data points" (GetMetricData, NextToken).
        pages = cloudwatch.get_paginator("get_metric_data").paginate(
            MetricDataQueries=[query], StartTime=window.start, EndTime=window.end, ScanBy="TimestampAscending"
        )
        status = "Complete"
        for page in pages:
            messages.extend(_message_text(message) for message in page.get("Messages", []))
            for result in page.get("MetricDataResults", []):
                # A repeated page (a retry after InternalError) carries the same datapoints: set, never add.
                for timestamp, value in zip(result.get("Timestamps", []), result.get("Values", []), strict=True):
                    sums[timestamp] = float(value)
                messages.extend(_message_text(message) for message in result.get("Messages", []))
                status = result.get("StatusCode", status)
    # StatusCode: "Complete indicates that all data points in the requested time range were returned.
    # PartialData means that an incomplete set of data points were returned ... InternalError indicates
    # that an error occurred. Retry your request using NextToken, if present." (MetricDataResult)
    if status != "Complete":
        raise AwsCallError(
            f"{doing}: CloudWatch ended with status {status} between {utc_text(window.start)} and "
            f"{utc_text(window.end)}, so the counts would be incomplete"
            + (f" ({'; '.join(messages)})" if messages else "")
            + "; run the command again"
        )
    return History(sums=sums, messages=tuple(messages))


def _message_text(message: dict) -> str:
    return f"{message.get('Code', 'message')}: {message.get('Value', '')}".strip()
