"""The SageMaker Model: the serving image, the plan as container environment, and the
weights prefix mounted at /opt/ml/model (target/ and drafter/)."""

from __future__ import annotations

from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from peagle_cdk.endpoint_props import BoundImage
from peagle_cdk.execution_role import SageMakerExecutionRole
from peagle_cdk.model_artifacts import ModelArtifactsLocation


class PeagleModel(Construct):
    """A vLLM + P-EAGLE model. Its name is generated: a physical name would block updates."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        environment: dict[str, str],
        artifacts: ModelArtifactsLocation | None,
        image: BoundImage,
        execution_role: SageMakerExecutionRole,
        network_isolation: bool = True,
        subnet_ids: list[str] | None = None,
        security_group_ids: list[str] | None = None,
    ) -> None:
        """
        :param environment: container env (SM_VLLM_* and PEAGLE_*), from peagle.planning.container_env.
        :param artifacts: S3 prefix with target/ and drafter/ (CompressionType None, S3Prefix);
            None when the container downloads the weights from the hub itself.
        :param image: the serving image (ServingImage.bind); several models (A/B variants) share one.
        :param execution_role: shared by every model of the endpoint.
        :param network_isolation: no network or AWS credentials in the container (default: on).
        :param subnet_ids: private subnets to run in (default: SageMaker's managed network).
        """
        super().__init__(scope, id)
        self.environment = dict(environment)
        # An instance pool's fallback types, priority 2 on: the Model each runs where its plan's container differs
        # from this one's (ProductionVariant.InstancePools' ModelNameOverride: "Use this to deploy a different model
        # optimized for the instance type in this pool", SageMaker API Reference, InstancePool); None: this Model.
        # PeagleEndpoint fills it (peagle/planning/pool_plans.py plans each type).
        self.pool_models: tuple[PeagleModel | None, ...] = ()
        self.image = image
        self.execution_role = execution_role
        self.artifacts = artifacts
        self.model = sagemaker.CfnModel(
            self,
            "Model",
            execution_role_arn=execution_role.role.role_arn,
            enable_network_isolation=network_isolation,
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=image.image_uri,
                mode="SingleModel",
                environment=environment,
                model_data_source=(
                    sagemaker.CfnModel.ModelDataSourceProperty(
                        s3_data_source=sagemaker.CfnModel.S3DataSourceProperty(
                            s3_uri=artifacts.s3_uri,
                            s3_data_type="S3Prefix",
                            compression_type="None",
                        )
                    )
                    if artifacts is not None
                    else None
                ),
            ),
            vpc_config=(
                sagemaker.CfnModel.VpcConfigProperty(subnets=subnet_ids, security_group_ids=security_group_ids or [])
                if subnet_ids
                else None
            ),
        )
        # SageMaker checks the role's permissions when it creates the model.
        self.model.node.add_dependency(execution_role.policy)

    @property
    def model_name(self) -> str:
        return self.model.attr_model_name
