"""The web pages of murano-api: catalog, wizard, environments, deployment picture."""
