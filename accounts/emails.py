"""Which e-mail addresses GPULab's client accepts, stated once.

``gpulab-cli`` parses every Job it receives with pydantic's ``EmailStr`` (the ``email-validator``
library, deliverability not checked). An owner address it rejects (``admin@localhost``, anything
under ``.local`` or ``.test``) makes the whole ``jobs`` list unparsable for every member of the
project. So addresses are checked with the same library when users are created or edited, and an
address stored before that rule (or set in the database by hand) is served as GPULab's hidden
placeholder instead of breaking a list.
"""

from functools import lru_cache

from email_validator import EmailNotValidError, validate_email

# GPULab's own placeholder for an address that may not be shown; the client accepts it.
HIDDEN_EMAIL = "hidden@hidden.hidden"


def email_problem(address: str) -> str | None:
    """Why the client would reject ``address`` (None when it accepts it)."""
    try:
        validate_email(address, check_deliverability=False)
    except EmailNotValidError as error:
        return str(error)
    return None


@lru_cache(maxsize=4096)
def email_for_gpulab(address: str | None) -> str:
    """The address to serve in GPULab's JSON: the user's own when the client accepts it."""
    if address and email_problem(address) is None:
        return address
    return HIDDEN_EMAIL
