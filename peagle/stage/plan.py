"""The staging plan: which files go to which keys under the pair's prefix.

Layout (what the SageMaker Model mounts at /opt/ml/model, peagle.planning.container_env):

    s3://<bucket>/<prefix>/target/<every file of the target checkpoint>
    s3://<bucket>/<prefix>/drafter/<every file of the drafter checkpoint>

The prefix is the deployment's ``artifacts.s3_uri``, else the project bucket
``<name>-models-<account>-<region>`` with ``models/<pair>/``
(peagle_cdk/model_artifacts.py; the names are repeated here so the CLI does
not import aws-cdk-lib).
"""

from __future__ import annotations

from dataclasses import dataclass

from peagle.aws import S3Location
from peagle.stage.checkpoints import CheckpointFiles
from peagle.stage.upload import GIB, StagedFile


@dataclass(frozen=True)
class StagePlan:
    pair_id: str
    destination: S3Location  # the prefix, ending in '/'
    files: tuple[StagedFile, ...]
    skipped_local: tuple[str, ...] = ()

    @classmethod
    def build(
        cls, pair_id: str, destination: S3Location, target: CheckpointFiles, drafter: CheckpointFiles
    ) -> StagePlan:
        files: list[StagedFile] = []
        skipped: list[str] = []
        for checkpoint in (target, drafter):
            for relative, size in sorted(checkpoint.files.items()):
                local = checkpoint.root / relative if checkpoint.root is not None else None
                files.append(StagedFile(local_path=local, relative_key=f"{checkpoint.role}/{relative}", size=size))
            skipped += [f"{checkpoint.role}/{name}" for name in checkpoint.skipped]
        return cls(
            pair_id=pair_id, destination=destination.as_prefix(), files=tuple(files), skipped_local=tuple(skipped)
        )

    @property
    def total_bytes(self) -> int:
        return sum(file.size for file in self.files)

    @property
    def model_data_s3_uri(self) -> str:
        """What the endpoint stack's ModelDataS3Uri output names and the Model mounts."""
        return self.destination.uri

    def describe(self, *, with_files: bool) -> list[str]:
        lines = [
            f"pair            {self.pair_id}",
            f"destination     {self.destination.uri}{{target,drafter}}/",
            f"files           {len(self.files)} ({self.total_bytes / GIB:.2f} GiB, {self.total_bytes:,} bytes)",
        ]
        if self.skipped_local:
            lines.append(
                f"not staged      {len(self.skipped_local)} file(s) vLLM never reads: {', '.join(self.skipped_local[:5])}"
                + (" ..." if len(self.skipped_local) > 5 else "")
            )
        if with_files:
            lines.append("keys:")
            lines += [f"  {file.size:>15,}  {self.destination.child(file.relative_key).uri}" for file in self.files]
        return lines
