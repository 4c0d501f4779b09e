"""What a REQUEST_CODE_NOT_SUPPORTED answer says about the server: a broker taken for a name
server, or the reverse."""

from __future__ import annotations

import pytest

from orbitmq.protocol import (
    BROKER_REQUEST_CODES,
    NAMESRV_REQUEST_CODES,
    RequestCode,
    ResponseCode,
    wrong_server_problem,
)

NOT_SUPPORTED = ResponseCode.REQUEST_CODE_NOT_SUPPORTED


def test_a_name_server_request_refused_means_a_broker() -> None:
    assert wrong_server_problem(
        "127.0.0.1:10911", RequestCode.GET_ROUTEINFO_BY_TOPIC, NOT_SUPPORTED
    ) == (
        "127.0.0.1:10911 is a broker, not a name server (GET_ROUTEINFO_BY_TOPIC not"
        " supported); use the name server address, e.g. 127.0.0.1:9876"
    )


def test_a_broker_request_refused_means_a_name_server() -> None:
    assert wrong_server_problem(
        "10.0.0.5:9876", RequestCode.UPDATE_AND_CREATE_TOPIC, NOT_SUPPORTED
    ) == (
        "10.0.0.5:9876 is a name server, not a broker (UPDATE_AND_CREATE_TOPIC not"
        " supported); use a broker address, e.g. 10.0.0.5:10911"
    )


def test_the_hint_keeps_an_ipv6_host() -> None:
    problem = wrong_server_problem("[::1]:10911", RequestCode.REGISTER_BROKER, NOT_SUPPORTED)
    assert problem is not None and problem.endswith("e.g. [::1]:9876")


@pytest.mark.parametrize(
    "code",
    [
        RequestCode.CLEAN_UNUSED_TOPIC,  # a broker admin code OrbitMQ does not serve yet
        RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,  # served by clients
        9999,
    ],
)
def test_codes_that_reveal_nothing(code: int) -> None:
    assert wrong_server_problem("127.0.0.1:10911", code, NOT_SUPPORTED) is None


@pytest.mark.parametrize("answer", [ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR])
def test_other_answers_reveal_nothing(answer: ResponseCode) -> None:
    assert wrong_server_problem("127.0.0.1:10911", RequestCode.REGISTER_BROKER, answer) is None


def test_no_code_is_both_kinds() -> None:
    assert not NAMESRV_REQUEST_CODES & BROKER_REQUEST_CODES


@pytest.mark.parametrize("code", [RequestCode.POP_MESSAGE, RequestCode.ACK_MESSAGE])
def test_a_pop_request_refused_reveals_nothing(code: RequestCode) -> None:
    """A RocketMQ 4.x broker serves no POP: its refusal is not a sign of a name server."""
    assert wrong_server_problem("10.0.0.5:10911", code, NOT_SUPPORTED) is None
