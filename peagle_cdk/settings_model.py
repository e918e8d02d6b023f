"""Where the construct library meets the project's one settings model, and nowhere else.

A deployment file and PeagleEndpoint's props are two front doors to one validated model,
peagle.config.DeploymentConfig: the file is parsed into it, the props become it
(peagle_cdk/endpoint_config.py), and both are planned from it once. The library needs three things
from that model, all here:

- ``DEFAULTS``: the defaults of every setting, written once (in peagle/config.py); the props' defaults
  are read from it, so a prop and its file key can never default differently;
- ``DeploymentConfig`` and ``parse_deployment_config``: what the props become and the validation they
  share with the file (bounds, cross-field rules, and their messages, which peagle_cdk/prop_errors.py
  words in props);
- the value types a prop takes whole, the same objects a file's section holds: ``MeasuredCapacity``
  (what `peagle capacity` writes), ``ProfileOverrides`` and ``SloSettings`` (every field optional, None:
  the profile's);
- ``ECR_IMAGE``: what the file accepts as an ECR image reference (image.base_mirror), which
  ``BaseImage.mirror_uri`` parses.

No other module of peagle_cdk imports peagle.config: the scaling code reads the plan
(``Plan.autoscaling``, ``Plan.scaling``), the monitoring its AlarmThresholds.
"""

from __future__ import annotations

from peagle.config import (
    ECR_IMAGE,
    DeploymentConfig,
    MeasuredCapacity,
    ProfileOverrides,
    SloSettings,
    parse_deployment_config,
)

DEFAULTS = DeploymentConfig()

__all__ = [
    "DEFAULTS",
    "ECR_IMAGE",
    "DeploymentConfig",
    "MeasuredCapacity",
    "ProfileOverrides",
    "SloSettings",
    "parse_deployment_config",
]
