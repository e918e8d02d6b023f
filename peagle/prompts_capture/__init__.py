"""`peagle prompts`: SageMaker Data Capture records to the prompts file bench, tune and capacity read."""
