"""The serving image's two paths (peagle_cdk/serving_image_build.py): built in the account during `cdk deploy`
(the YAML app's default: no Docker image asset, a CodeBuild build from the pinned base, the Model on the built
tag), or built by the local Docker (image.build: local_docker, the 0.1.0 templates); where the build pulls the
base from (Docker Hub, a pull-through cache, a mirror); bad input; what preflight says of a switch."""

from __future__ import annotations

import json

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_s3 as s3
from cdk_synth import REPO_ROOT, write_deployment

from peagle.config import parse_deployment_config
from peagle.errors import ConfigError
from peagle.preflight.rules import CheckContext, Severity, check_transition
from peagle.preflight.template import StackTemplate
from peagle_cdk import ModelWeights, PeagleEndpoint
from peagle_cdk.endpoint_props import ServingImage
from peagle_cdk.serving_image_build import BaseImage

IMAGE_CONTEXT = REPO_ROOT / "inference_image"
SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:ecr-pullthroughcache/docker-hub-AbCdEf"
MIRROR = "123456789012.dkr.ecr.us-east-1.amazonaws.com/mirrors/vllm-openai:v0.32.0"


def _assets(result) -> dict:
    return json.loads((result.outdir / "PeagleEndpoint.assets.json").read_text())


def _one(result, resource_type: str) -> tuple[str, dict]:
    (item,) = result.resources("PeagleEndpoint", resource_type).items()
    return item


def _build_role_statements(result) -> list[dict]:
    return [
        statement
        for name, policy in result.resources("PeagleEndpoint", "AWS::IAM::Policy").items()
        if name.startswith("ContainerImageBuildAmd64")
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
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
    # The whole launcher goes up (the library reads .dockerignore; read as glob patterns it uploaded the Dockerfile alone).
    assert sorted(path.name for path in (context / "peagle_serve").glob("*.py")) == launcher
    assert (context / "Dockerfile").read_bytes() == (IMAGE_CONTEXT / "Dockerfile").read_bytes()
    size = sum(path.stat().st_size for path in context.rglob("*") if path.is_file())
    assert size < 1_000_000, f"build context {size} bytes"


def test_the_model_runs_the_built_tag_so_the_endpoint_waits_for_the_build(default_synth):
    build_id, build = _one(default_synth, "Custom::CDKContainerImageBuild")
    repository_id, _ = _one(default_synth, "AWS::ECR::Repository")
    _, model = _one(default_synth, "AWS::SageMaker::Model")
    image = json.dumps(model["Properties"]["PrimaryContainer"]["Image"])
    assert f'["{build_id}", "ImageTag"]' in image and f'"Ref": "{repository_id}"' in image
    assert "--platform linux/amd64" in build["Properties"]["buildCommand"]
    assert "--build-arg" not in build["Properties"]["buildCommand"]  # Docker Hub: the Dockerfile's pinned default


def test_the_build_runs_privileged_on_a_medium_codebuild_host(default_synth):
    _, project = _one(default_synth, "AWS::CodeBuild::Project")
    environment = project["Properties"]["Environment"]
    assert (environment["ComputeType"], environment["PrivilegedMode"]) == ("BUILD_GENERAL1_MEDIUM", True)


def test_the_repository_is_scanned_encrypted_and_keeps_the_last_five_images(default_synth):
    _, repository = _one(default_synth, "AWS::ECR::Repository")
    properties = repository["Properties"]
    assert properties["ImageScanningConfiguration"] == {"ScanOnPush": True}
    assert properties["EncryptionConfiguration"] == {"EncryptionType": "KMS"}
    (rule,) = json.loads(properties["LifecyclePolicy"]["LifecyclePolicyText"])["rules"]
    assert rule["selection"]["countType"] == "imageCountMoreThan" and rule["selection"]["countNumber"] == 5


def test_the_build_role_pushes_only_to_its_repository_and_reads_only_its_context(default_synth):
    repository_id, _ = _one(default_synth, "AWS::ECR::Repository")
    statements = _build_role_statements(default_synth)
    pushes = [s for s in statements if "ecr:PutImage" in s["Action"]]
    assert [s["Resource"] for s in pushes] == [{"Fn::GetAtt": [repository_id, "Arn"]}]
    (deny,) = [s for s in statements if s["Effect"] == "Deny"]
    assert deny["Action"] == "s3:GetObject*" and ".zip" in json.dumps(deny["NotResource"])
    build_id, build = _one(default_synth, "Custom::CDKContainerImageBuild")
    source_key = build["Properties"]["sourceS3Url"]
    assert json.dumps(deny["NotResource"]).split("/")[-1].split('"')[0] in json.dumps(source_key)


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
    assert local_docker.resources("PeagleEndpoint", "Custom::CDKContainerImageBuild") == {}


# --- where the base comes from ----------------------------------------------------------------------


def test_a_pull_through_cache_pulls_the_base_with_your_docker_hub_credentials(synth, tmp_path):
    result = synth(deployment=write_deployment(tmp_path, f"image:\n  pull_through_cache_secret_arn: {SECRET}\n"))
    _, rule = _one(result, "AWS::ECR::PullThroughCacheRule")
    assert rule["Properties"] == {
        "CredentialArn": SECRET,
        "EcrRepositoryPrefix": "docker-hub",
        "UpstreamRegistry": "docker-hub",
        "UpstreamRegistryUrl": "registry-1.docker.io",
    }
    _, build = _one(result, "Custom::CDKContainerImageBuild")
    command = json.dumps(build["Properties"]["buildCommand"])
    assert "--build-arg VLLM_IMAGE=" in command and "/docker-hub/vllm/vllm-openai:v0.32.0" in command
    (imports,) = [s for s in _build_role_statements(result) if "ecr:BatchImportUpstreamImage" in s["Action"]]
    assert "repository/docker-hub/*" in json.dumps(imports["Resource"])


def test_a_mirror_is_pulled_from_your_repository(synth, tmp_path):
    result = synth(deployment=write_deployment(tmp_path, f"image:\n  base_mirror: {MIRROR}\n"))
    _, build = _one(result, "Custom::CDKContainerImageBuild")
    assert f"--build-arg VLLM_IMAGE={MIRROR}" in build["Properties"]["buildCommand"]
    (pull,) = [
        s
        for s in _build_role_statements(result)
        if s["Action"]
        == [
            "ecr:BatchCheckLayerAvailability",
            "ecr:BatchGetImage",
            "ecr:GetDownloadUrlForLayer",
        ]
    ]
    assert pull["Resource"] == {
        "Fn::Join": [
            "",
            ["arn:", {"Ref": "AWS::Partition"}, ":ecr:us-east-1:123456789012:repository/mirrors/vllm-openai"],
        ]
    }
    assert result.resources("PeagleEndpoint", "AWS::ECR::PullThroughCacheRule") == {}


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
    ],
)
def test_a_bad_image_section_fails_with_what_to_do(image, expected):
    with pytest.raises(ConfigError, match=expected):
        parse_deployment_config({"image": image})


