"""Sandboxed Jinja: templates substitute values; they cannot run code or render forever."""

from __future__ import annotations

import time

import pytest

from cyclesim.errors import SpecError
from cyclesim.spec.templates import render_template


def test_plain_text_is_returned_as_is():
    assert render_template("a: 1\n", "s.yaml", {}) == "a: 1\n"


def test_values_and_loops_render():
    text = "size: {{ n * 8 }}\n{% for i in range(2) %}- {{ i }}\n{% endfor %}"
    assert render_template(text, "s.yaml", {"n": 4}) == "size: 32\n- 0\n- 1\n"


@pytest.mark.parametrize(
    "template",
    [
        "{{ cycler.__init__.__globals__.os.system('touch PWNED') }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ lipsum.__globals__['os'].popen('id').read() }}",
        "{{ joiner.__init__.__globals__ }}",
        "{% set x = [] %}{{ x.append(1) }}",  # immutable: no mutation of values
    ],
)
def test_reaching_python_internals_is_refused(template, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError) as info:
        render_template(template, "s.yaml", {})
    assert str(info.value).startswith(
        "s.yaml:1: the Jinja template tried to reach Python internals"
    )
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize(
    "template, says",
    [
        ("{{ 9**9**9 }}", "larger than 2**128"),
        ("{{ 'x' * 10**9 }}", "a repeated sequence longer than"),
        (
            "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}",
            "loops over range() exceed",
        ),  # fmt: skip
        ("{% for i in range(10**12) %}{% endfor %}", "exceed 200,000 iterations"),
        ("{{ undefined_name }}", "undefined variable"),
        ("{% for %}", "syntax error"),
    ],
)
def test_templates_that_would_run_forever_are_stopped(template, says):
    start = time.process_time()
    with pytest.raises(SpecError, match=None) as info:
        render_template(template, "s.yaml", {})
    assert says in str(info.value)
    assert time.process_time() - start < 2
