"""Murano v1 compatible REST API: application catalog, environments and engine workers."""
