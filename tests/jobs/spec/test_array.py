"""Expanding array bodies: the two forms, the merge patch and ${index}."""

import pytest

from jobs.spec import SpecError
from jobs.spec.array import expand_array, merge_patch, substitute_index


def test_merge_patch_follows_rfc_7386():
    target = {"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]}
    patch = {"a": "z", "c": {"f": None}, "l": [3], "n": {"x": 1}}
    assert merge_patch(target, patch) == {"a": "z", "c": {"d": "e"}, "l": [3], "n": {"x": 1}}
    assert target == {"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]}  # not modified


def test_index_is_substituted_in_values_not_keys():
    value = {"${index}": "run-${index}", "list": ["${index}/${index}", 3, None]}
    assert substitute_index(value, 7) == {"${index}": "run-7", "list": ["7/7", 3, None]}


def test_sweep_expands_in_order_and_keeps_bad_variations_for_their_index():
    documents, name = expand_array(
        {"template": {"name": "j${index}", "x": 1}, "variations": [{"x": 2}, 5, {}]}, max_jobs=10
    )
    assert name == "variations"
    assert documents == [{"name": "j0", "x": 2}, 5, {"name": "j2", "x": 1}]


def test_all_envelope_problems_at_once():
    with pytest.raises(SpecError) as caught:
        expand_array({"jobs": [], "extra": 1, "more": 2}, max_jobs=10)
    assert [str(e) for e in caught.value.errors] == [
        "extra: unknown key (allowed: jobs, template, variations, project)",
        "more: unknown key (allowed: jobs, template, variations, project)",
        "jobs: must not be empty",
    ]


def test_not_an_object():
    with pytest.raises(SpecError) as caught:
        expand_array([{}], max_jobs=10)
    assert caught.value.errors[0].path == "(document)"


def test_swept_documents_share_nothing_with_the_template_or_each_other():
    template = {"name": "n", "request": {"docker": {"environment": {"A": "1"}}, "l": [1, [2]]}}
    body = {"template": template, "variations": [{}, {"request": {"x": {"y": 1}}}]}
    first, second = expand_array(body, max_jobs=10)[0]
    first["request"]["docker"]["environment"]["A"] = "changed"
    first["request"]["l"][1].append(3)
    assert template == {
        "name": "n",
        "request": {"docker": {"environment": {"A": "1"}}, "l": [1, [2]]},
    }
    assert second["request"]["docker"]["environment"] == {"A": "1"}
    assert second["request"]["l"] == [1, [2]]
    assert second["request"]["x"] == {"y": 1}
    assert body["variations"][1] == {"request": {"x": {"y": 1}}}
