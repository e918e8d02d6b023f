"""`peagle simulate`: the scaling policies of a synthesized endpoint stack, replayed minute by
minute against a traffic trace through a model of what AWS documents (docs/simulate.md).

- ``scaling_template``: the scalable targets, step and target-tracking policies and their alarms,
  read from the template by resource type;
- ``metric_math``: the CloudWatch metric-math subset the templates' alarms use;
- ``cloudwatch``: alarm evaluation (M of N, missing data) and the repeated Auto Scaling actions;
- ``autoscaling``: step adjustments, target tracking, cooldowns, bounds, conflicting policies;
- ``service``: the endpoint: capacity that serves after a start-up delay, the load it carries and the
  metrics it emits; every number AWS does not define is an ``Assumptions`` field;
- ``traffic``: built-in shapes and CSV traces;
- ``engine``: the loop; ``verdicts``: the stated properties; ``report``: table, plot, summary.
"""
