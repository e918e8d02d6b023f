"""`peagle preflight`: refuse endpoint-stack updates that SageMaker or CloudFormation would
fail or could not roll back, and print the safe sequence of deploys (docs/preflight.md)."""
