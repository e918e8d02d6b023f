"""`peagle traffic`: an endpoint's per-minute invocations, read back from CloudWatch as the trace CSV
that `peagle simulate --traffic FILE` replays (docs/production-loop.md, section 3).

- ``window``: the window a user names, and the resolution CloudWatch still keeps for it;
- ``cloudwatch_history``: the SageMaker and CloudWatch calls (DescribeEndpoint, GetMetricData);
- ``trace_file``: per-period sums -> requests per minute -> the CSV, with its ``# start:`` line;
- ``cli``: the subcommand.
"""
