"""The batch section: Batch Transform over JSONL in S3."""

from __future__ import annotations

from pydantic import Field

from peagle.catalog import StrictModel


class BatchSettings(StrictModel):
    """Batch Transform over JSONL in S3 (`peagle batch`); the Model's role may read input and write output.

    Off by default: no Batch Transform host runs the CUDA 13 serving image (see
    peagle/catalog/runtime.yaml); synth refuses ``enabled: true`` while that holds and says
    what works instead.
    """

    enabled: bool = Field(
        default=False, description="refused while no Batch Transform host runs the image (today: none does)"
    )
    input_prefix: str = Field(
        default="batch/input/",
        pattern=r"^[A-Za-z0-9!_.*'()/-]+/$",
        description="key prefix the role may read (stack output BatchInputS3Uri)",
    )
    output_prefix: str = Field(
        default="batch/output/", pattern=r"^[A-Za-z0-9!_.*'()/-]+/$", description="key prefix the role may write"
    )
