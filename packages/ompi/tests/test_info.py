"""``ompy info``: what is installed, how it is configured, and what is broken, shown in place.

Each test installs a throw-away distribution on a private ``sys.path`` entry (exactly the
metadata ``pip install`` would leave behind) that publishes a test layer, a working test
framework ``infotest`` with two working components, a component that raises on import, one
that fails to open, one built for another interface version, and a framework whose module does
not exist.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import ompy.ompi
import ompy.opal
import ompy.orte
from ompy.opal.mca.entry_points import forget as forget_entry_points
from ompy.orte.cli.main import main

FRAMEWORK_MODULE = """
from ompy.opal.layer import Layer
from ompy.opal.mca import Cardinality, Framework
from ompy.opal.mca.params import ParamType

framework = Framework(
    "infotest", "opal", "a framework for testing ompy info", (1, 0), Cardinality.ONE
)


def _register(registry):
    registry.register(
        "infolayer_answer", ParamType.INT, 42, "A layer-wide parameter of the test layer", level=2
    )


layer = Layer("infolayer", "info-layer", "7.0", "a layer for testing", _register)
"""

COMPONENTS_MODULE = """
from ompy.opal.mca import Component, Offer
from ompy.opal.mca.params import ParamType


class Good(Component):
    framework = "infotest"
    name = "good"
    version = "2.5.0"
    interface_version = (1, 0)
    description = "answers with its color"
    default_priority = 30

    def register_params(self):
        super().register_params()
        self.register_param(
            "color", ParamType.ENUM, "blue", "Color of the answer", level=3,
            choices=("red", "blue"),
        )
        self.register_param("size", ParamType.INT, 4, "Size of the answer", level=7, minimum=1)

    def query(self, context):
        return Offer(self.priority, self.param("color"))


class Spare(Component):
    framework = "infotest"
    name = "spare"
    version = "0.3"
    interface_version = (1, 2)
    default_priority = 5

    def query(self, context):
        return Offer(self.priority, "spare")


class Grumpy(Component):
    framework = "infotest"
    name = "grumpy"
    version = "1.1"
    interface_version = (1, 0)

    def open(self):
        raise RuntimeError("cannot open the device")


class Old(Component):
    framework = "infotest"
    name = "old"
    version = "0.1"
    interface_version = (0, 9)
"""

BROKEN_MODULE = """
raise RuntimeError("this plug-in is broken on purpose")
"""

ENTRY_POINTS = """
[ompy.layers]
infolayer = info_fixture_fw:layer

[ompy.frameworks]
infotest = info_fixture_fw:framework
infobroken = info_fixture_nosuch:framework

