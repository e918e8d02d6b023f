"""Catalogs as data: model pairs, instance types, workload profiles.

``load_catalog()`` reads the YAML tables beside this file once and validates them.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

from peagle.catalog.schema import (
    Catalog,
    DrafterModel,
    HostDriver,
    InstanceCatalog,
    InstanceType,
    ModelPair,
    Profile,
    ProfileName,
    Runtime,
    Sampling,
    Slo,
    StrictModel,
    TargetModel,
    cuda_version,
    instance_family,
)

_HERE = Path(__file__).parent

__all__ = [
    "Catalog",
    "DrafterModel",
    "HostDriver",
    "InstanceType",
    "ModelPair",
    "Profile",
    "ProfileName",
    "Runtime",
    "Sampling",
    "Slo",
    "StrictModel",
    "TargetModel",
    "cuda_version",
    "instance_family",
    "load_catalog",
]


def _read_yaml(name: str) -> dict:
    with (_HERE / name).open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    instances = InstanceCatalog.model_validate(_read_yaml("instances.yaml"))
    return Catalog(
        pairs=_read_yaml("pairs.yaml")["pairs"],
        profiles=_read_yaml("profiles.yaml")["profiles"],
        instances=instances.instances,
        runtime=Runtime.model_validate(_read_yaml("runtime.yaml")),
        price_region=instances.price_region,
        price_date=instances.price_date,
        price_source=instances.price_source,
        excluded_instances=instances.excluded,
    )
