"""Reading a synthesized app: the one place the tools load a cloud assembly and resolve its templates' values.

What it reads: cdk.out's manifest.json (manifest.py, the only reader of that file: stacks, template files, stack
names, environments, tags, nested assemblies of CDK Stages), each stack's template (JSON, or YAML with the short
intrinsic tags: template.py), and the plan each P-EAGLE endpoint records in its template (endpoint_stacks.py,
through peagle/planning/plan_record.py). Intrinsic functions are resolved once (intrinsics.py), in one of two modes
(modes.py): symbolic, where deploy-time values are named placeholders and ARNs are derived per resource type
(resource_kinds.py), or concrete, the text the template itself fixes.

Who asks what:

- `peagle access` and the CDK plugin (peagle_cdk/access_checks.py): ``Assembly`` (symbolic mode): every stack,
  ``resolve``/``resolve_document`` to compare grants with requests, ``find_resource`` for what a value names.
- `peagle preflight`: ``template_to_deploy`` (which stack of cdk.out is the endpoint stack, checked against
  ``--deployment``), ``stack_name_beside``, and ``StackTemplate`` (concrete mode): endpoints, variants,
  components, scalable targets, named log groups, image sources, weights.
- `peagle simulate`: ``recorded_stack``/``template_to_deploy`` for the template, ``StackTemplate`` for the scaling
  resources and the placement of components, the plan records for each endpoint's plan.
- `peagle smoke`: ``Assembly.stack``/``recorded_stack`` and the plan records (what to check of which endpoint),
  ``parse_template`` for the deployed template its alarm step reads.
"""

from peagle.cloud_assembly.assembly import Assembly
from peagle.cloud_assembly.endpoint_stacks import recorded_stack, records_of, template_to_deploy
from peagle.cloud_assembly.intrinsics import NO_VALUE, UNRESOLVED, Resolver
from peagle.cloud_assembly.manifest import (
    DEPLOYMENT_TAG,
    ENDPOINT_STACK_ID,
    AssemblyError,
    AssemblyStack,
    stack_name_beside,
)
from peagle.cloud_assembly.modes import ConcreteMode, SymbolicMode
from peagle.cloud_assembly.template import (
    COMPONENT_COPY_COUNT,
    ENDPOINT,
    ENDPOINT_CONFIG,
    IMAGE_BUILDS,
    INFERENCE_COMPONENT,
    LOG_GROUP,
    MODEL,
    SCALABLE_TARGET,
    STACK_CONSTANTS,
    VARIANT_INSTANCE_COUNT,
    Component,
    CopyCountTarget,
    Endpoint,
    LogGroup,
    StackTemplate,
    TemplateError,
    Variant,
    at_pointer,
    canonical,
    load_template_file,
    parse_template,
)

__all__ = [
    "COMPONENT_COPY_COUNT",
    "DEPLOYMENT_TAG",
    "ENDPOINT",
    "ENDPOINT_CONFIG",
    "ENDPOINT_STACK_ID",
    "IMAGE_BUILDS",
    "INFERENCE_COMPONENT",
    "LOG_GROUP",
    "MODEL",
    "NO_VALUE",
    "SCALABLE_TARGET",
    "STACK_CONSTANTS",
    "UNRESOLVED",
    "VARIANT_INSTANCE_COUNT",
    "Assembly",
    "AssemblyError",
    "AssemblyStack",
    "Component",
    "ConcreteMode",
    "CopyCountTarget",
    "Endpoint",
    "LogGroup",
    "Resolver",
    "StackTemplate",
    "SymbolicMode",
    "TemplateError",
    "Variant",
    "at_pointer",
    "canonical",
    "load_template_file",
    "parse_template",
    "recorded_stack",
    "records_of",
    "stack_name_beside",
    "template_to_deploy",
]
