"""Where staged weights and batch/async data live in S3: one definition for the CDK app
(which passes CloudFormation's account/region tokens) and `peagle stage` / `peagle batch`
(which pass the caller's resolved account and region)."""


def artifacts_bucket_name(deployment_name: str, account: str, region: str) -> str:
    """Deterministic, so the CLI and the endpoint stack find it without a stack export."""
    return f"{deployment_name}-models-{account}-{region}"


def pair_prefix(pair_id: str) -> str:
    """target/ and drafter/ of a pair sit side by side under this prefix."""
    return f"models/{pair_id}/"
