"""The confused-deputy condition on the trust of the roles services assume (peagle_cdk/execution_role.py,
trust_principal): SageMaker's documented aws:SourceArn value for real-time and asynchronous inference on the execution
role the construct creates, as ArnLikeIfExists so that what the page does not name (inference components, batch
transform jobs on the same Model) is never refused for a key SageMaker might not send; a user's own role and
Application Auto Scaling's service-linked role left as they are. Bare stacks, read with Template.from_stack."""

from __future__ import annotations

from aws_cdk import App, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match, Template

from peagle_cdk import EndpointMode, ModelWeights, PeagleEndpoint

# SageMaker Developer Guide, "Cross-service confused deputy prevention", "SageMaker AI Inference": "ArnLike":
# {"aws:SourceArn": "arn:aws:sagemaker:<region>:<account>:*"}, here with the stack's own partition, Region, account,
# and IfExists (trust_principal says why).
DOCUMENTED_CONDITION = {
    "ArnLikeIfExists": {
        "aws:SourceArn": {
            "Fn::Join": [
                "",
                [
                    "arn:",
                    {"Ref": "AWS::Partition"},
                    ":sagemaker:",
                    {"Ref": "AWS::Region"},
                    ":",
                    {"Ref": "AWS::AccountId"},
                    ":*",
                ],
            ]
        }
    }
}


def _template(**props) -> Template:
    stack = Stack(App(), "Consumer")
    bucket = s3.Bucket(stack, "Weights")
    PeagleEndpoint(stack, "Chat", name="chat", weights=ModelWeights.from_bucket(bucket, "models/gpt-oss-20b/"), **props)
    return Template.from_stack(stack)


def _sagemaker_trust(template: Template) -> list[dict]:
    return [
        statement
        for role in template.find_resources("AWS::IAM::Role").values()
        for statement in role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        if statement.get("Principal") == {"Service": "sagemaker.amazonaws.com"}
    ]


def test_the_execution_role_of_production_variants_trusts_sagemaker_only_from_this_account_and_region():
    template = _template()
    template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": {
                "Statement": [
                    {
                        "Action": "sts:AssumeRole",
                        "Effect": "Allow",
                        "Principal": {"Service": "sagemaker.amazonaws.com"},
                        "Condition": DOCUMENTED_CONDITION,
                    }
                ],
                "Version": "2012-10-17",
            }
        },
    )
    # Exactly that form: no aws:SourceAccount beside it ("you do not need to specify an aws:SourceAccount value").
    (statement,) = _sagemaker_trust(template)
    assert set(statement["Condition"]) == {"ArnLikeIfExists"}
    assert set(statement["Condition"]["ArnLikeIfExists"]) == {"aws:SourceArn"}


def test_an_asynchronous_endpoint_shares_the_role_and_its_condition():
    stack = Stack(App(), "Consumer")
    bucket = s3.Bucket(stack, "Weights")
    endpoint = PeagleEndpoint(
        stack, "Chat", name="chat", weights=ModelWeights.from_bucket(bucket, "models/gpt-oss-20b/")
    )
    endpoint.add_async_endpoint(bucket_name=bucket.bucket_name)
    template = Template.from_stack(stack)
    (statement,) = _sagemaker_trust(template)  # one execution role serves both endpoints
    assert statement["Condition"] == DOCUMENTED_CONDITION
    template.has_resource_properties("AWS::SageMaker::EndpointConfig", {"AsyncInferenceConfig": Match.any_value()})


def test_a_components_endpoint_gets_the_same_condition_which_cannot_refuse_a_request_without_the_key():
    template = _template(model="qwen3-8b", instance_type="ml.g6e.48xlarge", mode=EndpointMode.inference_components())
    (statement,) = _sagemaker_trust(template)
    assert statement["Condition"] == DOCUMENTED_CONDITION


def test_the_condition_as_iam_decides_it_this_account_yes_another_no_no_key_yes():
    """The trust statement through the project's IAM evaluator (peagle/access/policy_eval.py, tested on IAM's own
    cases): SageMaker acting for this account and Region may assume the role, for another account it may not, and a
    request without aws:SourceArn (a feature whose keys no page lists) is not refused."""
    from peagle.access.policy_eval import Policy, Request, evaluate

    source = "arn:aws:sagemaker:us-east-1:111122223333:*"
    trust = Policy(
        "trust policy",
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "sagemaker.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                    "Condition": {"ArnLikeIfExists": {"aws:SourceArn": source}},
                }
            ],
        },
    )
    role = "arn:aws:iam::111122223333:role/exec"

    def assume(**context) -> bool:
        return evaluate(Request("sagemaker.amazonaws.com", "sts:AssumeRole", role, context), (), trust).allowed

    assert assume(**{"aws:SourceArn": "arn:aws:sagemaker:us-east-1:111122223333:endpoint/chat"})
    assert not assume(**{"aws:SourceArn": "arn:aws:sagemaker:us-east-1:999988887777:endpoint/theirs"})
    assert not assume(**{"aws:SourceArn": "arn:aws:sagemaker:eu-west-1:111122223333:endpoint/chat"})
    assert assume()


def test_a_role_of_your_own_is_not_touched():
    stack = Stack(App(), "Consumer")
    role = iam.Role(stack, "Mine", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))  # pyright: ignore[reportArgumentType]
    bucket = s3.Bucket(stack, "Weights")
    weights = ModelWeights.from_bucket(bucket, "models/x/")
    PeagleEndpoint(stack, "Chat", name="chat", role=role, weights=weights)  # pyright: ignore[reportArgumentType]
    template = Template.from_stack(stack)
    (statement,) = _sagemaker_trust(template)  # yours, and no second execution role beside it
    assert "Condition" not in statement


def test_no_role_for_application_auto_scaling_is_created_its_service_linked_role_is_referenced():
    template = _template(model="qwen3-8b", instance_type="ml.g6e.48xlarge", mode=EndpointMode.inference_components())
    principals = [
        str(statement.get("Principal"))
        for role in template.find_resources("AWS::IAM::Role").values()
        for statement in role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    ]
    assert not any("application-autoscaling" in principal for principal in principals)
    (target,) = template.find_resources("AWS::ApplicationAutoScaling::ScalableTarget").values()
    assert "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint" in str(target["Properties"]["RoleARN"])
