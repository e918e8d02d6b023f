"""The deployed side, read from the account (``--stack``): the stack's template as last
deployed, and the read-only look-ups the rules make (weights staged? log group left over?).

Every call goes through ``aws_call`` (peagle/aws.py), so missing credentials,
access denied or a missing region become one ``AwsCallError`` line. boto3 is imported
only inside functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from peagle.aws import S3Location, aws_call, aws_client, aws_session
from peagle.cloud_assembly import StackTemplate, parse_template


def _session(region: str | None) -> Any:
    return aws_session(region)


def _client(session: Any, service: str) -> Any:
    return aws_client(session, service)


def deployed_template(session: Any, stack_name: str) -> StackTemplate | None:
    """The template the stack was last deployed with (as submitted), or None if there is no such stack."""
    from botocore.exceptions import ClientError

    cloudformation = _client(session, "cloudformation")
    doing = f"reading the deployed template of stack {stack_name} (CloudFormation GetTemplate)"
    with aws_call(doing, permission="cloudformation:GetTemplate on the stack"):
        try:
            # "Original" is the template as submitted; "Processed" would have transforms expanded.
            response = cloudformation.get_template(StackName=stack_name, TemplateStage="Original")
        except ClientError as error:
            details = error.response.get("Error", {})
            if details.get("Code") == "ValidationError" and "does not exist" in str(details.get("Message", "")):
                return None
            raise
    # botocore hands JSON bodies back parsed, YAML bodies as text.
    return parse_template(response["TemplateBody"], source=f"stack {stack_name} (deployed)")


class AwsAccount:
    """The rules' AccountProbe for the account and region the session points at."""

    def __init__(self, session: Any, *, stack_name: str) -> None:
        self._session = session
        self._stack_name = stack_name
        self._pseudo: dict[str, str] | None = None

    def pseudo_parameters(self) -> dict[str, str]:
        if self._pseudo is None:
            with aws_call("looking up the AWS account (STS GetCallerIdentity)", permission="valid AWS credentials"):
                identity = _client(self._session, "sts").get_caller_identity()
            partition = identity["Arn"].split(":")[1]
            self._pseudo = {
                "AWS::AccountId": identity["Account"],
                "AWS::Region": self._session.region_name,
                "AWS::Partition": partition,
                "AWS::URLSuffix": "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com",
                "AWS::StackName": self._stack_name,
            }
        return self._pseudo

    def resolve(self, template: StackTemplate, value: Any) -> str | None:
        return template.resolve(value, self.pseudo_parameters())

    def missing_objects(self, prefix_uri: str, relative_keys: Sequence[str]) -> list[str]:
        from botocore.exceptions import ClientError

        prefix = S3Location.parse(prefix_uri, what="the Model's weights prefix").as_prefix()
        s3 = _client(self._session, "s3")
        missing = []
        for key in relative_keys:
            location = prefix.child(key)
            with aws_call(
                f"checking {location.uri} (S3 HeadObject)",
                # Without ListBucket S3 answers 403, not 404, for a key that is not there.
                permission=f"s3:GetObject and s3:ListBucket on {prefix.uri}",
            ):
                try:
                    s3.head_object(Bucket=location.bucket, Key=location.key)
                except ClientError as error:
                    if error.response.get("Error", {}).get("Code") not in ("404", "NoSuchKey", "NotFound"):
                        raise
                    missing.append(key)
        return missing

    def log_group_exists(self, name: str) -> bool:
        logs = _client(self._session, "logs")
        with aws_call(
            f"looking for log group {name} (CloudWatch Logs DescribeLogGroups)", permission="logs:DescribeLogGroups"
        ):
            groups = logs.describe_log_groups(logGroupNamePrefix=name, limit=5)["logGroups"]
        return any(group.get("logGroupName") == name for group in groups)
