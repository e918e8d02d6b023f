"""The serving image's two paths (peagle_cdk/serving_image_build.py): built in the account during `cdk deploy`
(the YAML app's default: no Docker image asset, a CodeBuild build from the pinned base, the Model on the built
tag), or built by the local Docker (image.build: local_docker, the 0.1.0 templates); where the build pulls the
base from (Docker Hub, a pull-through cache, a mirror); what the stack's one builder shares between endpoints;
the tag, the lifecycle and the time budget that make deploys and rollbacks safe; bad input; what preflight says
of a switch. What the build's handler and build spec do at deploy time: tests/infra/test_image_build_runtime.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk.assertions import Template
from cdk_synth import REPO_ROOT, write_deployment

from peagle.access.policy_eval import Policy, Request, evaluate
from peagle.cloud_assembly import StackTemplate
from peagle.preflight.rules import CheckContext, Severity, check_transition
from peagle.settings import parse_deployment_config
from peagle.settings.errors import ConfigError
from peagle_cdk import ModelWeights, PeagleEndpoint
from peagle_cdk.endpoint_props import INFERENCE_IMAGE_DIR, ServingImage
from peagle_cdk.serving_image_build import (
    BUILD_TIMEOUT,
    CUSTOM_RESOURCE_TYPE,
    HANDLER_TIMEOUT,
    QUEUED_TIMEOUT,
    SERVICE_TIMEOUT,
    WATCH_BUDGET,
    WATCH_SECONDS_VARIABLE,
    BaseImage,
    image_tag,
)

IMAGE_CONTEXT = REPO_ROOT / "inference_image"
SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:ecr-pullthroughcache/docker-hub-AbCdEf"
MIRROR = "123456789012.dkr.ecr.us-east-1.amazonaws.com/mirrors/vllm-openai:v0.32.0"
BUILDER_ROLE_POLICY = "PeagleServingImagesProjectRoleDefaultPolicy"
LAMBDA = "AWS::Lambda::Function"


def _assets(result) -> dict:
    return json.loads((result.outdir / "PeagleEndpoint.assets.json").read_text())


def _one(resources: dict, resource_type: str) -> tuple[str, dict]:
    (item,) = {k: v for k, v in resources.items() if v["Type"] == resource_type}.items()
    return item


def _resources(result) -> dict:
    return result.templates["PeagleEndpoint"]["Resources"]


def _build_role_statements(resources: dict) -> list[dict]:
    return [
        statement
        for name, resource in resources.items()
        if resource["Type"] == "AWS::IAM::Policy" and name.startswith(BUILDER_ROLE_POLICY)
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
    ]


@pytest.fixture(scope="module")
def local_docker(synth, tmp_path_factory):
    return synth(deployment=write_deployment(tmp_path_factory.mktemp("local"), "image:\n  build: local_docker\n"))


# --- the default: built in the account ------------------------------------------------------------


def test_the_default_deploy_uploads_the_build_context_and_no_docker_image(default_synth):
    assets = _assets(default_synth)
    assert assets.get("dockerImages", {}) == {}  # `cdk deploy` runs no Docker
    contexts = [
        default_synth.outdir / asset["source"]["path"]
        for asset in assets["files"].values()
        if (default_synth.outdir / asset["source"]["path"] / "Dockerfile").is_file()
    ]
    (context,) = contexts
    launcher = sorted(path.name for path in (IMAGE_CONTEXT / "peagle_serve").glob("*.py"))
    # The whole launcher goes up (.dockerignore read as Docker reads it; as glob patterns it uploaded the Dockerfile alone).
    assert sorted(path.name for path in (context / "peagle_serve").glob("*.py")) == launcher
    assert (context / "Dockerfile").read_bytes() == (IMAGE_CONTEXT / "Dockerfile").read_bytes()
    size = sum(path.stat().st_size for path in context.rglob("*") if path.is_file())
    assert size < 1_000_000, f"build context {size} bytes"


def test_the_model_runs_the_tag_the_build_reports_so_the_endpoint_waits_for_the_build(default_synth):
    resources = _resources(default_synth)
    build_id, build = _one(resources, CUSTOM_RESOURCE_TYPE)
    repository_id, _ = _one(resources, "AWS::ECR::Repository")
    _, model = _one(resources, "AWS::SageMaker::Model")
    image = json.dumps(model["Properties"]["PrimaryContainer"]["Image"])
    assert f'["{build_id}", "ImageTag"]' in image and f'"Ref": "{repository_id}"' in image
    assert build["Properties"]["BaseImage"] == ""  # Docker Hub: the Dockerfile's pinned default
    assert build["Properties"]["ImageTag"] == image_tag(
        INFERENCE_IMAGE_DIR, _dockerignore_lines(), "vllm/vllm-openai:v0.32.0"
    )


def _dockerignore_lines() -> list[str]:
    return [line for line in (IMAGE_CONTEXT / ".dockerignore").read_text().splitlines() if line.strip()]


def test_the_same_context_gives_the_same_tag_and_a_changed_file_a_new_one(tmp_path):
    exclude = _dockerignore_lines()
    first = image_tag(INFERENCE_IMAGE_DIR, exclude, "vllm/vllm-openai:v0.32.0")
    assert image_tag(INFERENCE_IMAGE_DIR, exclude, "vllm/vllm-openai:v0.32.0") == first
    copy = shutil.copytree(IMAGE_CONTEXT, tmp_path / "context", ignore=shutil.ignore_patterns("__pycache__"))
    assert image_tag(copy, exclude, "vllm/vllm-openai:v0.32.0") == first  # where it lies does not matter
    (copy / "notes.txt").write_text("ignored by .dockerignore: not in the image\n")
    assert image_tag(copy, exclude, "vllm/vllm-openai:v0.32.0") == first
    launcher = copy / "peagle_serve" / "launcher.py"
    launcher.write_text(launcher.read_text() + "\n# changed\n")
    assert image_tag(copy, exclude, "vllm/vllm-openai:v0.32.0") != first
    assert image_tag(INFERENCE_IMAGE_DIR, exclude, MIRROR) != first  # another base, another image


def test_two_synths_of_the_same_app_name_the_same_image(default_synth, tmp_path):
    from cdk_synth import synthesize

    again = synthesize(tmp_path / "cdk.out")
    tags = [
        _one(_resources(result), CUSTOM_RESOURCE_TYPE)[1]["Properties"]["ImageTag"] for result in (default_synth, again)
    ]
    assert tags[0] == tags[1] and tags[0].startswith("peagle-")


def test_the_build_runs_privileged_on_a_medium_codebuild_host_and_is_answered_within_cloudformations_hour(
    default_synth,
):
    resources = _resources(default_synth)
    _, project = _one(resources, "AWS::CodeBuild::Project")
    properties = project["Properties"]
    environment = properties["Environment"]
    assert (environment["ComputeType"], environment["PrivilegedMode"]) == ("BUILD_GENERAL1_MEDIUM", True)
    assert (properties["TimeoutInMinutes"], properties["QueuedTimeoutInMinutes"]) == (45, 10)
    _, build = _one(resources, CUSTOM_RESOURCE_TYPE)
    service_timeout = int(build["Properties"]["ServiceTimeout"])
    _, handler = _one({k: v for k, v in resources.items() if k.startswith("PeagleServingImagesHandler")}, LAMBDA)
    watch = int(handler["Properties"]["Environment"]["Variables"][WATCH_SECONDS_VARIABLE])
    # CodeBuild ends every build before the handler's watch does, and the handler answers before CloudFormation
    # gives up, both within its 3600 s ceiling.
    assert (QUEUED_TIMEOUT.to_minutes() + BUILD_TIMEOUT.to_minutes() + 1) * 60 < watch < service_timeout <= 3600
    assert (watch, service_timeout) == (WATCH_BUDGET.to_seconds(), SERVICE_TIMEOUT.to_seconds())
    # Each invocation watches at most Lambda's 900 s; the chain of invocations stays far below the 16 at which
    # Lambda stops a recursive chain.
    assert handler["Properties"]["Timeout"] == HANDLER_TIMEOUT.to_seconds() == 900
    assert watch / (900 - 60 - 20) + 1 < 16


def test_the_builds_logs_are_kept_three_months_and_outlive_a_rolled_back_stack(default_synth):
    resources = _resources(default_synth)
    _, project = _one(resources, "AWS::CodeBuild::Project")
    group_id = project["Properties"]["LogsConfig"]["CloudWatchLogs"]["GroupName"]["Ref"]
    group = resources[group_id]
    assert group["Properties"]["RetentionInDays"] == 90
    assert group["DeletionPolicy"] == "Retain"


def test_the_handler_watches_the_build_itself_and_no_event_rule_is_needed(default_synth):
    resources = _resources(default_synth)
    assert not [r for r in resources.values() if r["Type"] == "AWS::Events::Rule"]
    handler_id, _ = _one({k: v for k, v in resources.items() if k.startswith("PeagleServingImagesHandler")}, LAMBDA)
    project_id, _ = _one(resources, "AWS::CodeBuild::Project")
    (policy,) = [r for k, r in resources.items() if k.startswith("PeagleServingImagesHandlerServiceRoleDefaultPolicy")]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    (codebuild,) = [s for s in statements if "codebuild:StartBuild" in s["Action"]]
    assert sorted(codebuild["Action"]) == [
        "codebuild:BatchGetBuilds",
        "codebuild:ListBuildsForProject",
        "codebuild:StartBuild",
    ]
    assert codebuild["Resource"] == {"Fn::GetAtt": [project_id, "Arn"]}
    # The watch hands itself on: the function's resource policy lets its own role invoke it.
    permission_id, permission = _one(resources, "AWS::Lambda::Permission")
    handler_role = resources[handler_id]["Properties"]["Role"]
    assert permission["Properties"] == {
        "Action": "lambda:InvokeFunction",
        "FunctionName": {"Fn::GetAtt": [handler_id, "Arn"]},
        "Principal": handler_role,
    }
    _, build = _one(resources, CUSTOM_RESOURCE_TYPE)
    policy_id = next(name for name in resources if name.startswith(BUILDER_ROLE_POLICY))
    # The build starts only once the build role's grants and the hand-off permission exist (the handler and the
    # project are referenced by its properties).
    assert {permission_id, policy_id} <= set(build["DependsOn"])
    assert build["Properties"]["ServiceToken"] == {"Fn::GetAtt": [handler_id, "Arn"]}
    assert not {"ResponseURL", "ResponseUrl", "StackId", "RequestId"} & set(build["Properties"])


def test_codebuild_may_assume_the_build_role_for_this_stacks_project_only():
    stack, weights = _stack()
    PeagleEndpoint(stack, "Chat", name="chat", weights=weights)
    resources = Template.from_stack(stack).to_json()["Resources"]
    _, project = _one(resources, "AWS::CodeBuild::Project")
    role = resources[project["Properties"]["ServiceRole"]["Fn::GetAtt"][0]]
    (trust,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    document = _pseudo_resolved({"Statement": [trust]})
    project_arn = f"arn:aws:codebuild:us-east-1:123456789012:project/{project['Properties']['Name']}"
    assert project["Properties"]["Name"] == "Images-serving-images"  # the name the ARN is built from, not a Ref
    assert document["Statement"][0]["Condition"] == {
        "StringEqualsIfExists": {"aws:SourceAccount": "123456789012"},
        "ArnLikeIfExists": {"aws:SourceArn": project_arn},
    }

    def assumes(source_arn: str | None, account: str | None = "123456789012") -> bool:
        context = {"aws:SourceArn": source_arn, "aws:SourceAccount": account}
        context = {key: value for key, value in context.items() if value is not None}
        request = Request("codebuild.amazonaws.com", "sts:AssumeRole", "arn:aws:iam::123456789012:role/x", context)
        return evaluate(request, (), Policy("trust policy of the build role", document)).allowed

    assert assumes(project_arn)
    assert not assumes(project_arn.replace("Images-serving-images", "other-project"))
    assert not assumes(project_arn.replace("123456789012", "210987654321"), account="210987654321")
    # A request without the keys is not refused: the build must never fail for a key CodeBuild did not send.
    assert assumes(None, account=None)


def _pseudo_resolved(value: Any) -> Any:
    """The template's pseudo parameters and joins as CloudFormation resolves them in us-east-1, 123456789012."""
    pseudo = {"AWS::Partition": "aws", "AWS::AccountId": "123456789012", "AWS::Region": "us-east-1"}
    if isinstance(value, dict) and set(value) == {"Ref"} and value["Ref"] in pseudo:
        return pseudo[value["Ref"]]
    if isinstance(value, dict) and set(value) == {"Fn::Join"}:
        separator, parts = value["Fn::Join"]
        return separator.join(_pseudo_resolved(part) for part in parts)
    if isinstance(value, dict):
        return {key: _pseudo_resolved(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_pseudo_resolved(item) for item in value]
    return value


def test_the_repository_keeps_every_tagged_image_and_never_moves_a_tag(default_synth):
    _, repository = _one(_resources(default_synth), "AWS::ECR::Repository")
    properties = repository["Properties"]
    assert properties["ImageScanningConfiguration"] == {"ScanOnPush": True}
    assert properties["EncryptionConfiguration"] == {"EncryptionType": "KMS"}
    assert properties["ImageTagMutability"] == "IMMUTABLE"
    (rule,) = json.loads(properties["LifecyclePolicy"]["LifecyclePolicyText"])["rules"]
    assert rule["selection"]["tagStatus"] == "untagged"  # a deployed Model's tag is never selected


def test_the_build_role_pushes_only_to_its_repository_and_reads_only_its_context(default_synth):
    resources = _resources(default_synth)
    repository_id, _ = _one(resources, "AWS::ECR::Repository")
    statements = _build_role_statements(resources)
    pushes = [s for s in statements if "ecr:PutImage" in s["Action"]]
    assert [s["Resource"] for s in pushes] == [{"Fn::GetAtt": [repository_id, "Arn"]}]
    reads = [s for s in statements if "s3:GetObject" in json.dumps(s["Action"])]
    (read,) = reads
    assert read["Action"] == "s3:GetObject" and read["Resource"]["Fn::Join"][1][-1].endswith(".zip")
    _, build = _one(resources, CUSTOM_RESOURCE_TYPE)
    assert read["Resource"]["Fn::Join"][1][-1].lstrip("/") in build["Properties"]["SourceS3Url"]["Fn::Sub"]
    assert not [s for s in statements if s["Effect"] == "Deny"]  # reads are allowed per object, nothing to deny


def test_the_synth_says_where_the_build_pulls_the_base_from(default_synth):
    manifest = json.loads((default_synth.outdir / "manifest.json").read_text())
    metadata = {}
    for artifact in manifest["artifacts"].values():
        metadata.update(artifact.get("metadata", {}))
        if "additionalMetadataFile" in artifact:
            metadata.update(json.loads((default_synth.outdir / artifact["additionalMetadataFile"]).read_text()))
    infos = [entry["data"] for entries in metadata.values() for entry in entries if entry["type"] == "aws:cdk:info"]
    assert any("pulling vllm/vllm-openai:v0.32.0 from Docker Hub anonymously" in info for info in infos), infos


# --- the local-Docker path --------------------------------------------------------------------------


def test_local_docker_keeps_the_docker_image_asset_and_builds_nothing_in_the_account(local_docker):
    assert len(_assets(local_docker)["dockerImages"]) == 1
    assert local_docker.resources("PeagleEndpoint", "AWS::CodeBuild::Project") == {}
    assert local_docker.resources("PeagleEndpoint", CUSTOM_RESOURCE_TYPE) == {}


# --- where the base comes from ----------------------------------------------------------------------


def test_a_pull_through_cache_pulls_the_base_with_your_docker_hub_credentials(synth, tmp_path):
    result = synth(deployment=write_deployment(tmp_path, f"image:\n  pull_through_cache_secret_arn: {SECRET}\n"))
    resources = _resources(result)
    rule_id, rule = _one(resources, "AWS::ECR::PullThroughCacheRule")
    prefix = rule["Properties"]["EcrRepositoryPrefix"]
    assert rule["Properties"] == {
        "CredentialArn": SECRET,
        "EcrRepositoryPrefix": prefix,
        "UpstreamRegistry": "docker-hub",
        "UpstreamRegistryUrl": "registry-1.docker.io",
    }
    assert prefix.startswith("peagle-hub-") and 2 <= len(prefix) <= 30
    _, build = _one(resources, CUSTOM_RESOURCE_TYPE)
    assert f"/{prefix}/vllm/vllm-openai:v0.32.0" in json.dumps(build["Properties"]["BaseImage"])
    assert rule_id in build["DependsOn"]  # a first deploy creates the rule before the build pulls through it
    (imports,) = [s for s in _build_role_statements(resources) if "ecr:BatchImportUpstreamImage" in s["Action"]]
    assert f"repository/{prefix}/*" in json.dumps(imports["Resource"])
    # The same image as pulled from Docker Hub: a switch to the cache changes no tag and builds nothing.
    assert build["Properties"]["ImageTag"] == image_tag(
        INFERENCE_IMAGE_DIR, _dockerignore_lines(), "vllm/vllm-openai:v0.32.0"
    )


def test_the_caches_repositories_get_a_lifecycle_and_the_stacks_encryption_from_a_creation_template(synth, tmp_path):
    result = synth(deployment=write_deployment(tmp_path, f"image:\n  pull_through_cache_secret_arn: {SECRET}\n"))
    resources = _resources(result)
    _, rule = _one(resources, "AWS::ECR::PullThroughCacheRule")
    template_id, template = _one(resources, "AWS::ECR::RepositoryCreationTemplate")
    properties = template["Properties"]
    # The rule's prefix, for the repositories ECR creates at the first pull through it.
    assert properties["Prefix"] == rule["Properties"]["EcrRepositoryPrefix"]
    assert properties["AppliedFor"] == ["PULL_THROUGH_CACHE"]
    _, repository = _one(resources, "AWS::ECR::Repository")
    assert properties["EncryptionConfiguration"] == repository["Properties"]["EncryptionConfiguration"]
    (lifecycle_rule,) = json.loads(properties["LifecyclePolicy"])["rules"]
    # One rule, on what no build pulled for 30 days: an image a build pulls is never selected while it is needed.
    assert lifecycle_rule["selection"] == {
        "tagStatus": "any",
        "countType": "sinceImagePulled",
        "countUnit": "days",
        "countNumber": 30,
    }
    assert lifecycle_rule["action"] == {"type": "expire"}
    # KMS in a template needs a role of the account's own, which ECR assumes: it may create under the prefix only.
    role_id = properties["CustomRoleArn"]["Fn::GetAtt"][0]
    (trust,) = resources[role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "ecr.amazonaws.com"}
    (policy,) = [
        r
        for r in resources.values()
        if r["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in r["Properties"]["Roles"]
    ]
    statements = {
        " ".join(sorted(s["Action"] if isinstance(s["Action"], list) else [s["Action"]])): s["Resource"]
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    }
    assert f"repository/{properties['Prefix']}/*" in json.dumps(statements["ecr:CreateRepository"])
    assert set(statements) == {"ecr:CreateRepository", "kms:CreateGrant kms:DescribeKey kms:RetireGrant"}
    _, build = _one(resources, CUSTOM_RESOURCE_TYPE)
    assert template_id in build["DependsOn"]  # the first pull creates the repository: the template is there first


def test_the_pull_through_cache_variant_passes_cdk_nag_and_cfn_lint(synth, tmp_path):
    """The example deployments pull from Docker Hub (tests/infra/test_app_checks.py checks them): the cache's rule,
    creation template and role go through the same checks here."""
    result = synth(deployment=write_deployment(tmp_path, f"image:\n  pull_through_cache_secret_arn: {SECRET}\n"))
    report = json.loads((result.outdir / "validation-report.json").read_text())
    nag = [
        v
        for plugin in report.get("pluginReports", [])
        for v in plugin["violations"]
        if "cdk-nag" in plugin.get("pluginName", "").lower() or v["ruleName"].startswith(("AwsSolutions", "NIST"))
    ]
    assert nag == []
    templates = sorted(str(path) for path in result.outdir.glob("*.template.json"))
    lint = subprocess.run([str(Path(sys.executable).parent / "cfn-lint"), *templates], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_a_new_secret_makes_a_new_rule_under_a_new_prefix(synth, tmp_path):
    prefixes = []
    for index, secret in enumerate((SECRET, SECRET.replace("AbCdEf", "XyZ123"))):
        (tmp_path / str(index)).mkdir()
        path = write_deployment(tmp_path / str(index), f"image:\n  pull_through_cache_secret_arn: {secret}\n")
        resources = _resources(synth(deployment=path))
        _, rule = _one(resources, "AWS::ECR::PullThroughCacheRule")
        _, creation = _one(resources, "AWS::ECR::RepositoryCreationTemplate")
        assert creation["Properties"]["Prefix"] == rule["Properties"]["EcrRepositoryPrefix"]
        prefixes.append(rule["Properties"]["EcrRepositoryPrefix"])
    # Every property of the rule is create-only and its prefix is its identity: a new secret under the old
    # prefix would be created before the old rule is deleted, and fail on it.
    assert prefixes[0] != prefixes[1]


def test_an_existing_cache_rule_is_used_and_none_is_made(synth, tmp_path):
    result = synth(deployment=write_deployment(tmp_path, "image:\n  pull_through_cache_prefix: team-hub\n"))
    resources = _resources(result)
    assert not [r for r in resources.values() if r["Type"] == "AWS::ECR::PullThroughCacheRule"]
    # Nor a creation template: its prefix is its identity in the registry, and the rule (and any template for it) is
    # yours; docs/deployment.md says how to clean its repositories up.
    assert not [r for r in resources.values() if r["Type"] == "AWS::ECR::RepositoryCreationTemplate"]
    _, build = _one(resources, CUSTOM_RESOURCE_TYPE)
    assert "/team-hub/vllm/vllm-openai:v0.32.0" in json.dumps(build["Properties"]["BaseImage"])
    (imports,) = [s for s in _build_role_statements(resources) if "ecr:BatchImportUpstreamImage" in s["Action"]]
    assert "repository/team-hub/*" in json.dumps(imports["Resource"])


def test_a_mirror_is_pulled_from_your_repository(synth, tmp_path):
    result = synth(deployment=write_deployment(tmp_path, f"image:\n  base_mirror: {MIRROR}\n"))
    resources = _resources(result)
    _, build = _one(resources, CUSTOM_RESOURCE_TYPE)
    assert build["Properties"]["BaseImage"] == MIRROR
    (pull,) = [
        s
        for s in _build_role_statements(resources)
        if s["Action"] == ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]
        and "mirrors" in json.dumps(s["Resource"])
    ]
    assert pull["Resource"] == {
        "Fn::Join": [
            "",
            ["arn:", {"Ref": "AWS::Partition"}, ":ecr:us-east-1:123456789012:repository/mirrors/vllm-openai"],
        ]
    }
    assert result.resources("PeagleEndpoint", "AWS::ECR::PullThroughCacheRule") == {}


# --- several endpoints in one stack ------------------------------------------------------------------


def _stack(region: str = "us-east-1") -> tuple[Stack, ModelWeights]:
    stack = Stack(App(), "Images", env=Environment(account="123456789012", region=region))
    return stack, ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/gpt-oss-20b/")


def test_endpoints_on_one_context_share_one_build_and_one_cache_rule(tmp_path):
    stack, weights = _stack()
    secret = secretsmanager.Secret.from_secret_complete_arn(stack, "DockerHub", SECRET)
    base = BaseImage.pull_through_cache(secret)
    for id in ("Chat", "Code"):
        PeagleEndpoint(stack, id, name=id.lower(), weights=weights, image=ServingImage.build_in_account(base=base))
    own = shutil.copytree(IMAGE_CONTEXT, tmp_path / "own", ignore=shutil.ignore_patterns("__pycache__"))
    (own / "Dockerfile").write_text((own / "Dockerfile").read_text() + "\nLABEL team=search\n")
    PeagleEndpoint(
        stack, "Search", name="search", weights=weights, image=ServingImage.build_in_account(base=base, directory=own)
    )
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::ECR::PullThroughCacheRule", 1)
    template.resource_count_is("AWS::ECR::RepositoryCreationTemplate", 1)
    template.resource_count_is("AWS::CodeBuild::Project", 1)
    template.resource_count_is("AWS::ECR::Repository", 1)
    builds = template.find_resources(CUSTOM_RESOURCE_TYPE)
    assert len(builds) == 2  # Chat and Code share one; Search has a context of its own
    assert len({build["Properties"]["ImageTag"] for build in builds.values()}) == 2
    models = template.find_resources("AWS::SageMaker::Model")
    images = sorted(json.dumps(model["Properties"]["PrimaryContainer"]["Image"]) for model in models.values())
    assert len(set(images)) == 2 and len(images) == 3
    statements = _build_role_statements(template.to_json()["Resources"])
    reads = [s for s in statements if s["Action"] == "s3:GetObject"]
    assert len(reads) == 2 and not [s for s in statements if s["Effect"] == "Deny"]


def test_a_second_prefix_for_the_same_secret_in_one_stack_is_refused():
    stack, weights = _stack()
    PeagleEndpoint(
        stack,
        "Chat",
        name="chat",
        weights=weights,
        image=ServingImage.build_in_account(base=BaseImage.pull_through_cache(SECRET)),
    )
    with pytest.raises(ValueError, match="this stack's cache rule for that secret has the prefix 'peagle-hub-"):
        PeagleEndpoint(
            stack,
            "Code",
            name="code",
            weights=weights,
            image=ServingImage.build_in_account(base=BaseImage.pull_through_cache(SECRET, repository_prefix="hub")),
        )


# --- bad input ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ({"build": "podman"}, r"image\.build: Input should be 'in_account' or 'local_docker' \(given: 'podman'\)"),
        (
            {"pull_through_cache_secret_arn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:dockerhub"},
            r"is not the ARN of a Secrets Manager secret named ecr-pullthroughcache/",
        ),
        ({"base_mirror": "vllm/vllm-openai:v0.32.0"}, r"is not an ECR image reference; give <account>\.dkr\.ecr\."),
        ({"build": "local_docker", "base_mirror": MIRROR}, r"apply to image\.build: in_account"),
        ({"pull_through_cache_secret_arn": SECRET, "base_mirror": MIRROR}, r"two sources of the vLLM base; give one"),
        ({"pull_through_cache_prefix": "Docker_Hub"}, r"'Docker_Hub' is not an ECR pull-through cache prefix"),
    ],
)
def test_a_bad_image_section_fails_with_what_to_do(image, expected):
    with pytest.raises(ConfigError, match=expected):
        parse_deployment_config({"image": image})


