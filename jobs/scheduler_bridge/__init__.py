"""The only bridge between the database and the pure scheduler in ``jobs/scheduler/``.

``snapshot.build_snapshot(now)`` reads everything one cycle needs with a fixed number of
queries (not one per job or slave); ``apply.apply(result, now)`` writes decisions through the
system actions, with compare-and-swap transitions; ``tick.tick()`` wraps both in the lease
so that at most one tick runs at a time and events during a tick cause exactly one follow-up.
Asking for a tick (on an event, or at the stored wakeup) is ``jobs.wakeups``, a room below the
runtime and the system actions that ask for ticks.
"""
