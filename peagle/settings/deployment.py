"""DeploymentConfig: the one settings model both front doors build (the deployment file through
peagle/settings/loading.py, PeagleEndpoint's props through peagle_cdk/settings_model.py), each section validated by
its own module and the sections against each other by peagle/settings/rules.py."""

from __future__ import annotations

from pydantic import model_validator

from peagle.settings import rules
from peagle.settings.sections import DeploymentSections


class DeploymentConfig(DeploymentSections):
    @model_validator(mode="before")
    @classmethod
    def _latency_sla_moved(cls, data: object) -> object:
        return rules.latency_sla_moved(data)

    @model_validator(mode="before")
    @classmethod
    def _copy_bounds_moved(cls, data: object) -> object:
        return rules.copy_bounds_moved(data)

    @model_validator(mode="before")
    @classmethod
    def _components_roll_by_default(cls, data: object) -> object:
        return rules.components_roll_by_default(data)

    @model_validator(mode="after")
    def _across_sections(self) -> DeploymentConfig:
        problems = rules.deployment_problems(self)
        if problems:
            raise ValueError("\n".join(problems))
        return self