def test_a_repository_or_mirror_in_another_region_or_account_is_refused():
    stack, weights = _stack("us-east-1")
    elsewhere = ecr.Repository.from_repository_attributes(
        stack,
        "Elsewhere",
        repository_arn="arn:aws:ecr:eu-west-1:123456789012:repository/serving",
        repository_name="serving",
    )
    with pytest.raises(ValueError, match="the region is eu-west-1, the endpoint's stack is in us-east-1"):
        PeagleEndpoint(
            stack, "Chat", name="chat", weights=weights, image=ServingImage.build_in_account(repository=elsewhere)
        )
    for mirror, expected in (
        (MIRROR.replace("us-east-1", "eu-west-1"), "image.base_mirror: the region is eu-west-1"),
        (MIRROR.replace("123456789012", "210987654321"), "image.base_mirror: the account is 210987654321"),
    ):
        stack, weights = _stack("us-east-1")
        image = ServingImage.build_in_account(base=BaseImage.mirror_uri(mirror))
        with pytest.raises(ValueError, match=expected):
            PeagleEndpoint(stack, "Chat", name="chat", weights=weights, image=image)


def test_a_pull_through_secret_elsewhere_or_outside_the_prefix_is_refused_by_the_construct():
    for secret, expected in (
        (
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:dockerhub-AbCdEf",
            "whose name begins with 'ecr-pullthroughcache/'",
        ),
        (SECRET.replace("us-east-1", "eu-west-1"), "the pull-through cache's secret: the region is eu-west-1"),
        (
            SECRET.replace("123456789012", "210987654321"),
            "the pull-through cache's secret: the account is 210987654321",
        ),
    ):
        stack, weights = _stack("us-east-1")
        image = ServingImage.build_in_account(base=BaseImage.pull_through_cache(secret))
        with pytest.raises(ValueError, match=expected):
            PeagleEndpoint(stack, "Chat", name="chat", weights=weights, image=image)
    with pytest.raises(TypeError, match="base must be a BaseImage"):
        ServingImage.build_in_account(base="docker.io")
    with pytest.raises(ValueError, match="'Hub' is not an ECR pull-through cache prefix"):
        BaseImage.existing_pull_through_cache("Hub")


# --- preflight between the two ------------------------------------------------------------------------


def test_preflight_notes_a_switch_of_image_source_and_refuses_nothing(default_synth, local_docker):
    old = StackTemplate(local_docker.templates["PeagleEndpoint"], source="local docker")
    new = StackTemplate(default_synth.templates["PeagleEndpoint"], source="in account")
    findings = check_transition(old, new, CheckContext(deployment_file="deployments/default.yaml"))
    assert not [f for f in findings if f.severity is Severity.REFUSE]
    (note,) = [f for f in findings if f.rule == "image-source"]
    assert note.severity is Severity.NOTE
    assert "built and pushed by this machine's Docker -> built in CodeBuild during the deploy" in note.what
    assert "the endpoint updates in place" in note.why
