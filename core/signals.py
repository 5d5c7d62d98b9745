"""Signals that let a lower floor tell a higher one something happened, without importing it.

``capacity_changed``: what the scheduler places jobs on changed (a slave registered, came back,
went offline or stopped accepting jobs; its GPUs; a reservation). clusters and reservations send
it; jobs answers with a scheduler tick once the transaction commits (jobs/apps.py).
"""

from django.dispatch import Signal

capacity_changed = Signal()
