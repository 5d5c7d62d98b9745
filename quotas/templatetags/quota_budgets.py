"""Template tags of the quotas: when this month's hour budgets renew (docs/quotas.md)."""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils import timezone

from quotas.selectors import month_end

register = template.Library()


@register.simple_tag
def budget_renewal() -> datetime:
    """The first moment of next month (UTC): shown with ``usertime`` in the viewer's zone."""
    return month_end(timezone.now())
