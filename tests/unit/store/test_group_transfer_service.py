"""GroupTransferService on its own: a report answers exactly the requests it covers, a
request a slave already covers is answered at once, and requests whose waiters gave up do
not pile up while a slave stays silent."""

from __future__ import annotations

from orbitmq.store import GroupCommitRequest, PutMessageStatus
from orbitmq.store.ha.group_transfer_service import GroupTransferService


def test_a_report_answers_the_requests_it_covers_and_no_others() -> None:
    service = GroupTransferService()
    requests = [GroupCommitRequest(end) for end in (100, 200, 300)]
    for request in requests:
        service.put_request(request)
    assert service.notify_transfer_some(200)
    assert [r.future is not None and r.future.done() for r in requests] == [True, True, False]
    assert requests[0].wait(0, PutMessageStatus.FLUSH_SLAVE_TIMEOUT) is PutMessageStatus.PUT_OK
    assert service.waiting == 1
    assert not service.notify_transfer_some(150)  # an older report moves nothing
    assert service.push2_slave_max_offset == 200


def test_a_request_already_covered_is_answered_at_once() -> None:
    service = GroupTransferService()
    service.notify_transfer_some(500)
    request = GroupCommitRequest(400)
    service.put_request(request)
    assert request.wait(0, PutMessageStatus.FLUSH_SLAVE_TIMEOUT) is PutMessageStatus.PUT_OK
    assert service.waiting == 0


def test_abandoned_requests_are_pruned() -> None:
    service = GroupTransferService()
    for end in range(1, 5000):
        request = GroupCommitRequest(end)
        service.put_request(request)
        timed_out = request.wait(0, PutMessageStatus.FLUSH_SLAVE_TIMEOUT)
        assert timed_out is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
    assert service.waiting < 4096
