"""The job domain's events, for the apps one floor above ``jobs`` (gangs, notifications, the
SSH gateway) to act on without ``jobs`` importing them: ``jobs`` sends, they connect receivers
in their ``AppConfig.ready``. One signal per event; each says who sends it, when, and with
which keyword arguments."""

from __future__ import annotations
