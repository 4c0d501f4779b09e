"""The broker's registration table and its processors' own code lists agree exactly, and a
code in no table is answered by the remoting layer (REQUEST_CODE_NOT_SUPPORTED)."""

from __future__ import annotations

from collections import defaultdict

from orbitmq.broker import BrokerController
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.remoting import CodeDispatchingProcessor, RemotingClient, RequestProcessor
from tests.component.broker.conftest import send


def test_each_processor_is_registered_for_exactly_its_request_codes(
    broker: BrokerController,
) -> None:
    codes_of: defaultdict[RequestProcessor, set[int]] = defaultdict(set)
    for code, processor, _ in broker.registrations:
        codes_of[processor].add(code)
    assert len(broker.registrations) == sum(map(len, codes_of.values()))  # no code twice
    for processor, codes in codes_of.items():
        assert codes == getattr(type(processor), "REQUEST_CODES", None), processor
        if isinstance(processor, CodeDispatchingProcessor):
            assert set(processor.codes) == codes, processor
    served = broker.remoting_server.table.registrations
    assert {code: (r.processor, r.executor) for code, r in served.items()} == {
        code: (processor, executor) for code, processor, executor in broker.registrations
    }


async def test_a_code_in_no_table_is_not_supported(
    broker: BrokerController, client: RemotingClient
) -> None:
    assert RequestCode.REGISTER_BROKER not in {code for code, _, _ in broker.registrations}
    response = await send(
        client, broker, RemotingCommand.create_request(RequestCode.REGISTER_BROKER)
    )
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert response.remark == f" request type {RequestCode.REGISTER_BROKER} not supported"
