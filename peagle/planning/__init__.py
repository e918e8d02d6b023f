"""The planner and what it decides with: a deployment's settings (peagle/settings/) turned into a plan that fits the
GPUs (planner.py), its serving units by kind (unit_plan.py), the token budget (engine_budget.py), prefix caching
(prefix_caching.py), the rules across settings, catalog and container (deployment_rules.py), the container's
environment (container_env.py) and the plan recorded in the template (plan_record.py)."""
