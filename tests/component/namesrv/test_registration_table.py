"""The name server's registration table and its processors' own code lists agree exactly,
and a code in no table is answered by the remoting layer (REQUEST_CODE_NOT_SUPPORTED)."""

from __future__ import annotations

from collections import defaultdict

from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.remoting import CodeDispatchingProcessor, RemotingClient, RequestProcessor
from tests.component.namesrv.conftest import ControllerFactory

TIMEOUT_S = 5.0


async def test_each_processor_is_registered_for_exactly_its_request_codes(
    controller_factory: ControllerFactory,
) -> None:
    namesrv = await controller_factory()
    codes_of: defaultdict[RequestProcessor, set[int]] = defaultdict(set)
    for code, processor in namesrv.registrations:
        codes_of[processor].add(code)
    assert len(namesrv.registrations) == sum(map(len, codes_of.values()))  # no code twice
    for processor, codes in codes_of.items():
        assert codes == getattr(type(processor), "REQUEST_CODES", None), processor
        if isinstance(processor, CodeDispatchingProcessor):
            assert set(processor.codes) == codes, processor
    served = namesrv.remoting_server.table.registrations
    assert {code: r.processor for code, r in served.items()} == dict(namesrv.registrations)


async def test_a_code_in_no_table_is_not_supported(
    controller_factory: ControllerFactory, client: RemotingClient
) -> None:
    namesrv = await controller_factory()
    assert RequestCode.PULL_MESSAGE not in dict(namesrv.registrations)
    response = await client.invoke(
        namesrv.address, RemotingCommand.create_request(RequestCode.PULL_MESSAGE), TIMEOUT_S
    )
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert response.remark == f" request type {RequestCode.PULL_MESSAGE} not supported"
