"""The site's bounds on the counts and sizes one job request may carry (docs/configuration.md,
"Request bounds"): checked while a document is validated, before anything is expanded or
written, each refusal naming its field (``request.docker.portMappings: must have at most 64
port mappings (this site's limit), not 5000``).

``jobs.actions.services.spec_defaults`` fills them from the PORTAL_MAX_* settings; the defaults
here are those settings' defaults, for callers (and tests) that pass none.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RequestLimits:
    # Port mappings of one job (a task of an OpenPAI job counts as a job): each one is a
    # docker-proxy process on the slave.
    ports_per_job: int = 64
    # Ports of all the tasks of one OpenPAI job together (their host ports come from the range
    # the portal picks from, PORTAL_AUTO_HOST_PORT_RANGE, one per task and port).
    ports_per_gang: int = 1024
    # Tasks of one OpenPAI job (every role's taskNumber together).
    gang_tasks: int = 256
    # A command's characters (a string, or the words of a list together) and words.
    command_chars: int = 32768
    command_words: int = 4096
    # Distinct e-mail addresses one job notifies (emailOn* lists and EMAIL subscriptions).
    email_recipients: int = 20

    def __post_init__(self) -> None:
        # Fail at start-up on a bad setting, not on the first submitted job.
        for name, value in vars(self).items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"request limit {name} must be a positive integer, not {value!r}")


DEFAULT_LIMITS = RequestLimits()
SITE_LIMIT = "this site's limit"
