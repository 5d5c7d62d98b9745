"""Sweeps written as a parameter grid or a list (jobs/spec/array.py): values, paths, the
cartesian product, the bound checked before any combination is made, and what a preview
shows. Pure: no database."""

import pytest

from jobs.spec import SpecError
from jobs.spec.array import (
    MISSING,
    differing_values,
    expand_array,
    grid_parse,
    grid_variations,
    is_array_body,
    list_parse,
    path_patch,
    sweep_body,
    sweep_template,
    sweep_value,
)


def paths(error: SpecError) -> list[tuple[str, str]]:
    return [(e.path, e.message) for e in error.errors]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("32", 32),
        ("-1", -1),
        ("0.1", "0.1"),  # a float stays text: an environment value may not be one
        ("1e3", "1e3"),
        ("true", True),
        ("null", None),
        ('"32"', "32"),
        ("[1, 2]", [1, 2]),
        ('{"a": 1}', {"a": 1}),
        (" adam ", "adam"),
        ("[not json", "[not json"),
    ],
)
def test_values(text, value):
    assert sweep_value(text) == value


def test_path_patch_nests_the_value():
    assert path_patch("request.docker.environment.LR", "0.1") == {
        "request": {"docker": {"environment": {"LR": "0.1"}}}
    }
    assert path_patch("description", "x") == {"description": "x"}


def test_grid_is_the_cartesian_product_first_parameter_slowest():
    grid = grid_parse(
        "# learning rates\nrequest.docker.environment.LR = 0.1, 0.01\n\n"
        "request.docker.environment.BATCH = [32, 64]\ndescription = a, b, c",
        max_jobs=100,
    )
    variations = grid_variations(grid)
    assert len(variations) == 12
    assert variations[0] == {
        "request": {"docker": {"environment": {"LR": "0.1", "BATCH": 32}}},
        "description": "a",
    }
    assert variations[-1] == {
        "request": {"docker": {"environment": {"LR": "0.01", "BATCH": 64}}},
        "description": "c",
    }
    assert len({repr(v) for v in variations}) == 12  # every combination once


def test_grid_errors_name_the_field_and_line():
    with pytest.raises(SpecError) as caught:
        grid_parse("LR 0.1\n.bad. = 1\ndescription =\nname = a\nname = b", max_jobs=10)
    assert paths(caught.value) == [
        ("sweep_grid", "line 1: write path = value"),
        ("sweep_grid", "line 2: '.bad.' is not a dotted path (e.g. request.docker.environment.LR)"),
        ("sweep_grid", "line 3: description has no values"),
        ("sweep_grid", "line 5: name is given twice"),
    ]
    with pytest.raises(SpecError) as caught:
        grid_parse("  \n# nothing\n", max_jobs=10)
    assert paths(caught.value)[0][0] == "sweep_grid"


def test_a_grid_over_the_bound_is_refused_before_it_is_made():
    # 10^9 combinations: refused by counting, never expanded.
    text = "\n".join(f"p{i} = " + ", ".join(str(v) for v in range(10)) for i in range(9))
    with pytest.raises(SpecError) as caught:
        grid_parse(text, max_jobs=1000)
    [(path, message)] = paths(caught.value)
    assert path == "sweep_grid" and "= 1000000000 jobs: at most 1000 jobs per sweep" in message


def test_list_lines_are_assignments_or_merge_patches():
    variations = list_parse(
        'request.resources.gpus = 2; description = big\n{"description": null}\n', max_jobs=5
    )
    assert variations == [
        {"request": {"resources": {"gpus": 2}}, "description": "big"},
        {"description": None},  # a merge patch: null removes the key
    ]
    with pytest.raises(SpecError) as caught:
        list_parse('{"a": \nx = 1\nx = 2\n', max_jobs=1)
    assert [p for p, _m in paths(caught.value)] == ["sweep_list", "sweep_list"]
    assert paths(caught.value)[0][1].startswith("line 1: not JSON")
    assert paths(caught.value)[1][1] == "2 lines: at most 1 jobs per sweep"


def test_template_name_gains_the_index_once():
    assert sweep_template({"name": "train"})["name"] == "train-${index}"
    assert sweep_template({"name": "t${index}x"})["name"] == "t${index}x"


def test_sweep_body_from_the_section_or_the_pasted_document():
    job = {"name": "t", "request": {"docker": {"image": "x"}}}
    assert sweep_body(job, mode="", grid="a = 1", listed="", max_jobs=5) is None
    body = sweep_body(job, mode="grid", grid="description = a, b", listed="", max_jobs=5)
    documents, name = expand_array(body, max_jobs=5)
    assert name == "variations" and [d["name"] for d in documents] == ["t-0", "t-1"]
    assert [d["description"] for d in documents] == ["a", "b"]
    pasted = {"template": job, "variations": [{}]}
    assert is_array_body(pasted) and is_array_body({"jobs": []}) and not is_array_body(job)
    assert sweep_body(pasted, mode="", grid="", listed="", max_jobs=5) is pasted
    with pytest.raises(SpecError) as caught:
        sweep_body(pasted, mode="list", grid="", listed="a = 1", max_jobs=5)
    assert paths(caught.value)[0][0] == "sweep_mode"


def test_differing_values_are_what_a_preview_shows():
    documents = [
        {"name": "t-0", "request": {"docker": {"image": "x", "environment": {"LR": "0.1"}}}},
        {"name": "t-1", "request": {"docker": {"image": "x", "environment": {}}}},
    ]
    columns, rows = differing_values(documents)
    assert columns == ["name", "request.docker.environment.LR", "request.docker.environment"]
    assert rows[0][:2] == ["t-0", "0.1"] and rows[1][1] is MISSING
    assert differing_values([documents[0], documents[0]]) == ([], [[], []])
