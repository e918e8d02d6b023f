"""The smoke steps that ask AWS's control plane: endpoint status, KPI metrics, alarms.

Each takes ready boto3 clients (Stubber-able in tests). A call that fails for a
reason the user can fix becomes ``AwsCallError`` (the runner reports the step as
FAIL with its message); missing or rejected credentials become ``AwsSetupError``,
which ends the whole run: every later step would fail the same way.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from peagle.aws import BAD_CREDENTIAL_CODES, AwsCallError, aws_call, describe_client_error
from peagle.settings.errors import PeagleError
from peagle.smoke.step import (
    ALARMS_OK,
    ENDPOINT_IN_SERVICE,
    KPI_METRICS,
    SPECULATION_ON,
    StepResult,
    Timing,
    fail,
    ok,
    poll_until,
    skip,
)
from peagle_serve.contract import (
    ENDPOINT_NAME_DIMENSION,
    KPI_NAMESPACE,
    KPI_REPORTS_METRIC,
    SPEC_ACCEPTANCE_RATE_METRIC,
    SPEC_MEAN_ACCEPTANCE_LENGTH_METRIC,
    VARIANT_NAME_DIMENSION,
)

if TYPE_CHECKING:
    from peagle.cloud_assembly import StackTemplate

NO_CREDENTIALS_MESSAGE = (
    "no AWS credentials found: run 'aws configure' (or `aws sso login`), or set AWS_PROFILE "
    "or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"
)

# DescribeEndpoint's EndpointStatus, https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeEndpoint.html:
# "Valid Values: OutOfService | Creating | Updating | SystemUpdating | RollingBack | InService |
# Deleting | Failed | UpdateRollbackFailed"; "InService: Endpoint is available to process incoming
# requests". These four end on their own ("Creating: CreateEndpoint is executing", "Updating:
# UpdateEndpoint or UpdateEndpointWeightsAndCapacities is executing", SystemUpdating is maintenance,
# RollingBack "Once the rollback completes, endpoint returns to an InService status"), so they are
# worth waiting for; the others are not.
IN_SERVICE = "InService"
TRANSITIONAL_STATUSES = frozenset({"Creating", "Updating", "SystemUpdating", "RollingBack"})
ENDPOINT_POLL_SECONDS = 30.0
SUGGESTED_WAIT_SECONDS = 1800

METRIC_POLL_SECONDS = 20.0
# The KPI metrics come from metric filters (regular resolution): "For metrics with regular resolution,
# a period can be as short as one minute (60 seconds) and must be a multiple of 60"
# (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_MetricStat.html).
METRIC_PERIOD_SECONDS = 60

# CloudFormation resource types whose physical id is an alarm name: for a resource, Ref "returns a
# value that you use to identify that resource. Usually, that's the name of the resource"
# (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/intrinsic-function-reference-ref.html),
# and for both alarm types that is AlarmName (aws-cdk-lib's Alarm/CompositeAlarm read alarmName from Ref).
ALARM_RESOURCE_TYPES = frozenset({"AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm"})
# DescribeAlarms, https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_DescribeAlarms.html:
# AlarmNames "Array Members: Maximum number of 100 items"; AlarmTypes "If you omit this parameter,
# only metric alarms are returned, even if composite alarms exist in the account"; and "To use this
# operation and return information about composite alarms, you must be signed on with the
# cloudwatch:DescribeAlarms permission that is scoped to *" (so a narrower grant shows them as missing).
DESCRIBE_ALARMS_MAX_NAMES = 100
ALARM_TYPES = ["MetricAlarm", "CompositeAlarm"]
# StateValue: OK | ALARM | INSUFFICIENT_DATA (same page).
ALARM_STATE = "ALARM"
INSUFFICIENT_DATA_STATE = "INSUFFICIENT_DATA"


class AwsSetupError(PeagleError):
    """No usable AWS credentials or region: nothing can be checked."""


@contextmanager
def aws_request(doing: str, *, permission: str) -> Iterator[None]:
    """``aws_call``, except that credential failures raise ``AwsSetupError`` (they end the run)."""
    from botocore.exceptions import (
        ClientError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
        TokenRetrievalError,
    )

    with aws_call(doing, permission=permission):
        try:
            yield
        except (NoCredentialsError, PartialCredentialsError, TokenRetrievalError) as error:
            raise AwsSetupError(f"{NO_CREDENTIALS_MESSAGE} ({error})") from None
        except NoRegionError:
            raise AwsSetupError("no AWS region: pass --region or set AWS_DEFAULT_REGION") from None
        except ClientError as error:
            if str(error.response.get("Error", {}).get("Code")) in BAD_CREDENTIAL_CODES:
                raise AwsSetupError(describe_client_error(error, doing=doing, permission=permission)) from None
            raise


# -- endpoint-in-service ----------------------------------------------------------------------


def check_endpoint_in_service(
    sagemaker: Any,
    endpoint_name: str,
    variant_name: str | None,
    *,
    wait_seconds: float,
    timing: Timing,
    component: str | None = None,
) -> StepResult:
    """DescribeEndpoint until InService (polling up to ``wait_seconds`` through transitional states);
    ``variant_name`` None (inference-component mode): no variant is required, ``component`` is named."""
    deadline = timing.monotonic() + wait_seconds
    started = timing.monotonic()

    def describe() -> dict:
        try:
            with aws_request(
                f"describing endpoint {endpoint_name} (SageMaker DescribeEndpoint)",
                permission="sagemaker:DescribeEndpoint",
            ):
                return sagemaker.describe_endpoint(EndpointName=endpoint_name)
        except AwsCallError as error:
            if "could not find endpoint" in str(error).lower():
                raise AwsCallError(
                    f"endpoint {endpoint_name} not found in {sagemaker.meta.region_name}: check --endpoint and "
                    "--region (`aws sagemaker list-endpoints`), or deploy it (`npx cdk deploy PeagleEndpoint`)"
                ) from None
            raise

    description = poll_until(
        describe,
        lambda found: found["EndpointStatus"] not in TRANSITIONAL_STATUSES,
        deadline=deadline,
        interval_seconds=ENDPOINT_POLL_SECONDS,
        timing=timing,
    )
    status = description["EndpointStatus"]
    waited = timing.monotonic() - started
    if status == IN_SERVICE:
        if variant_name is None:
            return _pool_check(description, component)
        return _variant_check(description, variant_name)
    if status in TRANSITIONAL_STATUSES:
        still = f"still {status} after waiting {waited:.0f} s" if wait_seconds > 0 else f"{status}, not yet InService"
        return fail(
            ENDPOINT_IN_SERVICE,
            f"{still}; run again when it is InService, or pass --wait-seconds {SUGGESTED_WAIT_SECONDS} to poll "
            f"every {ENDPOINT_POLL_SECONDS:.0f} s",
        )
    reason = description.get("FailureReason")
    return fail(ENDPOINT_IN_SERVICE, f"{status}" + (f": {reason}" if reason else ""))


def _pool_check(description: dict, component: str | None) -> StepResult:
    """Inference-component mode: the variants are instance pools; an instance count of 0 is a scaled-to-zero
    endpoint, which the invocations wait for (--cold-start-wait)."""
    pools = ", ".join(
        f"{variant['VariantName']} on {variant.get('CurrentInstanceCount', '?')} instance(s)"
        for variant in description.get("ProductionVariants", [])
    )
    detail = f"InService; {pools or 'no variant'}" + (
        f"; invoking inference component {component}" if component else ""
    )
    if description.get("FailureReason"):
        detail += f"; the last update failed: {description['FailureReason']}"
    return ok(ENDPOINT_IN_SERVICE, detail)


def _variant_check(description: dict, variant_name: str) -> StepResult:
    variants = {variant["VariantName"]: variant for variant in description.get("ProductionVariants", [])}
    if variant_name not in variants:
        return fail(
            ENDPOINT_IN_SERVICE,
            f"InService, but it has no variant {variant_name!r} (variants: {', '.join(sorted(variants)) or 'none'}); "
            "pass --variant",
        )
    instances = variants[variant_name].get("CurrentInstanceCount")
    detail = f"InService; variant {variant_name}" + (f" on {instances} instance(s)" if instances is not None else "")
    if len(variants) > 1:
        detail += f" (of {len(variants)} variants: {', '.join(sorted(variants))})"
    # "or the status is InService but update operation fails, this provides the reason" (same page)
    if description.get("FailureReason"):
        detail += f"; the last update failed: {description['FailureReason']}"
    return ok(ENDPOINT_IN_SERVICE, detail)


# -- speculation-on / kpi-metrics -------------------------------------------------------------


class KpiMetricReader:
    """GetMetricData over the last ``window_minutes`` for one endpoint variant's KPI metrics."""

    def __init__(
        self,
        cloudwatch: Any,
        *,
        endpoint_name: str,
        variant_name: str,
        window_minutes: int,
        timing: Timing,
        log_group: str | None = None,
    ):
        self._cloudwatch = cloudwatch
        self.endpoint_name = endpoint_name
        self.log_group = log_group or f"/aws/sagemaker/Endpoints/{endpoint_name}"
        self.variant_name = variant_name
        self.window_minutes = window_minutes
        self._timing = timing

    def read(self, metrics: dict[str, tuple[str, str]]) -> dict[str, list[float]]:
        """``{query id: (metric name, statistic)}`` -> the datapoints' values per query id."""
        # "If the metric contains multiple dimensions, you must include a value for each dimension. CloudWatch
        # treats each unique combination of dimensions as a separate metric"
        # (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_GetMetricStatistics.html):
        # both dimensions the KPI metric filters publish, EndpointName and VariantName.
        dimensions = [
            {"Name": ENDPOINT_NAME_DIMENSION, "Value": self.endpoint_name},
            {"Name": VARIANT_NAME_DIMENSION, "Value": self.variant_name},
        ]
        # Query Id: "The first character must be a lowercase letter"
        # (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_MetricDataQuery.html).
        queries = [
            {
                "Id": query_id,
                "MetricStat": {
                    "Metric": {"Namespace": KPI_NAMESPACE, "MetricName": metric_name, "Dimensions": dimensions},
                    "Period": METRIC_PERIOD_SECONDS,
                    "Stat": statistic,
                },
                "ReturnData": True,
            }
            for query_id, (metric_name, statistic) in metrics.items()
        ]
        end = self._timing.utc_now()
        values: dict[str, list[float]] = {query_id: [] for query_id in metrics}
        with aws_request(
            f"reading {', '.join(name for name, _ in metrics.values())} from {KPI_NAMESPACE} (CloudWatch GetMetricData)",
            permission="cloudwatch:GetMetricData",
        ):
            pages = self._cloudwatch.get_paginator("get_metric_data").paginate(
                MetricDataQueries=queries, StartTime=end - timedelta(minutes=self.window_minutes), EndTime=end
            )
            for page in pages:
                for result in page.get("MetricDataResults", []):
                    values[result["Id"]].extend(float(value) for value in result.get("Values", []))
        return values

    @property
    def where(self) -> str:
        return (
            f"{KPI_NAMESPACE} {ENDPOINT_NAME_DIMENSION}={self.endpoint_name} "
            f"{VARIANT_NAME_DIMENSION}={self.variant_name}, last {self.window_minutes} min"
        )


