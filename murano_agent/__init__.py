"""Guest agent: runs execution plans received over RabbitMQ."""
