"""The catalog's ids as constants (generated from peagle/catalog/*.yaml by `python -m peagle.reference_docs`; do not edit).

    PeagleEndpoint(stack, "Chat", model=ModelPairs.GPT_OSS_20B, instance_type=InstanceTypes.G6E_XLARGE,
                   profile=Profiles.CHATBOT, ...)

Plain strings are the same values; `peagle catalog` prints what each one is.
"""


class ModelPairs:
    """Target + P-EAGLE drafter pairs (peagle/catalog/pairs.yaml)."""

    GPT_OSS_20B = "gpt-oss-20b"
    GPT_OSS_20B_LONG_CONTEXT = "gpt-oss-20b-long-context"
    GPT_OSS_120B = "gpt-oss-120b"
    QWEN3_CODER_30B_A3B = "qwen3-coder-30b-a3b"
    QWEN3_CODER_30B_A3B_LONG_CONTEXT = "qwen3-coder-30b-a3b-long-context"
    QWEN3_8B = "qwen3-8b"


class InstanceTypes:
    """SageMaker instance types with their GPU facts and price (peagle/catalog/instances.yaml)."""

    G4DN_XLARGE = "ml.g4dn.xlarge"
    G4DN_12XLARGE = "ml.g4dn.12xlarge"
    P3_2XLARGE = "ml.p3.2xlarge"
    P3_8XLARGE = "ml.p3.8xlarge"
    P3_16XLARGE = "ml.p3.16xlarge"
    G5_XLARGE = "ml.g5.xlarge"
    G5_2XLARGE = "ml.g5.2xlarge"
    G5_12XLARGE = "ml.g5.12xlarge"
    G5_48XLARGE = "ml.g5.48xlarge"
    G6_XLARGE = "ml.g6.xlarge"
    G6_12XLARGE = "ml.g6.12xlarge"
    G6_48XLARGE = "ml.g6.48xlarge"
    G6E_XLARGE = "ml.g6e.xlarge"
    G6E_12XLARGE = "ml.g6e.12xlarge"
    G6E_48XLARGE = "ml.g6e.48xlarge"
    P4D_24XLARGE = "ml.p4d.24xlarge"
    P4DE_24XLARGE = "ml.p4de.24xlarge"
    P5_48XLARGE = "ml.p5.48xlarge"
    P5E_48XLARGE = "ml.p5e.48xlarge"
    P5EN_48XLARGE = "ml.p5en.48xlarge"
    G7E_2XLARGE = "ml.g7e.2xlarge"
    G7E_4XLARGE = "ml.g7e.4xlarge"
    G7E_8XLARGE = "ml.g7e.8xlarge"
    G7E_12XLARGE = "ml.g7e.12xlarge"
    G7E_24XLARGE = "ml.g7e.24xlarge"
    G7E_48XLARGE = "ml.g7e.48xlarge"
    G7_2XLARGE = "ml.g7.2xlarge"
    G7_4XLARGE = "ml.g7.4xlarge"
    G7_8XLARGE = "ml.g7.8xlarge"
    G7_12XLARGE = "ml.g7.12xlarge"
    G7_24XLARGE = "ml.g7.24xlarge"
    G7_48XLARGE = "ml.g7.48xlarge"
    P6_B200_48XLARGE = "ml.p6-b200.48xlarge"
    P6_B300_48XLARGE = "ml.p6-b300.48xlarge"


class Profiles:
    """Workload profiles: sampling, lengths, SLO (peagle/catalog/profiles.yaml)."""

    CHATBOT = "chatbot"
    CODEGEN = "codegen"
    BATCH = "batch"
