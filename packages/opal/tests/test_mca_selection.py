"""Discovery and selection of components, with throw-away plug-in packages installed per test."""

from __future__ import annotations

import pytest

from ompy.opal.mca import (
    Cardinality,
    Component,
    ComponentLoadError,
    Framework,
    NoComponentError,
    Selection,
    SelectionSyntaxError,
    open_and_select_one,
    open_framework,
)
from ompy.opal.mca.params import ParamValueError, Registry

ONE = Framework("widget", "opal", "test framework", (1, 0), Cardinality.ONE)
MANY = Framework("gadget", "opal", "test framework", (1, 0), Cardinality.MANY)

COMPONENT = """
from ompy.opal.mca import Component, Offer

class {cls}(Component):
    framework = "{framework}"
    name = "{name}"
    version = "2.3.4"
    interface_version = ({major}, 0)
    default_priority = {priority}

    def query(self, context):
        if {declines}:
            return None
        return Offer(self.priority, ("{name}", context))
"""


def test_a_framework_takes_its_name_and_interface_version_from_its_component_base_class():
    class WidgetComponent(Component[None, str]):
        framework = "widget"
        interface_version = (3, 1)

    described = Framework.of(WidgetComponent, "opal", Cardinality.MANY, "widgets")

    assert described == Framework("widget", "opal", "widgets", (3, 1), Cardinality.MANY)
    assert described.group == "ompy.mca.widget"


def component(framework, name, priority, *, major=1, declines=False, extra=""):
    source = COMPONENT.format(
        cls=name.capitalize(),
        framework=framework.name,
        name=name,
        major=major,
        priority=priority,
        declines=declines,
    )
    return source + extra


def install(distributions, framework, name, source):
    module = f"fake_{framework.name}_{name}"
    distributions.add(
        f"fake-{framework.name}-{name}",
        {framework.group: {name: f"{module}:{name.capitalize()}"}},
        {f"{module}.py": source},
    )


@pytest.fixture
def three(distributions):
    for name, priority in [("alpha", 10), ("beta", 30), ("gamma", 20)]:
        install(distributions, ONE, name, component(ONE, name, priority))
        install(distributions, MANY, name, component(MANY, name, priority))
    return distributions


def registry(**env):
    return Registry(environ={f"OMPY_MCA_{k}": v for k, v in env.items()}, files=[])


# -- selection lists -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "include", "exclude"),
    [
        ("", (), ()),
        ("a", ("a",), ()),
        ("a,b", ("a", "b"), ()),
        ("^a", (), ("a",)),
        ("^a,b", (), ("a", "b")),
        ("^a,^b", (), ("a", "b")),
    ],
)
def test_selection_lists_parse_as_open_mpi_users_expect(text, include, exclude):
    assert Selection.parse(text) == Selection(include, exclude)


@pytest.mark.parametrize("text", ["a,^b", "^a,b,^c"])
def test_mixing_include_and_exclude_is_an_error(text):
    with pytest.raises(SelectionSyntaxError, match="mixes included and excluded"):
        Selection.parse(text, param="btl")


def test_a_mixed_list_error_says_where_it_came_from(three):
    with pytest.raises(SelectionSyntaxError, match=r"environment \(OMPY_MCA_widget\)"):
        open_framework(ONE, registry(widget="alpha,^beta"))


# -- one-of-many and many-of-many ----------------------------------------------------------


def test_one_of_many_picks_the_highest_priority(three):
    component, offer = open_framework(ONE, registry()).select_one("ctx")
    assert (component.name, offer.priority, offer.module) == ("beta", 30, ("beta", "ctx"))


def test_ties_are_broken_by_name(distributions):
    install(distributions, ONE, "zeta", component(ONE, "zeta", 5))
    install(distributions, ONE, "eta", component(ONE, "eta", 5))
    component_, _ = open_framework(ONE, registry()).select_one()
    assert component_.name == "eta"


def test_many_of_many_keeps_every_offer_best_first(three):
    offers = open_framework(MANY, registry()).select()
    assert [(c.name, o.priority) for c, o in offers] == [("beta", 30), ("gamma", 20), ("alpha", 10)]


def test_a_priority_parameter_reorders_the_choice(three):
    chosen, offer = open_framework(ONE, registry(widget_alpha_priority="99")).select()
    assert (chosen.name, offer.priority) == ("alpha", 99)


def test_an_include_list_restricts_the_choice(three):
    chosen, _ = open_framework(ONE, registry(widget="alpha,gamma")).select()
    assert chosen.name == "gamma"


def test_an_exclude_list_removes_components(three):
    offers = open_framework(MANY, registry(gadget="^beta")).select()
    assert [c.name for c, _ in offers] == ["gamma", "alpha"]


def test_a_declining_component_is_skipped(distributions):
    install(distributions, ONE, "shy", component(ONE, "shy", 90, declines=True))
    install(distributions, ONE, "bold", component(ONE, "bold", 1))
    chosen, _ = open_framework(ONE, registry()).select()
    assert chosen.name == "bold"


def test_nobody_offering_is_a_clear_error(distributions):
    install(distributions, ONE, "shy", component(ONE, "shy", 90, declines=True))
    with pytest.raises(NoComponentError, match=r"no widget component is able to run here.*shy"):
        open_framework(ONE, registry()).select_one()


