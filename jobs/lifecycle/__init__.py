"""System lifecycle actions on jobs, without permission checks: what the scheduler bridge and
the runtime call (cancel or halt by the system; Tapis stages). User services sit above.
(Notifications are the notifications app's, told through jobs/signals.py.)"""
