"""Job state badges for templates (``{% load job_states %}``)."""

from django import template
from django.utils.html import format_html

from jobs.states import BADGE

register = template.Library()


@register.simple_tag
def state_badge(status, extra_id: str = ""):
    """A coloured badge for a job state, with ``data-state`` for scripts and browser tests."""
    status = str(status)
    colour = BADGE.get(status, "secondary")
    text_class = "text-bg-" + colour
    if colour in ("light", "warning", "info"):
        text_class += " text-dark"
    id_attr = format_html(' id="{}"', extra_id) if extra_id else ""
    return format_html(
        '<span class="badge state-badge {}"{} data-state="{}">{}</span>',
        text_class,
        id_attr,
        status,
        status,
    )
