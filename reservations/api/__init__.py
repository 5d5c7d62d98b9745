"""Portal reservation endpoints (``/api/portal/reservations``)."""
