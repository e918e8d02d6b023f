"""`peagle invoke`: send one prompt to an endpoint or a local server and stream the answer."""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict
from pathlib import Path

from peagle.catalog import ProfileName
from peagle.cli_errors import ExitCode, report_error
from peagle.cli_options import add_command, added_by, exclusive, option
from peagle.client.cold_start import (
    COLD_START_DEFAULT_HELP,
    DEFAULT_COLD_START_WAIT_S,
    ColdStartWait,
    component_cold_start_wait,
    given_wait,
)


def add_target_arguments(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """--url or --endpoint (one of them, or neither when not ``required``), --region, --max-attempts."""
    target = parser.add_mutually_exclusive_group(required=required)
    target.add_argument("--url", help="a server speaking the container contract, e.g. http://127.0.0.1:8080")
    target.add_argument("--endpoint", help="a SageMaker endpoint name")
    parser.add_argument("--region", help="AWS region of the endpoint (default: the AWS config's)")
    parser.add_argument("--max-attempts", type=int, default=5, help="app-level attempts before giving up (default 5)")


def add_target_variant_argument(parser: argparse.ArgumentParser, *, repeatable: bool, help_text: str) -> None:
    """--target-variant: InvokeEndpoint's TargetVariant, so one A/B variant is measured on its own.
    "Specify the production variant to send the inference request to when invoking an endpoint that
    is running two or more variants" (SageMaker API Reference, runtime InvokeEndpoint / InvokeEndpointWithResponseStream)."""
    if repeatable:
        parser.add_argument("--target-variant", action="append", default=[], metavar="VARIANT", help=help_text)
    else:
        parser.add_argument("--target-variant", metavar="VARIANT", help=help_text)


def add_inference_component_argument(parser: argparse.ArgumentParser, *, repeatable: bool, help_text: str) -> None:
    """--inference-component: InvokeEndpoint's InferenceComponentName (see
    ``sagemaker_transport.routing_parameters`` for the API's words), for endpoints in component mode."""
    if repeatable:
        parser.add_argument("--inference-component", action="append", default=[], metavar="NAME", help=help_text)
    else:
        parser.add_argument("--inference-component", metavar="NAME", help=help_text)


def add_cold_start_wait_argument(parser: argparse.ArgumentParser, *, help_text: str | None = None) -> None:
    """--cold-start-wait: how long to wait for an inference component scaled to zero to get a copy."""
    parser.add_argument(
        "--cold-start-wait",
        type=float,
        default=None,
        metavar="SECONDS",
        help=help_text
        or "with --endpoint: when the inference component has no copy (scaled to zero), retry with backoff this "
        f"long while SageMaker starts one (default: {COLD_START_DEFAULT_HELP}; 0: fail at once)",
    )


def cold_start_wait_error(seconds: float | None) -> str | None:
    """Why a --cold-start-wait value is refused (None when it is fine): the wait must be bounded."""
    if seconds is None or (math.isfinite(seconds) and seconds >= 0):
        return None
    return f"--cold-start-wait takes seconds, a finite number >= 0, got {seconds:g}"


def url_routing_error(args: argparse.Namespace) -> str | None:
    """Why --target-variant / --inference-component cannot go with --url (None when they are not given)."""
    if not args.url:
        return None
    if getattr(args, "target_variant", None):
        return (
            "--target-variant picks a production variant of an --endpoint (InvokeEndpoint TargetVariant); "
            "a --url server has none"
        )
    if getattr(args, "inference_component", None):
        return (
            "--inference-component names an inference component of an --endpoint (InvokeEndpoint "
            "InferenceComponentName); a --url server has none"
        )
    return None


def print_notice(text: str) -> None:
    """Explanations while the client waits (a cold start), on stderr so stdout stays the answer."""
    print(text, file=sys.stderr, flush=True)


# The profile the measuring commands (bench, tune, smoke) sample at unless told otherwise:
# DeploymentConfig.profile's default, the profile of deployments/default.yaml (a test keeps them equal).
MEASURED_PROFILE_DEFAULT = ProfileName.CHATBOT.value
# The sampling a profile may take (peagle/catalog/schema.py Sampling, peagle/settings/profile.py ProfileOverrides).
TEMPERATURE_ALLOWED = "a number from 0 (greedy) to 2"
TOP_P_ALLOWED = "a number above 0 and at most 1"


def add_sampling_arguments(
    parser: argparse.ArgumentParser, *, default_profile: str | None = None, max_tokens_help: str | None = None
) -> None:
    """--profile and sampling overrides, shared with `peagle bench`. With ``default_profile`` (the
    measuring commands) the requests are sampled as that profile deploys when --profile is not given."""
    profile_help = "catalog workload profile for sampling defaults"
    if default_profile:
        profile_help = (
            f"catalog workload profile whose temperature and top_p every request is sent with (default "
            f"{default_profile}, the profile of deployments/default.yaml): the sampling users get"
        )
    parser.add_argument("--profile", choices=[profile.value for profile in ProfileName], help=profile_help)
    parser.add_argument("--max-tokens", type=int, help=max_tokens_help or "override the profile's max_tokens")
    parser.add_argument(
        "--temperature",
        type=float,
        help="override the profile's temperature"
        + ("; 0 measures greedy decoding, as a labelled comparison" if default_profile else ""),
    )
    parser.add_argument("--top-p", type=float, help="override the profile's top_p")


def sampling_error(temperature: float | None, top_p: float | None) -> str | None:
    """Why a --temperature / --top-p is refused (None when both are fine or not given)."""
    if temperature is not None and not 0 <= temperature <= 2:
        return f"--temperature takes {TEMPERATURE_ALLOWED}, got {temperature:g}"
    if top_p is not None and not 0 < top_p <= 1:
        return f"--top-p takes {TOP_P_ALLOWED}, got {top_p:g}"
    return None


def add_price_arguments(parser: argparse.ArgumentParser, *, costs: str) -> None:
    """--instance-type (the catalog's price) or --price-per-hour, for the ``costs`` a measuring command
    reports; shared by `peagle bench` and `peagle capacity`, read back with ``instance_price``."""
    price = parser.add_mutually_exclusive_group()
    price.add_argument("--instance-type", help=f"catalog instance type, for {costs}")
    price.add_argument("--price-per-hour", type=float, help=f"instance price in USD per hour, for {costs}")


def instance_price(args: argparse.Namespace) -> tuple[float | None, str | None]:
    """(USD per instance-hour, where it comes from), or (None, None) when neither option is given;
    ValueError for an instance type the catalog lacks."""
    if args.price_per_hour is not None:
        return args.price_per_hour, "--price-per-hour"
    if not args.instance_type:
        return None, None
    from peagle.catalog import load_catalog

    catalog = load_catalog()
    instance = catalog.instances.get(args.instance_type)
    if instance is None:
        raise ValueError(
            f"unknown instance type {args.instance_type!r}; catalog has: {', '.join(sorted(catalog.instances))}"
        )
    return instance.price_per_hour_usd, f"catalog {args.instance_type}, {catalog.price_region}, {catalog.price_date}"


_OPTIONS = (
    added_by(add_target_arguments),
    exclusive(
        option("--prompt", help="completion prompt ('-' reads stdin)"),
        option("--message", help="one chat user message ('-' reads stdin)"),
        option("--messages-file", type=Path, help="JSON file with an OpenAI messages list"),
        required=True,
    ),
    added_by(
        add_target_variant_argument,
        repeatable=False,
        help_text="with --endpoint: send to this production variant (InvokeEndpoint TargetVariant), e.g. the A/B "
        "test's Baseline; default: SageMaker splits by the variants' weights",
    ),
    added_by(
        add_inference_component_argument,
        repeatable=False,
        help_text="with --endpoint: invoke this inference component (InvokeEndpoint InferenceComponentName), for "
        "an endpoint in inference-component mode; may be combined with --target-variant",
    ),
    added_by(add_cold_start_wait_argument),
    added_by(add_sampling_arguments),
    option("--json", action="store_true", help="print the whole result as JSON instead of streaming text"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    add_command(
        subparsers,
        "invoke",
        run_invoke,
        _OPTIONS,
        help="send one prompt and stream the answer",
        description="Send one completion or chat request to a SageMaker endpoint (--endpoint) or a local "
        "server (--url), streaming the text to stdout and timings to stderr. Exit 0 on success, "
        "2 when the request was rejected (4xx, fix it), 1 on other failures.",
    )


def build_request(
    args: argparse.Namespace, *, default_profile: str | None = None, default_max_tokens: int | None = None, **fields
):
    """A GenerationRequest from --profile and the sampling overrides (the ones given win).

    Without --profile: ``default_profile``'s sampling (the measuring commands, which sample as users
    get it) with ``default_max_tokens`` as the request length; with neither, the server's sampling
    defaults. ``fields`` are the content and body extras.
    """
    from peagle.client.request import GenerationRequest

    overrides = {"max_tokens": args.max_tokens, "temperature": args.temperature, "top_p": args.top_p}
    if not args.profile and overrides["max_tokens"] is None:
        overrides["max_tokens"] = default_max_tokens
    profile = args.profile or default_profile
    if profile:
        return GenerationRequest.with_profile(profile, **fields, **overrides)
    return GenerationRequest(**fields, **{name: value for name, value in overrides.items() if value is not None})


def build_client(
    url: str | None,
    endpoint: str | None,
    args: argparse.Namespace,
    *,
    target_variant: str | None = None,
    inference_component: str | None = None,
):
    """The client for one target; an endpoint's waits for a cold start (``--cold-start-wait``) are explained on stderr."""
    from peagle.client.client import PeagleClient
    from peagle.client.retry import RetryPolicy

    wait = resolve_cold_start_wait(getattr(args, "cold_start_wait", None), endpoint, inference_component, args.region)
    policy = RetryPolicy(max_attempts=args.max_attempts, cold_start_wait_s=wait.seconds, cold_start_basis=wait.basis)
    if url:
        return PeagleClient.for_url(url, retry_policy=policy, notify=print_notice)
    assert endpoint is not None, "a target is a --url or an --endpoint (the callers pick one)"
    return PeagleClient.for_endpoint(
        endpoint,
        region=args.region,
        retry_policy=policy,
        notify=print_notice,
        target_variant=target_variant,
        inference_component=inference_component,
    )


def resolve_cold_start_wait(
    given: float | None, endpoint: str | None, component: str | None, region: str | None, *, sagemaker=None
) -> ColdStartWait:
    """--cold-start-wait when given; else, for an endpoint's inference component, its own start-up budgets
    (one DescribeInferenceComponent before the first request); else the default (nothing to wait for on a
    --url server)."""
    if given is not None:
        return given_wait(given)
    if not endpoint:
        return ColdStartWait(0.0, "a --url server has no inference components")
    if component:
        return component_cold_start_wait(component, region=region, sagemaker=sagemaker)
    return ColdStartWait(DEFAULT_COLD_START_WAIT_S, "the default; --cold-start-wait to change")


def _request_content(args: argparse.Namespace) -> dict:
    if args.messages_file is not None:
        return {"messages": json.loads(args.messages_file.read_text())}
    if args.message is not None:
        text = sys.stdin.read() if args.message == "-" else args.message
        return {"messages": [{"role": "user", "content": text}]}
    return {"prompt": sys.stdin.read() if args.prompt == "-" else args.prompt}


def run_invoke(args: argparse.Namespace) -> int:
    from peagle.client.errors import (
        AwsConfigurationError,
        ClientConfigurationError,
        InvalidRequestError,
        PeagleClientError,
    )

    refused = url_routing_error(args)
    if refused is None:
        refused = cold_start_wait_error(args.cold_start_wait)
    if refused is not None:
        return report_error(refused, ExitCode.BAD_INPUT)
    try:
        request = build_request(args, **_request_content(args))
    except (ValueError, OSError) as error:  # scoped: the request's own input (a file, JSON, a sampling value)
        return report_error(error, ExitCode.BAD_INPUT)

    def print_delta(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    try:
        with build_client(
            args.url,
            args.endpoint,
            args,
            target_variant=args.target_variant,
            inference_component=args.inference_component,
        ) as client:
            result = client.generate(request, on_text=None if args.json else print_delta)
    except AwsConfigurationError as error:
        print(file=sys.stderr)
        return report_error(error, ExitCode.AWS)
    except (InvalidRequestError, ClientConfigurationError) as error:
        print(file=sys.stderr)  # below the text streamed so far
        return report_error(error, ExitCode.BAD_INPUT)
    except PeagleClientError as error:
        print(file=sys.stderr)
        return report_error(f"{type(error).__name__}: {error}", ExitCode.FAILED)

    if args.json:
        payload = asdict(result)
        payload["time_per_output_token_s"] = result.time_per_output_token_s
        print(json.dumps(payload, indent=2))
    else:
        print()
        print(_timing_summary(result), file=sys.stderr)
    return ExitCode.OK


def _timing_summary(result) -> str:
    parts = [f"request {result.request_id}"]
    if result.usage is not None:
        parts.append(f"{result.usage.prompt_tokens} prompt + {result.usage.completion_tokens} output tokens")
    if result.timings.ttft_s is not None:
        parts.append(f"TTFT {result.timings.ttft_s * 1000:.0f} ms")
    if result.time_per_output_token_s is not None:
        parts.append(f"TPOT {result.time_per_output_token_s * 1000:.1f} ms")
    parts.append(f"e2e {result.timings.e2e_s:.2f} s")
    spec = result.spec_decode_metrics
    if spec is not None:
        parts.append(
            f"acceptance length {spec.mean_acceptance_length:.2f}, rate {spec.draft_acceptance_rate:.2f} "
            f"(K={spec.num_spec_tokens})"
        )
    parts.append(f"finish {result.finish_reason}")
    if result.attempts > 1:
        parts.append(f"{result.attempts} attempts")
    if result.cold_start_wait_s:
        parts.append(f"after a {result.cold_start_wait_s:.0f} s cold start (not in the timings)")
    return " | ".join(parts)
