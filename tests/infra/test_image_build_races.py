"""The races that used to fail a deploy whose image exists (issue 43), each run through the real handler
(peagle_cdk/image_build_handler/) against ECR, CodeBuild and Lambda stubbed at the SDK edge, answering a real HTTP
server in CloudFormation's place (tests/infra/image_build_harness.py):

- a duplicate delivery of one request ("it's possible for it to receive the same event from Lambda multiple times",
  Lambda Developer Guide) is one build;
- no build-ended event is needed: the watch polls the build, and hands itself to a new invocation before its own
  runs out;
- a build that failed after another build pushed the tag is a SUCCESS (the repository's tags are immutable, so the
  second push fails);
- a retry after a build CloudFormation gave up on (it still runs, or it has pushed) fails nothing and starts no
  second build;
- no value of the request reaches a build's variables, and no answer is sent before the tag is checked."""

from __future__ import annotations

import pytest
from image_build_harness import (
    FUNCTION,
    LOG_LINK,
    POLL_SECONDS,
    PROJECT,
    REPOSITORY,
    TAG,
    Clock,
    CloudFormation,
    Context,
    Edge,
    build_record,
    image_builds,
    index,
    properties,
    stack_event,
    timing,
)

from peagle_cdk.serving_image_build import CUSTOM_RESOURCE_TYPE

BUILD = f"{PROJECT}:11111111-aaaa"
OTHER = f"{PROJECT}:22222222-bbbb"


@pytest.fixture(scope="module")
def build_resource(default_synth) -> dict:
    (resource,) = default_synth.resources("PeagleEndpoint", CUSTOM_RESOURCE_TYPE).values()
    return resource


@pytest.fixture
def cloudformation():
    with CloudFormation() as server:
        yield server


def _create(build_resource, url: str, request_id: str = "request-1") -> dict:
    return stack_event("Create", url, properties(build_resource), request_id=request_id)


def _run(event: dict, edge: Edge, clock: Clock, seconds: float = 900.0) -> None:
    context = Context(clock, seconds)
    with edge:
        if index.WATCH_KEY in event:
            index.watch_build(event, context, edge.clients, timing(clock))
        else:
            index.on_stack_event(event, context, edge.clients, timing(clock))
        edge.assert_all_used()


# --- a duplicate request ---------------------------------------------------------------------------------------------


def test_a_duplicate_delivery_of_one_request_starts_the_same_build(build_resource, cloudformation):
    """The build is not yet listed when the duplicate arrives: both start with the request's token, which CodeBuild
    keeps for 5 minutes, and neither changes a parameter, so CodeBuild returns the one build to both."""
    event, clock = _create(build_resource, cloudformation.url), Clock()
    token = image_builds.idempotency_token(event)
    edges = []
    for _ in range(2):  # the same event, delivered twice
        edge = Edge()
        edge.image_missing()
        edge.builds_listed()  # the first start is not listed yet
        edge.build_started(BUILD, token)
        edge.watcher_invoked()
        edge.build_polled(BUILD, "SUCCEEDED")
        edge.image_found()
        edge.image_found()
        _run(event, edge, clock)
        edges.append(edge)
    (first,), (second,) = edges[0].started, edges[1].started
    assert first == second and first["idempotencyToken"] == token
    # Another request (another RequestId) is another token: a redeploy is not mistaken for a duplicate.
    assert image_builds.idempotency_token({**event, "RequestId": "request-2"}) != token
    assert [answer["Status"] for answer in cloudformation.answers] == ["SUCCESS", "SUCCESS"]


def test_a_duplicate_that_finds_the_first_build_running_starts_none(build_resource, cloudformation):
    event, clock, edge = _create(build_resource, cloudformation.url), Clock(), Edge()
    edge.image_missing()
    edge.builds_listed(build_record(BUILD, "IN_PROGRESS"))  # no start_build queued: a StartBuild would fail the test
    edge.watcher_invoked()
    edge.build_polled(BUILD, "SUCCEEDED")
    edge.image_found()
    edge.image_found()
    _run(event, edge, clock)
    assert edge.started == []
    (answer,) = cloudformation.answers
    assert answer["Status"] == "SUCCESS" and answer["Data"] == {"ImageTag": TAG}


def test_a_lookup_codebuild_refuses_still_starts_the_build_and_fails_nothing(build_resource, cloudformation):
    """Finding a running build saves a second one; when CodeBuild cannot answer, the build starts with the token."""
    event, clock, edge = _create(build_resource, cloudformation.url), Clock(), Edge()
    edge.image_missing()
    edge.listing_refused()
    edge.build_started(BUILD, image_builds.idempotency_token(event))
    edge.watcher_invoked()
    edge.build_polled(BUILD, "SUCCEEDED")
    edge.image_found()
    edge.image_found()
    _run(event, edge, clock)
    assert [answer["Status"] for answer in cloudformation.answers] == ["SUCCESS"]


