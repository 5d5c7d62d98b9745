"""The only bridge between the database and the pure scheduler in ``jobs/scheduler/``.

``snapshot.build_snapshot(now)`` reads everything one cycle needs with a fixed number of
queries (not one per job or slave); ``apply.apply(result, now)`` writes decisions through the
lifecycle actions, with compare-and-swap transitions; ``tick.tick()`` wraps both in the lease
so that at most one tick runs at a time and events during a tick cause exactly one follow-up;
``ticks`` asks for ticks and runs the wakeup timer.

The package imports none of its modules: ``jobs.lifecycle.actions`` asks for a tick through
``ticks`` while ``apply`` calls the lifecycle actions, and a package that imported ``apply``
on the way to ``ticks`` would close that loop.
"""
