"""peagle.access.policy_eval against the corpus of IAM's and KMS's documented cases (tests/access/iam_corpus.py).

Each case is decided by ``evaluate`` and compared with the outcome its page states: "allow", "explicit-deny",
"implicit-deny" or "key-policy-does-not-allow". Run against the evaluator before issue 43 (commit ffe975c), 18
of the 80 cases failed: the seven kinds of wrong verdict the issue names (iam_corpus.NAMED_IN_ISSUE_43: 14
cases), three more on the service-principal keys aws:PrincipalIsAWSService/aws:PrincipalServiceName
(principalservicename-spares-codebuild, principalisawsservice-spares-cloudtrail,
principalservicename-spares-cloudtrail), and a KMS key-policy statement without Resource
(key-policy-statement-without-resource). All 80 pass now.
"""

from __future__ import annotations

import pytest
from iam_corpus import CASES, NAMED_IN_ISSUE_43, Case

from peagle.access.policy_eval import Policy, Request, evaluate


def decide(case: Case) -> str:
    request = Request(case.principal, case.action, case.resource, case.context)
    identity = [Policy(f"identity policy #{index}", document) for index, document in enumerate(case.identity)]
    resource = Policy("resource policy", case.resource_policy) if case.resource_policy is not None else None
    return evaluate(request, identity, resource, resource_policy_must_allow=case.key_policy).reason


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_documented_case(case: Case):
    assert decide(case) == case.expected, f"{case.url}: {case.quote}"


def test_corpus_is_whole():
    """At least 40 cases, each citing its page and quoting it, ids unique, and every wrong verdict the issue
    names is among them."""
    assert len(CASES) >= 40
    assert len({case.id for case in CASES}) == len(CASES)
    for case in CASES:
        assert case.url.startswith("https://docs.aws.amazon.com/") and case.quote
    named = {case_id for ids in NAMED_IN_ISSUE_43.values() for case_id in ids}
    assert named <= {case.id for case in CASES}
