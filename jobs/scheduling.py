"""Bridge between the database and the pure scheduler (filled in by the scheduler work)."""


def impossible_reason_for_request(*, request, project, slaves):
    return None


def tick():
    return None
