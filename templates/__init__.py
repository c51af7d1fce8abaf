"""The audit report's jinja2 templates and stylesheet, package data (xai_plugins.templates)."""

__all__: list[str] = []