def check_acceptance_in_cloudwatch(reader: KpiMetricReader, *, deadline: float, timing: Timing) -> StepResult:
    """Pass when a SpecAcceptanceRate datapoint above 0 exists (drafts were accepted)."""
    started = timing.monotonic()
    values = poll_until(
        lambda: reader.read(
            {
                "acceptance": (SPEC_ACCEPTANCE_RATE_METRIC, "Maximum"),
                "length": (SPEC_MEAN_ACCEPTANCE_LENGTH_METRIC, "Maximum"),
            }
        ),
        lambda read: any(value > 0 for value in read["acceptance"]),
        deadline=deadline,
        interval_seconds=METRIC_POLL_SECONDS,
        timing=timing,
    )
    rates, lengths = values["acceptance"], values["length"]
    if any(rate > 0 for rate in rates):
        detail = f"{SPEC_ACCEPTANCE_RATE_METRIC} up to {max(rates):.2f} over {len(rates)} minute(s)"
        if lengths:
            detail += f", {SPEC_MEAN_ACCEPTANCE_LENGTH_METRIC} up to {max(lengths):.2f}"
        return ok(SPECULATION_ON, f"{detail} ({reader.where})")
    waited = f"after waiting {timing.monotonic() - started:.0f} s"
    if rates:
        return fail(
            SPECULATION_ON,
            f"{len(rates)} {SPEC_ACCEPTANCE_RATE_METRIC} datapoint(s), all 0 ({reader.where}, {waited}): drafts are "
            "made but none is accepted; is the drafter the one trained for this target?",
        )
    return fail(
        SPECULATION_ON,
        f"no {SPEC_ACCEPTANCE_RATE_METRIC} datapoint ({reader.where}, {waited}): no drafts reported. If K=0 is "
        "intended pass --expect-speculation off (or --deployment); otherwise see kpi-metrics below",
    )


