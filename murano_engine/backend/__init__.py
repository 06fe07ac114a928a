"""What the API and the workers share: the service settings, the database (tables,
migrations, task records), the journal store and the task queues."""