[ompy.mca.infotest]
good = info_fixture_components:Good
spare = info_fixture_components:Spare
old = info_fixture_components:Old
grumpy = info_fixture_components:Grumpy
broken = info_fixture_broken:Broken
"""

FIXTURE_MODULES = ("info_fixture_fw", "info_fixture_components", "info_fixture_broken")


def write_fixture_distribution(root: Path) -> None:
    """What ``pip install info-fixture`` would leave in site-packages."""
    (root / "info_fixture_fw.py").write_text(textwrap.dedent(FRAMEWORK_MODULE))
    (root / "info_fixture_components.py").write_text(textwrap.dedent(COMPONENTS_MODULE))
    (root / "info_fixture_broken.py").write_text(textwrap.dedent(BROKEN_MODULE))
    dist_info = root / "info_fixture-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: info-fixture\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text(ENTRY_POINTS.lstrip())


@pytest.fixture
def site(tmp_path, monkeypatch) -> Path:
    """The fixture distribution on ``sys.path``, and no user settings from outside the test."""
    root = tmp_path / "site"
    root.mkdir()
    write_fixture_distribution(root)
    for var in list(os.environ):
        if var.startswith("OMPY_MCA_"):
            monkeypatch.delenv(var)
    monkeypatch.setenv("OMPY_MCA_PARAM_FILES", "")
    monkeypatch.syspath_prepend(str(root))
    forget_entry_points()
    yield root
    forget_entry_points()
    for name in FIXTURE_MODULES:
        sys.modules.pop(name, None)


def run_info(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, ["info", *args], env=env, catch_exceptions=False)


def lines_of(result) -> list[str]:
    return result.stdout.splitlines()


# -- the listing ---------------------------------------------------------------------------------


def test_lists_every_installed_layer_with_its_version(site):
    result = run_info()
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"opal {ompy.opal.__version__} (ompy-opal)" in out
    assert f"orte {ompy.orte.__version__} (ompy-orte)" in out
    assert f"ompi {ompy.ompi.__version__} (ompy-ompi)" in out
    assert "infolayer 7.0 (info-layer)" in out
    # bottom layer first
    assert out.index("opal 0.1") < out.index("orte 0.1") < out.index("ompi 0.1")


def test_lists_frameworks_with_layer_cardinality_and_interface_version(site):
    out = run_info().stdout
    assert "infotest (opal layer, one-of-many, interface 1.0): a framework for testing" in out


def test_lists_components_with_versions_under_their_framework(site):
    out = lines_of(run_info())
    framework_line = next(i for i, line in enumerate(out) if line.startswith("  infotest "))
    below = out[framework_line + 1 : framework_line + 5]
    assert "      good 2.5.0 (interface 1.0): answers with its color" in below
    assert "      spare 0.3 (interface 1.2)" in below


def test_a_broken_component_is_shown_with_its_error_and_the_rest_still_listed(site):
    result = run_info()
    assert result.exit_code == 0
    out = result.stdout
    assert (
        "      broken: ERROR (info_fixture_broken:Broken): "
        "RuntimeError: this plug-in is broken on purpose"
    ) in out
    assert "old: ERROR (info_fixture_components:Old): " in out
    assert "implements interface version 0.9" in out
    assert "      grumpy: ERROR: open failed: cannot open the device" in out
    assert "good 2.5.0" in out


def test_a_framework_that_cannot_be_loaded_is_shown_with_its_error(site):
    out = run_info().stdout
    assert "infobroken: ERROR: cannot be loaded (info_fixture_nosuch:framework): " in out
    assert "ModuleNotFoundError" in out


def test_parsable_listing_uses_stable_keys(site):
    result = run_info("--parsable")
    assert result.exit_code == 0
    out = set(lines_of(result))
    assert {
        f"layer:opal:version:{ompy.opal.__version__}",
        "layer:opal:distribution:ompy-opal",
        "layer:infolayer:version:7.0",
        "framework:infotest:layer:opal",
        "framework:infotest:cardinality:one-of-many",
        "framework:infotest:interface:1.0",
        "mca:infotest:good:version:2.5.0",
        "mca:infotest:good:interface:1.0",
        "mca:infotest:good:admitted:yes",
        "mca:infotest:broken:error:RuntimeError: this plug-in is broken on purpose",
    } <= out
    assert any(line.startswith("framework:infobroken:error:ModuleNotFoundError") for line in out)
    assert not any(":param:" in line for line in out)  # parameters only with --all or --param


def test_a_component_outside_the_selection_is_still_listed_but_marked(site):
    result = run_info("--parsable", env={"OMPY_MCA_infotest": "^spare"})
    assert "mca:infotest:spare:admitted:no" in lines_of(result)
    assert "mca:infotest:good:admitted:yes" in lines_of(result)
    text = run_info(env={"OMPY_MCA_infotest": "^spare"}).stdout
    assert "spare 0.3 (interface 1.2) [not admitted by the 'infotest' selection]" in text


def test_the_listing_shows_this_machines_architecture(site):
    from ompy.opal.datatype.arch import SIZE_FIELDS, Arch

    local = Arch.local()
    text = run_info().stdout
    assert f"Architecture:\n  byte order: {local.byteorder}-endian\n" in text
    assert f"  long double format: {local.long_double.value} in {local.c_longdouble} bytes" in text
    assert f"sizes in bytes: short {local.c_short}, int {local.c_int}, long {local.c_long}," in text
    assert "presented to peers" not in text
    lines = set(lines_of(run_info("--parsable")))
    assert {
        f"arch:local:byteorder:{local.byteorder}",
        f"arch:local:long_double:{local.long_double.value}",
        f"arch:presented:byteorder:{local.byteorder}",
    } | {f"arch:local:size:{name}:{getattr(local, name)}" for name in SIZE_FIELDS} <= lines


def test_the_listing_says_when_a_foreign_byte_order_is_presented(site):
    other = "big" if sys.byteorder == "little" else "little"
    text = run_info("--mca", "opal_arch_byteorder", other).stdout
    assert f"  presented to peers: {other}-endian by every rank (opal_arch_byteorder;" in text
    lines = lines_of(run_info("--parsable", env={"OMPY_MCA_opal_arch_byteorder": other}))
    assert f"arch:presented:byteorder:{other}" in lines
    assert "arch:presented:ranks:all" in lines
    assert f"arch:local:byteorder:{sys.byteorder}" in lines
    mixed = ("--mca", "opal_arch_byteorder", other, "--mca", "opal_arch_byteorder_ranks", "2,0")
    assert f"{other}-endian by rank 0,2 (" in run_info(*mixed).stdout
    assert "arch:presented:ranks:0,2" in lines_of(run_info(*mixed, "--parsable"))


# -- parameters ----------------------------------------------------------------------------------


def param_names(result) -> set[str]:
    return {line.split(":")[4] for line in lines_of(result) if ":param:" in line}


def test_all_shows_the_listing_and_every_parameter(site):
    result = run_info("--all")
    assert result.exit_code == 0
    out = result.stdout
    assert "Layers:" in out
    assert "  MCA infotest good:" in out
    assert "    infotest_good_color = blue" in out
    assert "        source: default" in out
    assert "        type: enum, one of red|blue; default: blue; level: 3" in out
    assert "        Color of the answer" in out
    assert "    infolayer_answer = 42" in out


def test_param_framework_component_shows_only_that_components_parameters(site):
    result = run_info("--param", "infotest", "good", "--parsable")
    assert result.exit_code == 0
    assert param_names(result) == {
        "infotest_good_color",
        "infotest_good_priority",
        "infotest_good_size",
    }


def test_param_framework_shows_framework_wide_and_all_component_parameters(site):
    names = param_names(run_info("--param", "infotest", "--parsable"))
    assert names == param_names(run_info("--param", "infotest", "all", "--parsable"))
    assert {
        "infotest",
        "infotest_base_verbose",
        "infotest_good_color",
        "infotest_spare_priority",
    } <= names
    assert all(name.startswith("infotest") for name in names)


def test_param_base_shows_the_selection_list_and_framework_wide_parameters(site):
    result = run_info("--param", "infotest", "base", "--parsable")
    assert param_names(result) == {"infotest", "infotest_base_verbose"}
    assert "mca:infotest:base:param:infotest:type:list" in lines_of(result)


def test_param_all_spans_every_framework_and_layer(site):
    names = param_names(run_info("--param", "all", "--parsable"))
    assert {"infotest_good_color", "infolayer_answer", "infotest_base_verbose"} <= names


def test_layer_wide_parameters_are_filed_under_their_prefix_as_base(site):
    result = run_info("--param", "infolayer", "--parsable")
    assert param_names(result) == {"infolayer_answer"}
    assert "mca:infolayer:base:param:infolayer_answer:value:42" in lines_of(result)


def test_level_hides_parameters_above_it(site):
    result = run_info("--param", "all", "--level", "3", "--parsable")
    levels = [int(line.rsplit(":", 1)[1]) for line in lines_of(result) if ":level:" in line]
    assert levels
    assert max(levels) <= 3
    names = param_names(result)
    assert "infotest_good_color" in names  # level 3
    assert "infotest_good_size" not in names  # level 7
    assert "infotest_good_size" in param_names(run_info("--param", "all", "--parsable"))


def test_level_outside_one_to_nine_is_refused(site):
    result = CliRunner().invoke(main, ["info", "--param", "all", "--level", "10"])
    assert result.exit_code == 2
    assert "--level" in result.stderr


def test_parsable_parameter_lines(site):
    lines = lines_of(run_info("--param", "infotest", "good", "--parsable"))
    prefix = "mca:infotest:good:param:infotest_good_color"
    assert [line for line in lines if line.startswith(prefix + ":")] == [
        f"{prefix}:value:blue",
        f"{prefix}:source:default",
        f"{prefix}:type:enum",
        f"{prefix}:default:blue",
        f"{prefix}:level:3",
        f"{prefix}:choices:red|blue",
        f"{prefix}:help:Color of the answer",
    ]
    size = "mca:infotest:good:param:infotest_good_size"
    assert f"{size}:minimum:1" in lines
    assert not any(line.startswith(f"{size}:maximum") for line in lines)


def test_param_on_a_broken_component_explains_why_it_has_no_parameters(site):
    result = run_info("--param", "infotest", "broken")
    assert result.exit_code == 0
    assert "MCA infotest broken: ERROR (its parameters are unknown): RuntimeError" in result.stdout
    parsable = run_info("--param", "infotest", "broken", "--parsable")
    assert lines_of(parsable) == [
        "mca:infotest:broken:error:RuntimeError: this plug-in is broken on purpose"
    ]


def test_param_naming_something_not_installed_is_a_usage_error_with_suggestions(site):
    result = CliRunner().invoke(main, ["info", "--param", "infotset"])
    assert result.exit_code == 2
    assert "no framework named 'infotset' is installed (did you mean 'infotest'?)" in result.stderr
    result = CliRunner().invoke(main, ["info", "--param", "infotest", "godo"])
    assert result.exit_code == 2
    assert "no component named 'godo' is installed in the infotest framework" in result.stderr
    assert "did you mean 'good'?" in result.stderr


def test_a_component_without_param_or_param_with_all_is_a_usage_error(site):
    assert CliRunner().invoke(main, ["info", "good"]).exit_code == 2
    assert CliRunner().invoke(main, ["info", "--all", "--param", "infotest"]).exit_code == 2


# -- sources and precedence ---------------------------------------------------------------------


def source_of(result, name: str) -> str:
    for line in lines_of(result):
        fields = line.split(":", 6)
        if fields[3:6] == ["param", name, "source"]:
            return fields[6]
    raise AssertionError(f"no source line for {name} in {result.stdout}")


def value_of(result, name: str) -> str:
    for line in lines_of(result):
        fields = line.split(":", 6)
        if fields[3:6] == ["param", name, "value"]:
            return fields[6]
    raise AssertionError(f"no value line for {name} in {result.stdout}")


def test_value_from_the_environment_names_the_variable(site):
    result = run_info(
        "--param", "infotest", "good", "--parsable", env={"OMPY_MCA_infotest_good_size": "9"}
    )
    assert value_of(result, "infotest_good_size") == "9"
    assert source_of(result, "infotest_good_size") == "environment:OMPY_MCA_infotest_good_size"
    assert source_of(result, "infotest_good_color") == "default"
    human = run_info("--param", "infotest", "good", env={"OMPY_MCA_infotest_good_size": "9"})
    assert "source: environment (OMPY_MCA_infotest_good_size)" in human.stdout


def test_value_from_a_parameter_file_names_the_file_and_line(site, tmp_path):
    conf = tmp_path / "mca-params.conf"
    conf.write_text(
        "# tuned for this cluster\ninfotest_good_size = 12\ninfotest_good_color = red\n"
    )
    env = {"OMPY_MCA_PARAM_FILES": str(conf)}
    result = run_info("--param", "infotest", "good", "--parsable", env=env)
    assert value_of(result, "infotest_good_size") == "12"
    assert source_of(result, "infotest_good_size") == f"file:{conf}:2"
    assert source_of(result, "infotest_good_color") == f"file:{conf}:3"


def test_environment_beats_file_and_command_line_beats_environment(site, tmp_path):
    conf = tmp_path / "mca-params.conf"
    conf.write_text("infotest_good_size = 12\ninfotest_good_color = red\n")
    env = {"OMPY_MCA_PARAM_FILES": str(conf), "OMPY_MCA_infotest_good_size": "9"}
    args = ("--param", "infotest", "good", "--parsable")
    result = run_info(*args, "--mca", "infotest_good_color", "blue", env=env)
    assert value_of(result, "infotest_good_size") == "9"
    assert value_of(result, "infotest_good_color") == "blue"
    assert source_of(result, "infotest_good_color") == "command-line:--mca infotest_good_color"


# -- warnings and errors -------------------------------------------------------------------------


def test_unknown_user_set_name_warns_on_stderr_with_the_closest_known_name(site):
    result = run_info(env={"OMPY_MCA_infotest_good_colour": "red"})
    assert result.exit_code == 0
    assert (
        "warning: MCA parameter 'infotest_good_colour' (from environment "
        "(OMPY_MCA_infotest_good_colour)) is not known to any installed framework or component; "
        "did you mean 'infotest_good_color'"
    ) in result.stderr
    assert "warning" not in result.stdout
    assert "Layers:" in result.stdout


def test_a_name_every_component_knows_gives_no_warning(site):
    result = run_info(env={"OMPY_MCA_infotest_good_size": "3", "OMPY_MCA_infolayer_answer": "1"})
    assert result.exit_code == 0
    assert result.stderr == ""


def test_a_bad_value_is_a_clear_error_not_a_traceback(site):
    result = run_info(env={"OMPY_MCA_infotest_good_size": "abc"})
    assert result.exit_code == 1
    assert (
        "Error: MCA parameter 'infotest_good_size' has the invalid value 'abc' "
        "(from environment (OMPY_MCA_infotest_good_size)): expected an integer"
    ) in result.stderr
    assert "Traceback" not in result.output
    assert result.stdout == ""


def test_a_bad_value_still_gets_the_misspelt_name_warning(site):
    env = {"OMPY_MCA_infotest_good_size": "abc", "OMPY_MCA_infotest_good_colr": "red"}
    result = run_info(env=env)
    assert result.exit_code == 1
    assert "did you mean 'infotest_good_color'" in result.stderr


def test_every_bad_value_is_reported_at_once(site):
    env = {"OMPY_MCA_infotest_good_size": "0", "OMPY_MCA_infotest_good_color": "green"}
    result = run_info(env=env)
    assert result.exit_code == 1
    assert "'infotest_good_size' has the invalid value '0'" in result.stderr
    assert "expected at least 1" in result.stderr
    assert "'infotest_good_color' has the invalid value 'green'" in result.stderr
    assert "expected one of red, blue" in result.stderr


def test_a_bad_value_given_with_mca_says_it_came_from_the_command_line(site):
    result = run_info("--mca", "infotest_good_color", "green")
    assert result.exit_code == 1
    assert "'infotest_good_color' has the invalid value 'green' (from command line" in (
        result.stderr
    )


def test_a_selection_mixing_include_and_exclude_is_an_error(site):
    result = run_info(env={"OMPY_MCA_infotest": "good,^spare"})
    assert result.exit_code == 1
    assert "'infotest' mixes included and excluded components" in result.stderr
    assert "(set by environment (OMPY_MCA_infotest))" in result.stderr


def test_a_malformed_parameter_file_is_an_error_naming_the_line(site, tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text("infotest_good_size 12\n")
    result = run_info(env={"OMPY_MCA_PARAM_FILES": str(conf)})
    assert result.exit_code == 1
    assert f"{conf}:1: expected 'name = value'" in result.stderr


def test_a_selection_naming_a_missing_component_is_an_error(site):
    result = run_info(env={"OMPY_MCA_infotest": "good,nosuch"})
    assert result.exit_code == 1
    assert "no infotest component named 'nosuch' is installed" in result.stderr


def test_help_documents_the_options_and_the_parsable_keys():
    result = CliRunner().invoke(main, ["info", "--help"])
    assert result.exit_code == 0
    for text in ("--all", "--param FW", "[COMPONENT]", "--level N", "--parsable", "--mca"):
        assert text in result.stdout
    assert "mca:<fw>:<component>:param:<name>:value|source|type|default|level|help" in (
        result.stdout
    )


# -- the real command ----------------------------------------------------------------------------


def test_the_installed_ompy_command_reports_a_broken_plugin_found_on_pythonpath(site, tmp_path):
    ompy = Path(sys.executable).parent / "ompy"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "OMPY_MCA_infotest_good_colr": "red",
    }
    done = subprocess.run(
        [str(ompy), "info", "--parsable"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert "mca:infotest:good:version:2.5.0" in out
    assert "mca:infotest:broken:error:RuntimeError: this plug-in is broken on purpose" in out
    assert "did you mean 'infotest_good_color'" in done.stderr
    assert "Traceback" not in done.stderr
