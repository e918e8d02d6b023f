"""Who may do what at run time: IAM policy evaluation over the synthesized template's policies."""
