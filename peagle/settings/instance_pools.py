"""The rules of instance pools and ML capacity reservations that look across sections (the fields and their ranges
are peagle/settings/instance.py's; whether each pool type can hold the pair needs its plan:
peagle/planning/pool_plans.py).

SageMaker's page for pools, "Deploy to multiple instance types with instance pools" (SageMaker developer guide,
https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-heterogeneous.html): "you replace the
InstanceType parameter in your production variant with an InstancePools list. Each entry specifies an instance
type and a priority (1 to 5, where 1 is the highest)"; "Instance pools support both real-time and asynchronous
inference endpoints. You can use them with single-model endpoints and with inference components."
"""

from __future__ import annotations

from peagle.catalog import load_catalog
from peagle.settings.refs import setting
from peagle.settings.sections import DeploymentSections


def pool_problems(config: DeploymentSections) -> list[str]:
    """A pool's types against the catalog and each other; what this project does not build with a pool."""
    instance = config.instance
    problems = _type_problems(config)
    components = config.uses_inference_components
    if components and instance.fallback_types:
        # Components take one specification per pool type ("Use the Specifications parameter (plural) to define
        # different model or resource configurations for each instance type", the page above), which
        # peagle_cdk/component_endpoint.py does not build: refused, not faked.
        problems.append(
            f"{setting('instance.fallback_types')} is built for production variants only; in inference_components "
            "mode each pool type needs its own component specification, which this project does not build yet. "
            f"Remove {setting('instance.fallback_types')} or use {setting('endpoint.mode', 'variants')}"
        )
    if components and (instance.provision_timeout_seconds is not None or instance.ml_reservation_arn):
        problems.append(
            f"{setting('instance.provision_timeout_seconds')} and {setting('instance.ml_reservation_arn')} are built "
            f"for production variants only; remove them or use {setting('endpoint.mode', 'variants')}"
        )
    if instance.ml_reservation_arn and instance.fallback_types:
        # "The InstanceType field set in the ProductionVariants section of the CreateEndpointConfig request must
        # match the InstanceType of your training plan" ("Deploy an inference endpoint using the API, AWS CLI",
        # https://docs.aws.amazon.com/sagemaker/latest/dg/use-training-plan-for-inference-endpoints-using-api-cli-sdk.html),
        # and a pool replaces that InstanceType with InstancePools. Whether the two combine is documented nowhere
        # we found: refused rather than guessed.
        problems.append(
            f"{setting('instance.ml_reservation_arn')} with {setting('instance.fallback_types')}: a reservation's "
            "endpoint names its one instance type, which a pool replaces, and SageMaker does not document the two "
            "together; run on the reservation with one type (remove the fallback types), or fall back across types "
            "without it"
        )
    return problems


def _type_problems(config: DeploymentSections) -> list[str]:
    catalog = load_catalog()
    problems = []
    seen = [config.instance.type]
    for name in config.instance.fallback_types:
        if name in seen:
            # CloudFormation's schema does not forbid it (uniqueItems false); a type twice is no fallback.
            problems.append(
                f"{setting('instance.fallback_types')} names {name!r} twice (with {setting('instance.type')}); "
                "each pool type once, in priority order"
            )
        elif name in catalog.excluded_instances:
            problems.append(
                f"{setting('instance.fallback_types')} {name!r} cannot serve: {catalog.excluded_instances[name]}"
            )
        elif name not in catalog.instances and name not in config.custom_instances:
            problems.append(
                f"{setting('instance.fallback_types')} {name!r} is not in the instance catalog; use one of "
                f"{sorted(catalog.instances)}, or give its GPU facts with {setting('custom_instances')}"
            )
        seen.append(name)
    return problems
