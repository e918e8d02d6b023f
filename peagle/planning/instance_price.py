"""What an instance-hour of the planned type costs, and where the figure comes from (`peagle plan`, the dashboard's
cost widgets, the cost alarm and `peagle simulate` read it from the plan)."""

from __future__ import annotations

from peagle.catalog import load_catalog
from peagle.settings import DeploymentConfig


def instance_price(config: DeploymentConfig) -> tuple[float, str]:
    """The price per instance-hour of ``instance.type`` and where it comes from: the file's override, a
    custom_instances row, or the catalog (with the region and date its prices were read for)."""
    if config.instance.price_per_hour_usd is not None:
        return config.instance.price_per_hour_usd, "instance.price_per_hour_usd"
    if config.instance.type in config.custom_instances:
        return config.instance_facts().price_per_hour_usd, f"custom_instances.{config.instance.type}"
    catalog = load_catalog()
    facts = config.instance_facts()
    return (
        facts.price_per_hour_usd,
        f"catalog, {catalog.price_region}, prices of {catalog.price_date}"
        + ("" if facts.price_verified else "; this type's price is an unverified estimate"),
    )
