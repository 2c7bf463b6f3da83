"""The output facility: logger names, the verbosity scale, parameter-driven levels, one handler."""

from __future__ import annotations

import logging
import os

import pytest

from ompy.opal import output
from ompy.opal.mca import Cardinality, Framework, open_framework
from ompy.opal.mca.params import ParamValueError, Registry

NOISY = Framework("noisy", "opal", "test framework", (1, 0), Cardinality.MANY)

#: A component that reports, in its offer, what its logger lets through when it is opened.
COMPONENT = """
import logging
from ompy.opal.mca import Component, Offer

class Chatty(Component):
    framework = "noisy"
    name = "chatty"
    version = "1.0"
    interface_version = (1, 0)

    def open(self):
        self.seen_at_open = (self.log.isEnabledFor(logging.INFO),
                             self.log.isEnabledFor(logging.DEBUG))
        self.log.info("opened")

    def query(self, context):
        self.log.debug("asked about %s", context)
        return Offer(1, self.seen_at_open)
"""


@pytest.fixture
def chatty(distributions):
    distributions.add(
        "fake-noisy-chatty",
        {NOISY.group: {"chatty": "fake_noisy_chatty:Chatty"}},
        {"fake_noisy_chatty.py": COMPONENT},
    )


@pytest.fixture(autouse=True)
def _quiet_afterwards():
    yield
    for name in ("ompy.noisy", "ompy.noisy.chatty", "ompy.test"):
        logging.getLogger(name).setLevel(logging.NOTSET)
    output.name_process("")


def registry(**env: str) -> Registry:
    return Registry(environ={f"OMPY_MCA_{k}": v for k, v in env.items()}, files=[])


# -- the scale ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verbosity", "level"),
    [
        (0, logging.WARNING),
        (1, logging.INFO),
        (10, logging.INFO),
        (19, logging.INFO),
        (20, logging.DEBUG),
        (60, logging.DEBUG),
        (100, logging.DEBUG),
    ],
)
def test_open_mpi_verbosity_maps_to_logging_levels(verbosity, level):
    assert output.level_for(verbosity) == level


@pytest.mark.parametrize(("verbosity", "error"), [(-1, ValueError), (101, ValueError)])
def test_a_verbosity_outside_0_to_100_is_refused(verbosity, error):
    with pytest.raises(error, match="from 0 to 100"):
        output.level_for(verbosity)


@pytest.mark.parametrize("verbosity", [True, 1.5, "10"])
def test_a_verbosity_is_an_integer(verbosity):
    with pytest.raises(TypeError, match="an integer"):
        output.level_for(verbosity)


# -- names --------------------------------------------------------------------------------------


def test_logger_names_say_framework_and_component_or_layer():
    assert output.get_logger("btl", "tcp").name == "ompy.btl.tcp"
    assert output.get_logger("coll").name == "ompy.coll"
    assert output.get_logger("orte").name == "ompy.orte"
    component, framework = output.get_logger("btl", "tcp"), output.get_logger("btl")
    assert component.parent is framework  # it inherits the framework's level


@pytest.mark.parametrize("parts", [("",), ("btl", "tcp.x"), ("btl", "")])
def test_logger_name_parts_are_single_words(parts):
    with pytest.raises(ValueError, match="dot-free"):
        output.logger_name(*parts)


# -- levels from parameters ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verbose", "info", "debug"),
    [("0", False, False), ("10", True, False), ("20", True, True)],
)
def test_base_verbose_sets_the_components_level_before_open(chatty, verbose, info, debug):
    opened = open_framework(NOISY, registry(noisy_base_verbose=verbose))
    (component,) = opened.components
    assert component.log.name == "ompy.noisy.chatty"
    assert component.seen_at_open == (info, debug)
    assert opened.log.name == "ompy.noisy"
    assert opened.log.level == output.level_for(int(verbose))


def test_the_framework_and_its_components_print_through_the_one_handler(chatty, capsys):
    opened = open_framework(NOISY, registry(noisy_base_verbose="20"))
    opened.select_many("ctx")
    err = capsys.readouterr().err.splitlines()
    pid = os.getpid()
    assert f"[pid {pid}] noisy chatty: opened" in err
    assert f"[pid {pid}] noisy chatty: asked about ctx" in err
    assert f"[pid {pid}] noisy: chatty offers 1" in err


def test_reopening_quietly_silences_again(chatty, capsys):
    open_framework(NOISY, registry(noisy_base_verbose="20")).close()
    assert "opened" in capsys.readouterr().err
    opened = open_framework(NOISY, registry())
    opened.select_many("ctx")
    assert capsys.readouterr().err == ""


def test_a_bad_verbosity_names_the_parameter(chatty):
    with pytest.raises(ParamValueError, match="noisy_base_verbose"):
        open_framework(NOISY, registry(noisy_base_verbose="101"))


def test_a_components_own_verbosity_can_only_add_to_the_frameworks():
    parent = output.apply_verbosity(output.get_logger("test"), 10)
    child = output.get_logger("test", "own")
    assert output.apply_own_verbosity(child, 20).level == logging.DEBUG
    output.apply_verbosity(parent, 20)
    assert output.apply_own_verbosity(child, 5).level == logging.DEBUG  # the framework's wins
    assert output.apply_own_verbosity(child, 0).level == logging.NOTSET  # follows the framework
    assert child.getEffectiveLevel() == logging.DEBUG


# -- the handler --------------------------------------------------------------------------------


def test_the_prefix_names_the_rank_once_the_run_time_knows_it(capsys):
    log = output.get_logger("test")
    log.warning("before")
    output.name_process("rank 3")
    log.warning("after %d", 42)
    assert capsys.readouterr().err.splitlines() == [
        f"[pid {os.getpid()}] test: before",
        f"[rank 3 pid {os.getpid()}] test: after 42",
    ]


def test_ompy_lines_do_not_reach_the_applications_root_handlers(capsys):
    seen: list[logging.LogRecord] = []
    application = logging.Handler()
    application.emit = seen.append  # what logging.basicConfig() would print a second time
    logging.getLogger().addHandler(application)
    try:
        output.get_logger("test").warning("only once")
    finally:
        logging.getLogger().removeHandler(application)
    assert capsys.readouterr().err.count("only once") == 1
    assert seen == []


def test_quiet_by_default_whatever_the_root_level(capsys):
    logging.getLogger().setLevel(logging.DEBUG)
    try:
        output.get_logger("test").info("not shown")
    finally:
        logging.getLogger().setLevel(logging.WARNING)
    assert capsys.readouterr().err == ""


def test_exceptions_come_with_their_traceback(capsys):
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        output.get_logger("test").exception("callback failed")
    err = capsys.readouterr().err
    assert "test: callback failed\nTraceback (most recent call last):" in err
    assert "RuntimeError: boom" in err
