"""System lifecycle actions on jobs, without permission checks: what the scheduler bridge and
the runtime call (cancel or halt by the system, notifications). User services sit above."""
