"""P-EAGLE speculative decoding on Amazon SageMaker: config, catalogs, planner, CLI."""