def check_kpi_reports(reader: KpiMetricReader, *, deadline: float, timing: Timing) -> StepResult:
    """Pass when KpiReports has a datapoint: the container prints KPI lines and the filters match them."""
    started = timing.monotonic()
    values = poll_until(
        lambda: reader.read({"reports": (KPI_REPORTS_METRIC, "Sum")}),
        lambda read: bool(read["reports"]),
        deadline=deadline,
        interval_seconds=METRIC_POLL_SECONDS,
        timing=timing,
    )
    reports = values["reports"]
    if reports:
        return ok(KPI_METRICS, f"{sum(reports):.0f} KPI report(s) in {len(reports)} minute(s) ({reader.where})")
    return fail(
        KPI_METRICS,
        f"no {KPI_REPORTS_METRIC} datapoint ({reader.where}, after waiting {timing.monotonic() - started:.0f} s): "
        "the container prints no peagle_kpi lines, or the metric filters do not match them; read the endpoint's "
        f"log group {reader.log_group}",
    )


# -- alarms-ok --------------------------------------------------------------------------------


def stack_alarms(cloudformation: Any, stack_name: str) -> dict[str, str]:
    """Logical id -> alarm name of every (composite) alarm in ``stack_name``."""
    # ListStackResources, not DescribeStackResources: the latter returns "Only the first 100 resources
    # ... If your stack has more resources than this, you should use ListStackResources instead"
    # (https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DescribeStackResources.html).
    with aws_request(
        f"listing the resources of stack {stack_name} (CloudFormation ListStackResources)",
        permission="cloudformation:ListStackResources",
    ):
        pages = cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack_name)
        return {
            resource["LogicalResourceId"]: resource["PhysicalResourceId"]
            for page in pages
            for resource in page.get("StackResourceSummaries", [])
            if resource["ResourceType"] in ALARM_RESOURCE_TYPES and resource.get("PhysicalResourceId")
        }