# --- a lost build-ended event --------------------------------------------------------------------------------------


def test_the_end_of_a_build_is_found_by_polling_without_any_event(build_resource, cloudformation):
    """No CodeBuild "Build State Change" event is delivered in this test, nor needed: the watch polls BatchGetBuilds
    every POLL_SECONDS and answers when it sees the build end."""
    event, clock, edge = _create(build_resource, cloudformation.url), Clock(), Edge()
    edge.image_missing()
    edge.builds_listed()
    edge.build_started(BUILD, image_builds.idempotency_token(event))
    edge.watcher_invoked()
    for status in ("IN_PROGRESS", "IN_PROGRESS", "SUCCEEDED"):
        edge.build_polled(BUILD, status)
    edge.image_found()
    edge.image_found()
    _run(event, edge, clock)
    assert clock.sleeps == [POLL_SECONDS, POLL_SECONDS]
    (answer,) = cloudformation.answers
    assert answer["Status"] == "SUCCESS" and answer["RequestId"] == "request-1"
    assert answer["PhysicalResourceId"] == f"{REPOSITORY}:{TAG}"


def test_the_watch_hands_itself_on_before_its_invocation_times_out_and_the_next_one_answers(
    build_resource, cloudformation
):
    event, clock, edge = _create(build_resource, cloudformation.url), Clock(), Edge()
    edge.image_missing()
    edge.builds_listed()
    edge.build_started(BUILD, image_builds.idempotency_token(event))
    edge.watcher_invoked()  # the second watch chain
    edge.build_polled(BUILD, "IN_PROGRESS")
    edge.watcher_invoked()  # this chain's next invocation: 75 s left is less than a poll and the margin
    _run(event, edge, clock, seconds=75)
    assert clock.sleeps == []  # no poll's wait that would leave less than the hand-off margin
    assert cloudformation.answers == []  # nothing answered yet: the build runs
    second, successor = edge.invoked
    assert second[index.WATCH_KEY] | {"Watcher": "A"} == successor[index.WATCH_KEY] | {"Hop": 0}
    assert successor[index.WATCH_KEY]["Hop"] == 1 and successor[index.WATCH_KEY]["BuildId"] == BUILD
    assert successor["ResponseURL"] == cloudformation.url  # the request travels in the event, and only there

    # The next invocation (from that event alone) sees the build end and answers.
    edge = Edge()
    edge.build_polled(BUILD, "SUCCEEDED")
    edge.image_found()
    edge.image_found()
    _run(successor, edge, clock)
    (answer,) = cloudformation.answers
    assert answer["Status"] == "SUCCESS"


def test_either_watch_chain_alone_answers_so_one_lost_event_loses_no_answer(build_resource, cloudformation):
    """The first invocation starts a second, independent chain; if every event of chain A after the first were lost,
    chain B's first event is enough."""
    event, clock, edge = _create(build_resource, cloudformation.url), Clock(), Edge()
    edge.image_missing()
    edge.builds_listed()
    edge.build_started(BUILD, image_builds.idempotency_token(event))
    edge.watcher_invoked()
    edge.build_polled(BUILD, "IN_PROGRESS")
    edge.watcher_invoked()
    _run(event, edge, clock, seconds=75)
    chain_b = edge.invoked[0]
    assert chain_b[index.WATCH_KEY]["Watcher"] == "B" and chain_b[index.WATCH_KEY]["Hop"] == 0
    edge = Edge()
    edge.build_polled(BUILD, "SUCCEEDED")
    edge.image_found()
    edge.image_found()
    _run(chain_b, edge, clock)
    assert [answer["Status"] for answer in cloudformation.answers] == ["SUCCESS"]


# --- a build that failed after another pushed the tag ------------------------------------------------------------


def test_a_build_that_failed_after_another_pushed_the_tag_is_a_success(build_resource, cloudformation):
    """Its push met the immutable tag another build had pushed (ImageTagAlreadyExistsException): the image the
    request asked for exists."""
    event, clock, edge = _create(build_resource, cloudformation.url), Clock(), Edge()
    edge.image_missing()
    edge.builds_listed()
    edge.build_started(BUILD, image_builds.idempotency_token(event))
    edge.watcher_invoked()
    edge.build_polled(BUILD, "FAILED")
    edge.image_found()  # the tag is there: no other build is looked for
    edge.image_found()
    _run(event, edge, clock)
    (answer,) = cloudformation.answers
    assert answer["Status"] == "SUCCESS" and answer["Data"] == {"ImageTag": TAG}


