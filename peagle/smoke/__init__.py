"""`peagle smoke`: after `cdk deploy`, prove the endpoint works, step by step.

``step`` (what a step reports), ``cloud`` (DescribeEndpoint, CloudWatch KPI metrics,
the stack's alarms), ``invocations`` (plain and streamed completions, /metrics
counters), ``runner`` (the order), ``cli`` (arguments and exit codes). boto3 and
httpx are imported only when a step runs.
"""
