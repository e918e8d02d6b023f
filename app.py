#!/usr/bin/env python3
"""The CDK app: load the deployment config once, create the stacks (PeagleEndpoint plans it, once).

Context keys: deployment (YAML path, default deployments/default.yaml) and the
overrides model, instanceType, instanceCount, speculativeTokens, profile.
"""

import sys

from aws_cdk import App, Environment, Tags, Validations
from cdk_nag import AwsSolutionsChecks, NIST80053R5Checks

from peagle.settings import CONTEXT_OVERRIDES, DEFAULT_DEPLOYMENT_FILE, load_deployment_config
from peagle.settings.errors import PeagleError
from peagle_cdk import RuntimeAccessChecks
from stacks.artifacts_stack import ArtifactsStack
from stacks.endpoint_stack import EndpointStack


def build_app(app: App) -> App:
    deployment_file = app.node.try_get_context("deployment") or DEFAULT_DEPLOYMENT_FILE
    overrides = {key: app.node.try_get_context(key) for key in CONTEXT_OVERRIDES}
    config = load_deployment_config(deployment_file, overrides)
    # Optional: pin both stacks to one account/region (README, context keys); unset = environment-agnostic.
    env = Environment(account=app.node.try_get_context("account"), region=app.node.try_get_context("region"))

    if config.artifacts.s3_uri:
        artifacts_stack = None
    else:
        artifacts_stack = ArtifactsStack(
            app,
            "PeagleArtifacts",
            stack_name=f"{config.name}-artifacts",
            env=env,
            deployment_name=config.name,
            description="P-EAGLE model artifacts bucket (weights staged with `peagle stage`)",
        )
    # Planned once, by the endpoint construct (PeagleEndpoint.from_config), which also checks SageMaker's rules
    # (GPU driver vs image, rollout limits, ...) and raises with every violation before anything synthesizes.
    endpoint_stack = EndpointStack(
        app,
        "PeagleEndpoint",
        stack_name=f"{config.name}-endpoint",
        env=env,
        config=config,
        # kms.Key against IKey: aws-cdk-lib's interface names add_alias's parameter unlike the class (pyproject.toml's
        # [tool.pyright] says why such lines carry an ignore).
        artifacts_key=artifacts_stack.artifacts.key if artifacts_stack else None,  # pyright: ignore[reportArgumentType]
    )
    plan = endpoint_stack.plan
    endpoint_stack.template_options.description = (
        f"P-EAGLE endpoint: {plan.pair_id} on {plan.instance_count} x {plan.instance_type}"
    )
    Tags.of(app).add("project", "peagle-sagemaker")
    Tags.of(app).add("peagle:deployment", config.name)
    # cdk-nag's rule packs, and the runtime-access check: the synth fails if a role may not do what AWS will ask
    # of it once deployed (peagle_cdk/access_checks.py; `peagle access` runs the same check on a cdk.out).
    # RuntimeAccessChecks implements IPolicyValidationPluginBeta1 (its validate() reads the Beta1 context's
    # template_paths, which IPolicyValidationContext does not have); add_plugins is typed with the newer protocol and
    # accepts both when the synth runs (tests/infra synthesize this app with it).
    Validations.of(app).add_plugins(
        AwsSolutionsChecks(app),
        NIST80053R5Checks(app),
        RuntimeAccessChecks(),  # pyright: ignore[reportArgumentType]
    )
    return app


def main() -> None:
    app = App()
    try:
        build_app(app)
    except PeagleError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    app.synth()


if __name__ == "__main__":
    main()