def test_a_build_that_failed_while_another_build_of_the_image_runs_waits_for_that_one(build_resource, cloudformation):
    event, clock, edge = _create(build_resource, cloudformation.url), Clock(), Edge()
    edge.image_missing()
    edge.builds_listed()
    edge.build_started(BUILD, image_builds.idempotency_token(event))
    edge.watcher_invoked()
    edge.build_polled(BUILD, "FAILED")
    edge.image_missing()
    edge.builds_listed(build_record(OTHER, "IN_PROGRESS"), build_record(BUILD, "FAILED"))
    edge.build_polled(OTHER, "SUCCEEDED")
    edge.image_found()
    edge.image_found()
    _run(event, edge, clock)
    (answer,) = cloudformation.answers
    assert answer["Status"] == "SUCCESS"


@pytest.mark.parametrize("status", ["FAILED", "TIMED_OUT", "STOPPED", "FAULT"])
def test_a_build_that_ended_otherwise_without_the_tag_fails_the_resource_with_its_log(
    build_resource, cloudformation, status
):
    event, clock, edge = _create(build_resource, cloudformation.url), Clock(), Edge()
    edge.image_missing()
    edge.builds_listed()
    edge.build_started(BUILD, image_builds.idempotency_token(event))
    edge.watcher_invoked()
    edge.build_polled(BUILD, status)
    edge.image_missing()
    edge.builds_listed(build_record(BUILD, status))  # no other build of the image runs
    edge.image_missing()  # checked once more before the answer
    _run(event, edge, clock)
    (answer,) = cloudformation.answers
    assert answer["Status"] == "FAILED"
    assert f"the serving image build {BUILD} ended {status}; its log: {LOG_LINK}" == answer["Reason"]


def test_past_the_deadline_the_tag_decides(build_resource, cloudformation):
    watched = {"BuildId": BUILD, "Deadline": Clock().now() - 1, "Hop": 3, "Watcher": "A"}
    for exists, status in ((True, "SUCCESS"), (False, "FAILED")):
        event = {**_create(build_resource, cloudformation.url), index.WATCH_KEY: watched}
        edge = Edge()
        edge.build_polled(BUILD, "IN_PROGRESS")
        edge.image_found() if exists else edge.image_missing()
        _run(event, edge, Clock())
        assert cloudformation.answers[-1]["Status"] == status
    assert "was still IN_PROGRESS past its queue and build timeouts" in cloudformation.answers[-1]["Reason"]


# --- a retry after a timed-out build -----------------------------------------------------------------------------------


def test_a_redeploy_while_the_build_cloudformation_gave_up_on_still_runs_watches_it(build_resource, cloudformation):
    """The earlier request timed out and the stack rolled back; the redeploy (a new request) adopts the build still
    running instead of starting a second one that would fail its push."""
    event, clock, edge = _create(build_resource, cloudformation.url, request_id="request-2"), Clock(), Edge()
    edge.image_missing()
    edge.builds_listed(build_record(BUILD, "IN_PROGRESS"), build_record(OTHER, "IN_PROGRESS", tag="peagle-other"))
    edge.watcher_invoked()
    edge.build_polled(BUILD, "IN_PROGRESS")
    edge.build_polled(BUILD, "SUCCEEDED")
    edge.image_found()
    edge.image_found()
    _run(event, edge, clock)
    assert edge.started == []
    (answer,) = cloudformation.answers
    assert answer["Status"] == "SUCCESS" and answer["RequestId"] == "request-2"


def test_a_redeploy_after_that_build_pushed_answers_at_once(build_resource, cloudformation):
    event, clock, edge = _create(build_resource, cloudformation.url, request_id="request-2"), Clock(), Edge()
    edge.image_found()
    edge.image_found()
    _run(event, edge, clock)  # nothing else queued: any CodeBuild or Lambda call would fail the test
    (answer,) = cloudformation.answers
    assert answer["Status"] == "SUCCESS"


# --- nothing of the request in a build ----------------------------------------------------------------------------


def test_no_value_of_the_request_reaches_the_build(build_resource, cloudformation):
    event, clock, edge = _create(build_resource, cloudformation.url), Clock(), Edge()
    edge.image_missing()
    edge.builds_listed()
    edge.build_started(BUILD, image_builds.idempotency_token(event))
    edge.watcher_invoked()
    edge.build_polled(BUILD, "SUCCEEDED")
    edge.image_found()
    edge.image_found()
    _run(event, edge, clock)
    (started,) = edge.started
    request_values = {event[key] for key in ("ResponseURL", "StackId", "RequestId", "LogicalResourceId")}
    variables = started["environmentVariablesOverride"]
    assert {variable["name"] for variable in variables} == {
        "repositoryUri",
        "repositoryName",
        "imageTag",
        "sourceS3Url",
        "baseImage",
    }
    assert not [v for v in variables if any(value in v["value"] for value in request_values)]
    assert "secret-signature" not in repr(started)
    assert started["projectName"] == PROJECT and FUNCTION not in repr(started)
