"""Service-layer errors that views and the API turn into 4xx answers."""


class ServiceError(Exception):
    """Base class: a refused request, with a message safe to show to the caller."""

    status_code = 400


class NotAllowed(ServiceError):
    """The caller may not do this (not a project member, not an admin)."""

    status_code = 403


class NotFound(ServiceError):
    status_code = 404


class Conflict(ServiceError):
    """The request is valid but the object's state does not allow it now (e.g. a transition)."""

    status_code = 409
