"""What the in-account image build (peagle_cdk/serving_image_build.py) must be able to do at runtime.

Part of the runtime-access check's needs (peagle.access.requirements, whose docstring quotes the sources for the
build's pushes and pulls): the CodeBuild role reads the build context, pulls the base and pushes the image; the
handler (peagle_cdk/image_build_handler/) asks ECR for the tag, finds, starts and watches the build on the project
(codebuild:ListBuildsForProject, BatchGetBuilds, StartBuild: "Resource: arn:aws:codebuild:region-ID:account-ID:
project/project-name", CodeBuild User Guide, "AWS CodeBuild permissions reference"), and hands its watch on by
invoking itself (lambda:InvokeFunction, allowed by the function's own resource policy); with a pull-through cache
of the stack's, ECR creates the cache's repositories with the creation template's role (ecr:CreateRepository under
the rule's prefix, peagle_cdk/serving_image_cache.py). The KMS grants that role makes on ECR's AWS managed key are not
checked here: that key and its policy are AWS's, not in the templates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from peagle.access.need import ECR_IMAGE, ECR_PULL, ECR_PUSH, HTTPS, S3_URI, Need, in_stack
from peagle.cloud_assembly import Assembly, AssemblyStack


def build_needs(assembly: Assembly, stack: AssemblyStack) -> list[Need]:
    """Every need of the stack's serving image builds, in template order."""
    needs: list[Need] = []
    for logical_id, build in stack.resources("Custom::PeagleServingImageBuild").items():
        needs += _build_needs(assembly, stack, logical_id, build)
    return needs


def _build_needs(assembly: Assembly, stack: AssemblyStack, logical_id: str, build: Mapping[str, Any]) -> list[Need]:
    properties = build.get("Properties", {})
    project = assembly.find_resource(stack, properties.get("ProjectName"))
    handler = assembly.find_resource(stack, properties.get("ServiceToken"))
    if project is None or handler is None:
        return []
    project_props = project[0].template["Resources"][project[1]]["Properties"]
    builder = project_props["ServiceRole"]
    repository_name = assembly.resolve(stack, properties.get("RepositoryName"))
    repository_arn = in_stack(stack, f"arn:aws:ecr:${{AWS::Region}}:${{AWS::AccountId}}:repository/{repository_name}")
    repository = assembly.find_resource(stack, properties.get("RepositoryName"))
    why = f"the image build {logical_id}"
    needs = [Need(stack, builder, "ecr:GetAuthorizationToken", "*", f"{why} logs in to ECR", "build")]
    needs += [
        Need(stack, builder, action, repository_arn, f"{why} pushes its image", "build", resource_in=repository)
        for action in ECR_PUSH
    ]
    source = S3_URI.match(assembly.resolve(stack, properties.get("SourceS3Url")) or "")
    if source is not None:
        context = f"arn:aws:s3:::{source['bucket']}/{source['key']}"
        needs.append(
            Need(stack, builder, "s3:GetObject", context, f"{why} reads its build context", "build", dict(HTTPS))
        )
    needs += _base_needs(assembly, stack, builder, why, assembly.resolve(stack, properties.get("BaseImage")) or "")
    group = assembly.resolve(
        stack, ((project_props.get("LogsConfig") or {}).get("CloudWatchLogs") or {}).get("GroupName")
    )
    if group:
        stream = in_stack(
            stack, f"arn:aws:logs:${{AWS::Region}}:${{AWS::AccountId}}:log-group:{group}:log-stream:build"
        )
        needs += [
            Need(stack, builder, action, stream, f"{why} writes its log", "build")
            for action in ("logs:CreateLogStream", "logs:PutLogEvents")
        ]
    function = handler[0].template["Resources"][handler[1]]["Properties"]
    runner = function["Role"]
    project_arn = assembly.resolve(project[0], {"Fn::GetAtt": [project[1], "Arn"]}) or "${?unresolved}"
    needs += [
        Need(
            stack, runner, "ecr:DescribeImages", repository_arn, f"{why}'s handler asks whether the tag exists", "build"
        ),
        Need(
            stack,
            runner,
            "codebuild:ListBuildsForProject",
            project_arn,
            f"{why}'s handler looks for a running build of the image",
            "build",
        ),
        Need(stack, runner, "codebuild:StartBuild", project_arn, f"{why}'s handler starts the build", "build"),
        Need(stack, runner, "codebuild:BatchGetBuilds", project_arn, f"{why}'s handler watches the build", "build"),
    ]
    function_arn = assembly.resolve(handler[0], {"Fn::GetAtt": [handler[1], "Arn"]}) or "${?unresolved}"
    needs.append(
        Need(
            stack,
            runner,
            "lambda:InvokeFunction",
            function_arn,
            f"{why}'s handler hands its watch to a new invocation of itself",
            "build",
            resource_in=handler,
        )
    )
    return needs + _cache_repository_needs(assembly, stack, assembly.resolve(stack, properties.get("BaseImage")) or "")


def _base_needs(assembly: Assembly, stack: AssemblyStack, builder: Any, why: str, base: str) -> list[Need]:
    found = ECR_IMAGE.match(base)
    if found is None:
        return []  # Docker Hub, anonymously: nothing to grant
    repository = found["repository"]
    arn = f"arn:aws:ecr:{found['region']}:{found['account']}:repository/{repository}"
    needs = [Need(stack, builder, action, arn, f"{why} pulls its base {base}", "build") for action in ECR_PULL]
    cached = any(
        repository.startswith((assembly.resolve(rule_stack, rule["Properties"].get("EcrRepositoryPrefix")) or "") + "/")
        for rule_stack in assembly.stacks
        for rule in rule_stack.resources("AWS::ECR::PullThroughCacheRule").values()
    )
    if cached:  # through a pull-through cache: the first pull imports the upstream image into a new repository
        needs += [
            Need(stack, builder, action, arn, f"{why} pulls its base through the pull-through cache", "build")
            for action in ("ecr:BatchImportUpstreamImage", "ecr:CreateRepository")
        ]
    return needs


def _cache_repository_needs(assembly: Assembly, stack: AssemblyStack, base: str) -> list[Need]:
    """ECR creates the repository the base is cached in with the creation role of the template for its prefix."""
    found = ECR_IMAGE.match(base)
    if found is None:
        return []
    repository = found["repository"]
    arn = f"arn:aws:ecr:{found['region']}:{found['account']}:repository/{repository}"
    needs = []
    for template_id, template in stack.resources("AWS::ECR::RepositoryCreationTemplate").items():
        properties = template.get("Properties", {})
        prefix = assembly.resolve(stack, properties.get("Prefix")) or ""
        role = properties.get("CustomRoleArn")
        if role is None or "PULL_THROUGH_CACHE" not in properties.get("AppliedFor", []):
            continue
        if repository.startswith(prefix.rstrip("/") + "/"):
            why = f"ECR creates the cache repository of {base} with the role of {template_id}"
            needs.append(Need(stack, role, "ecr:CreateRepository", arn, why, "build"))
    return needs
