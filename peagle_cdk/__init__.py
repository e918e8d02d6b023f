"""CDK constructs, one concern each; stacks compose them.

Named `peagle_cdk` rather than `constructs`: a top-level package called
`constructs` would shadow the `constructs` library that aws-cdk-lib itself imports.
"""
