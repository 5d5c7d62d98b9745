"""The bridge turns settings into the pure scheduler's config: scorers and weights included."""

from jobs.apps import check_scorer_weights
from jobs.scheduler import SchedulerConfig
from jobs.scheduler_bridge.snapshot import scheduler_config


def test_default_scorer_weights_match_the_pure_default():
    assert scheduler_config().scorer_weights == SchedulerConfig().scorer_weights
    assert check_scorer_weights() == []


def test_scorer_weights_come_from_settings(settings):
    settings.PORTAL_SCHEDULER_SCORER_WEIGHTS = {"reservation_affinity": 3.0, "packing": 0.5}
    assert scheduler_config().scorer_weights == (("reservation_affinity", 3.0), ("packing", 0.5))


def test_unknown_scorer_fails_the_check(settings):
    settings.PORTAL_SCHEDULER_SCORER_WEIGHTS = {"packing": 1.0, "pakcing": 2.0}
    errors = check_scorer_weights()
    assert [e.id for e in errors] == ["jobs.E001"]
    assert "unknown scorer 'pakcing'" in errors[0].msg