def stack_template(cloudformation: Any, stack_name: str) -> StackTemplate:
    """The template ``stack_name`` was last deployed with, as submitted: what each alarm is and whose."""
    from peagle.cloud_assembly import parse_template

    with aws_request(
        f"reading the template of stack {stack_name} (CloudFormation GetTemplate)",
        permission="cloudformation:GetTemplate",
    ):
        # "Original" is the template as submitted (peagle/preflight/deployed.py reads it the same way).
        response = cloudformation.get_template(StackName=stack_name, TemplateStage="Original")
    # botocore hands JSON bodies back parsed, YAML bodies as text (botocore/handlers.py, json_decode_template_body).
    return parse_template(response["TemplateBody"], source=f"stack {stack_name}")


def alarm_states(cloudwatch: Any, alarm_names: list[str]) -> dict[str, tuple[str, str]]:
    """``{alarm name: (StateValue, StateReason)}`` for the alarms that exist."""
    states: dict[str, tuple[str, str]] = {}
    with aws_request("reading alarm states (CloudWatch DescribeAlarms)", permission="cloudwatch:DescribeAlarms"):
        paginator = cloudwatch.get_paginator("describe_alarms")
        for start in range(0, len(alarm_names), DESCRIBE_ALARMS_MAX_NAMES):
            chunk = alarm_names[start : start + DESCRIBE_ALARMS_MAX_NAMES]
            for page in paginator.paginate(AlarmNames=chunk, AlarmTypes=ALARM_TYPES):
                for alarm in page.get("MetricAlarms", []) + page.get("CompositeAlarms", []):
                    states[alarm["AlarmName"]] = (alarm["StateValue"], alarm.get("StateReason", ""))
    return states


