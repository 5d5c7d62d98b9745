"""Limits an admin sets on projects, users and users within a project (docs/quotas.md)."""