def _stack(region: str) -> tuple[Stack, ModelWeights]:
    stack = Stack(App(), "Images", env=Environment(account="123456789012", region=region))
    return stack, ModelWeights.from_bucket(s3.Bucket(stack, "Weights"), "models/gpt-oss-20b/")


def test_a_repository_or_mirror_in_another_region_is_refused():
    stack, weights = _stack("us-east-1")
    elsewhere = ecr.Repository.from_repository_attributes(
        stack,
        "Elsewhere",
        repository_arn="arn:aws:ecr:eu-west-1:123456789012:repository/serving",
        repository_name="serving",
    )
    with pytest.raises(ValueError, match="the repository is in eu-west-1, the endpoint's stack in us-east-1"):
        PeagleEndpoint(
            stack, "Chat", name="chat", weights=weights, image=ServingImage.build_in_account(repository=elsewhere)
        )
    stack, weights = _stack("us-east-1")
    mirror = BaseImage.mirror_uri(MIRROR.replace("us-east-1", "eu-west-1"))
    with pytest.raises(ValueError, match="image.base_mirror: the repository is in eu-west-1"):
        PeagleEndpoint(stack, "Chat", name="chat", weights=weights, image=ServingImage.build_in_account(base=mirror))


def test_a_pull_through_secret_outside_the_prefix_is_refused_by_the_construct():
    stack, weights = _stack("us-east-1")
    bad = BaseImage.pull_through_cache("arn:aws:secretsmanager:us-east-1:123456789012:secret:dockerhub-AbCdEf")
    with pytest.raises(ValueError, match="whose name begins with 'ecr-pullthroughcache/'"):
        PeagleEndpoint(stack, "Chat", name="chat", weights=weights, image=ServingImage.build_in_account(base=bad))
    with pytest.raises(TypeError, match="base must be a BaseImage"):
        ServingImage.build_in_account(base="docker.io")


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