def check_alarms(cloudformation: Any, cloudwatch: Any, stack_name: str, endpoint_name: str) -> StepResult:
    """No health alarm of ``endpoint_name`` in ALARM; the stack's scaling alarms and other endpoints' alarms are
    skipped, and named with the reason (peagle/smoke/alarm_scope.py)."""
    from peagle.smoke.alarm_scope import alarm_scope, missing_endpoint

    try:
        alarms = stack_alarms(cloudformation, stack_name)
    except AwsCallError as error:
        if "does not exist" in str(error):
            return fail(ALARMS_OK, f"{error}; pass --stack (the endpoint stack is <deployment name>-endpoint)")
        raise
    if not alarms:
        return skip(ALARMS_OK, f"stack {stack_name} has no alarms (alarms.enabled: false?)")
    template = stack_template(cloudformation, stack_name)
    refused = missing_endpoint(template, endpoint_name, stack_name)
    if refused:
        return fail(ALARMS_OK, refused)
    scope = alarm_scope(template, alarms, endpoint_name)
    states = alarm_states(cloudwatch, list(alarms.values()))
    names = list(scope.judged)
    firing = sorted(name for name in names if states.get(name, ("", ""))[0] == ALARM_STATE)
    waiting = sorted(name for name in names if states.get(name, ("", ""))[0] == INSUFFICIENT_DATA_STATE)
    missing = sorted(name for name in names if name not in states)
    whose = f"of {endpoint_name} in {stack_name}" if scope.note is None else f"in {stack_name} ({scope.note})"
    skipped = _skipped(scope.skipped, states)
    if firing:
        reasons = "; ".join(f"{name}: {_shorten(states[name][1])}" for name in firing)
        return fail(
            ALARMS_OK, f"{len(firing)} of {len(names)} alarm(s) in ALARM: {reasons} (judged: those {whose}){skipped}"
        )
    if not names:
        return skip(ALARMS_OK, f"no health alarm {whose}{skipped}")
    counts = f"{len(names) - len(waiting) - len(missing)} OK"
    if waiting:
        counts += f", {len(waiting)} INSUFFICIENT_DATA (no data yet, usual right after a deploy: {', '.join(waiting)})"
    if missing:
        counts += f"; not found in CloudWatch: {', '.join(missing)}"
    return ok(ALARMS_OK, f"{len(names)} alarm(s) {whose}, none in ALARM: {counts}{skipped}")


def _skipped(skipped: Mapping[str, tuple[str, ...]], states: Mapping[str, tuple[str, str]]) -> str:
    """ "; skipped N: <reason>: name (ALARM), name; ..." for the step line; empty when nothing was skipped."""
    if not skipped:
        return ""
    groups = [
        f"{reason}: "
        + ", ".join(
            f"{name} ({ALARM_STATE})" if states.get(name, ("", ""))[0] == ALARM_STATE else name for name in names
        )
        for reason, names in skipped.items()
    ]
    return f"; skipped {sum(len(names) for names in skipped.values())}: " + "; ".join(groups)


def _shorten(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
