"""The agent tests' result reader leaves nothing on the broker once closed."""

from __future__ import annotations

import kombu
import pytest
from amqp.exceptions import NotFound

from tests.agent.agent_harness import AMQP_URL, ResultReader, require_broker


def test_a_closed_result_reader_leaves_neither_its_queue_nor_its_exchange():
    require_broker()
    reader = ResultReader()
    name = reader.queue
    reader.close()
    with kombu.Connection(AMQP_URL, connect_timeout=3) as connection:
        for declare in (lambda c: c.queue_declare(name, passive=True),
                        lambda c: c.exchange_declare(name, "direct", passive=True)):
            with pytest.raises(NotFound):
                declare(connection.channel())
