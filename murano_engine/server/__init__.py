"""The server side's processes: ``murano-api`` (:mod:`.main` composes the HTTP API,
the web pages and the in-process worker) and the engine worker (:mod:`.worker`)."""
