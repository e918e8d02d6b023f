"""Where SageMaker caches an inference component's data whatever ``data_cache`` (DataCacheConfig.EnableCaching) says.

CloudFormation's resource schema of AWS::SageMaker::InferenceComponent (cfn-lint 1.58.0's copy,
src/cfnlint/data/schemas/resources/eddb9f584c0b6de8.json), Specification.CurrentDataCacheConfig: "The data caching
configuration actually in effect, including a value the service chose rather than the template: SageMaker enables
caching automatically on instance types with more than 232 GiB of local NVMe storage, whether or not DataCacheConfig
was set. Returned by Describe and not settable; set DataCacheConfig instead." What is cached: "the model artifacts and
container image", in "each instance that it provisions for the inference component. That way, the inference component
deploys faster during the auto scaling process" (SageMaker API Reference, InferenceComponentDataCacheConfig,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentDataCacheConfig.html).

The instance storage sizes are the catalog's (peagle/catalog/instances.yaml, local_nvme_gb: EC2's TotalSizeInGB). EC2
says "in GB" without saying whether a GB is 10^9 or 2^30 bytes, so a size is over 232 GiB only when it is under either
reading (250 GB is 232.8 GiB read as 10^9 bytes), not over when it is not under either, and not checked in between;
an instance type whose size the catalog (or a custom_instances entry) does not give is not checked either.
"""

from __future__ import annotations

from peagle.catalog.schema import InstanceType

FORCED_CACHING_ABOVE_GIB = 232
_BYTES_PER_GB, _BYTES_PER_GIB = 10**9, 2**30


def caching_forced(instance: InstanceType) -> bool | None:
    """True: SageMaker caches a component's data on this type whatever DataCacheConfig says; False: it honours
    EnableCaching false; None: not known (the storage size is unknown, or on the 232 GiB line under one reading)."""
    if not instance.local_nvme:
        return False
    if instance.local_nvme_gb is None:
        return None
    least_gib = instance.local_nvme_gb * _BYTES_PER_GB / _BYTES_PER_GIB
    most_gib = float(instance.local_nvme_gb)
    if least_gib > FORCED_CACHING_ABOVE_GIB:
        return True
    if most_gib <= FORCED_CACHING_ABOVE_GIB:
        return False
    return None


def data_cache_warning(instance_type: str, instance: InstanceType, *, data_cache: bool) -> str | None:
    """What ``data_cache`` false does on ``instance_type`` when SageMaker may not honour it (None when it does, or when
    caching is on anyway). The setting is ``data_cache`` at both doors (the file's endpoint.inference_components
    section, EndpointMode.inference_components's keyword)."""
    if data_cache:
        return None
    forced = caching_forced(instance)
    if forced is False:
        return None
    if forced is None:
        size = (
            "its local NVMe storage size is not known here"
            if instance.local_nvme_gb is None
            else (
                f"its {instance.local_nvme_gb} GB of local NVMe storage is on the {FORCED_CACHING_ABOVE_GIB} GiB line "
                "(EC2 does not say whether its GB is 10^9 or 2^30 bytes)"
            )
        )
        return (
            f"data_cache false on {instance_type} is not checked: SageMaker caches a component's data on "
            f"instance types with more than {FORCED_CACHING_ABOVE_GIB} GiB of local NVMe storage whatever "
            f"DataCacheConfig says, and {size}; read the component's CurrentDataCacheConfig after the deploy "
            "(DescribeInferenceComponent) to see what is in effect"
        )
    return (
        f"data_cache false is not honoured on {instance_type}: it has {instance.local_nvme_gb} GB of local "
        f"NVMe storage, more than {FORCED_CACHING_ABOVE_GIB} GiB, where SageMaker caches a component's model "
        "artifacts and container image on each instance whatever DataCacheConfig says (CloudFormation schema of "
        "AWS::SageMaker::InferenceComponent, CurrentDataCacheConfig). The template still says EnableCaching false; "
        "a copy added on an instance that has hosted one can start from the cache there (`peagle simulate` counts it "
        "so), and CloudFormation reads caching on back (CurrentDataCacheConfig). To keep data uncached, use an instance type with "
        f"at most {FORCED_CACHING_ABOVE_GIB} GiB of local NVMe storage; otherwise drop data_cache: false, which "
        "changes nothing here"
    )
