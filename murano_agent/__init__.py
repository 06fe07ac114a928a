"""Guest agent: runs execution plans received over RabbitMQ."""

from murano_common.pyyaml import prime_reader_pattern

prime_reader_pattern()  # kombu, which the agent's modules import, imports PyYAML