def test_closing_closes_every_component(distributions):
    import builtins

    extra = """
    def close(self):
        import builtins
        builtins.closed_widgets.append(self.name)
"""

    builtins.closed_widgets = []
    install(distributions, ONE, "alpha", component(ONE, "alpha", 1, extra=extra))
    opened = open_framework(ONE, registry())
    opened.close()
    assert builtins.closed_widgets == ["alpha"]
    del builtins.closed_widgets


# -- failures --------------------------------------------------------------------------------


BROKEN = "raise ImportError('needs libfrobnicate')\n"


def test_a_component_that_fails_to_load_is_reported_and_skipped(three):
    install(three, ONE, "broken", BROKEN)
    opened = open_framework(ONE, registry())
    assert [f.name for f in opened.failures] == ["broken"]
    assert "ImportError: needs libfrobnicate" in opened.failures[0].reason
    assert opened.select()[0].name == "beta"


def test_a_requested_component_that_fails_to_load_is_an_error(three):
    install(three, ONE, "broken", BROKEN)
    with pytest.raises(ComponentLoadError, match=r"'broken' was requested.*libfrobnicate"):
        open_framework(ONE, registry(widget="broken"))


def test_a_requested_component_that_is_not_installed_is_an_error(three):
    with pytest.raises(ComponentLoadError, match=r"no widget component named 'nope'.*alpha, beta"):
        open_framework(ONE, registry(widget="nope"))


def test_an_excluded_component_is_never_imported(three):
    install(three, ONE, "broken", BROKEN)
    opened = open_framework(ONE, registry(widget="^broken"))
    assert opened.failures == []


def test_a_component_for_another_interface_major_version_is_refused(three):
    install(three, ONE, "future", component(ONE, "future", 99, major=2))
    opened = open_framework(ONE, registry())
    (failure,) = opened.failures
    assert "implements interface version 2.0" in failure.reason
    assert "provides version 1.x" in failure.reason
    assert opened.select()[0].name == "beta"
    with pytest.raises(ComponentLoadError, match=r"interface version 2\.0"):
        open_framework(ONE, registry(widget="future"))


def test_an_entry_point_that_is_not_a_component_is_refused(distributions):
    distributions.add("junk", {ONE.group: {"junk": "os:getcwd"}})
    (failure,) = open_framework(ONE, registry()).failures
    assert "not an ompy component class" in failure.reason


def test_one_name_from_two_distributions_is_an_error_not_an_override(distributions):
    install(distributions, ONE, "twin", component(ONE, "twin", 1))
    distributions.add(
        "other-twin",
        {ONE.group: {"twin": "other_twin:Twin"}},
        {"other_twin.py": component(ONE, "twin", 2)},
    )
    opened = open_framework(ONE, registry())
    (failure,) = opened.failures
    assert "registered by more than one package" in failure.reason
    with pytest.raises(ComponentLoadError, match="more than one package"):
        open_framework(ONE, registry(widget="twin"))


def test_a_component_whose_open_fails_is_reported(three):
    extra = "\n    def open(self):\n        raise RuntimeError('no device')\n"
    install(three, ONE, "flaky", component(ONE, "flaky", 99, extra=extra))
    opened = open_framework(ONE, registry())
    assert [(f.name, f.reason) for f in opened.failures] == [("flaky", "open failed: no device")]


def test_a_component_whose_constructor_fails_is_reported(three):
    extra = """
    def __init__(self, registry):
        raise RuntimeError('bad constructor')
"""
    install(three, ONE, "weird", component(ONE, "weird", 99, extra=extra))
    opened = open_framework(ONE, registry())
    failures = [(f.name, f.reason) for f in opened.failures]
    assert failures == [("weird", "open failed: bad constructor")]
    assert opened.select()[0].name == "beta"


def test_everything_mode_loads_excluded_components_too(three):
    opened = open_framework(ONE, registry(widget="alpha"), everything=True)
    assert sorted(c.name for c in opened.components) == ["alpha", "beta", "gamma"]


def test_components_register_their_priority_parameter(three):
    reg = registry()
    open_framework(ONE, reg)
    assert reg.resolve("widget_beta_priority").value == 30
    assert reg.resolve("widget_beta_priority").spec.scope == ("widget", "beta")


def test_open_and_select_one_closes_the_framework_when_nobody_offers(distributions):
    import builtins

    builtins.closed_widgets = []
    extra = """
    def close(self):
        import builtins
        builtins.closed_widgets.append(self.name)
"""
    install(distributions, ONE, "shy", component(ONE, "shy", 9, declines=True, extra=extra))
    with pytest.raises(NoComponentError):
        open_and_select_one(ONE, registry())
    assert builtins.closed_widgets == ["shy"]
    del builtins.closed_widgets


def test_open_and_select_one_returns_the_open_framework_and_the_winner(three):
    opened, component_, offer = open_and_select_one(ONE, registry(), "ctx")
    assert (component_.name, offer.module) == ("beta", ("beta", "ctx"))
    assert opened.components


def test_a_bad_user_value_for_a_component_parameter_is_an_error_not_a_silent_skip(three):
    extra = """
    def register_params(self):
        super().register_params()
        from ompy.opal.mca.params import ParamType
        self.register_param("mode", ParamType.ENUM, "fast", "How", choices=("fast", "slow"))

    def open(self):
        self.param("mode")
"""
    install(three, ONE, "picky", component(ONE, "picky", 1, extra=extra))
    expected = r"'widget_picky_mode' has the invalid value 'fastest'"
    with pytest.raises(ParamValueError, match=expected):
        open_framework(ONE, registry(widget_picky_mode="fastest"))
