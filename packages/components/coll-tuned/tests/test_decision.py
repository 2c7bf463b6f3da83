"""The decision rules and the parameters of coll/tuned, without any communication."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from ompy.mca.coll.tuned import ALGORITHMS, TunedCollComponent, decide
from ompy.mca.coll.tuned.decision import RULES, obstacle
from ompy.opal.mca.params import Registry

KIB = 1024


@pytest.mark.parametrize("operation", sorted(ALGORITHMS))
def test_the_automatic_choice_can_always_run(operation):
    for size, nbytes, commutative in itertools.product(
        range(1, 18), [0, 8, 16 * KIB, 1 << 20, 64 << 20], [True, False]
    ):
        chosen = decide(operation, "auto", size, nbytes, commutative)
        assert chosen in ALGORITHMS[operation][1:]
        assert obstacle(operation, chosen, size, commutative) is None, (size, nbytes)


def test_rules_follow_the_calibration_on_two_cores():
    """What benchmarks/calibrate.py measured (2 cores, 2 to 8 ranks; docs/collectives.md)."""
    # Allreduce: recursive doubling for short vectors and on 2 ranks, reduce + bcast from
    # 16 KiB on 3 to 8 ranks, Rabenseifner from 1 MiB on a power of two; the ring never won.
    assert decide("allreduce", "auto", 2, 512 * KIB, True) == "recursive_doubling"
    assert decide("allreduce", "auto", 4, 8 * KIB, True) == "recursive_doubling"
    assert decide("allreduce", "auto", 4, 16 * KIB, True) == "reduce_bcast"
    assert decide("allreduce", "auto", 6, 4 << 20, True) == "reduce_bcast"
    assert decide("allreduce", "auto", 8, 1 << 20, True) == "rabenseifner"
    assert decide("allreduce", "auto", 3, 1 << 20, False) == "recursive_doubling"
    # Binomial broadcast and reduce, linear scatter/alltoall and scan up to 8 ranks.
    for size in range(2, 9):
        for nbytes in (8, 16 * KIB, 1 << 20):
            assert decide("bcast", "auto", size, nbytes, True) == "binomial"
            assert decide("reduce", "auto", size, nbytes, True) == "binomial"
            assert decide("alltoall", "auto", size, nbytes, True) == "linear"
            assert decide("scatter", "auto", size, nbytes, True) == "linear"
            assert decide("scan", "auto", size, nbytes, True) == "linear"
    # Allgather: recursive doubling on powers of two at every size.
    assert decide("allgather", "auto", 8, 1 << 20, True) == "recursive_doubling"
    assert decide("allgather", "auto", 3, 8, True) == "bruck"
    # Beyond 8 ranks nothing was measured: the rules of the literature stay.
    assert decide("bcast", "auto", 16, 1 << 20, True) == "pipeline"
    assert decide("alltoall", "auto", 16, 8, True) == "bruck"
    assert decide("scan", "auto", 16, 8, True) == "recursive_doubling"


def test_rules_follow_size_and_message_size():
    assert decide("allreduce", "auto", 4, 8, True) == "recursive_doubling"
    assert decide("allreduce", "auto", 4, 8 << 20, True) == "rabenseifner"
    assert decide("allreduce", "auto", 2, 8 << 20, True) == "rabenseifner"
    assert decide("allreduce", "auto", 12, 8 << 20, True) == "ring"
    assert decide("allreduce", "auto", 6, 8 << 20, False) == "recursive_doubling"
    assert decide("barrier", "auto", 4, 0, True) == "recursive_doubling"
    assert decide("barrier", "auto", 5, 0, True) == "bruck"
    assert decide("bcast", "auto", 4, 8, True) == "binomial"
    assert decide("allgather", "auto", 6, 1 << 20, True) == "neighbor_exchange"
    assert decide("allgather", "auto", 5, 1 << 20, True) == "ring"
    assert decide("reduce_scatter", "auto", 5, 8, False) == "nonoverlapping"


def test_a_forced_algorithm_is_used_when_it_can_run():
    notes = []
    assert decide("allreduce", "ring", 3, 8, True, notes.append) == "ring"
    assert decide("allgather", "bruck", 4, 8, True, notes.append) == "bruck"
    assert notes == []


@pytest.mark.parametrize(
    ("operation", "forced", "size", "commutative", "reason"),
    [
        ("allreduce", "rabenseifner", 4, False, "it needs a commutative operation"),
        ("allreduce", "ring", 4, False, "it needs a commutative operation"),
        ("reduce_scatter", "ring", 4, False, "it needs a commutative operation"),
        ("reduce_scatter_block", "recursive_halving", 3, False, "commutative"),
        ("allgather", "recursive_doubling", 6, True, "power-of-two number of ranks, not 6"),
        ("allgather", "neighbor_exchange", 5, True, "an even number of ranks, not 5"),
    ],
)
def test_a_forced_algorithm_that_cannot_run_gives_way_with_one_note(
    operation, forced, size, commutative, reason
):
    notes = []
    chosen = decide(operation, forced, size, 1 << 20, commutative, notes.append)
    assert chosen == RULES[operation](size, 1 << 20, commutative)
    assert obstacle(operation, chosen, size, commutative) is None
    assert len(notes) == 1
    assert notes[0].startswith(f"coll_tuned_{operation}_algorithm={forced} cannot run here (")
    assert reason in notes[0]
    assert notes[0].endswith(f"using {chosen}")


def test_an_unknown_algorithm_is_an_error_naming_the_choices():
    with pytest.raises(ValueError, match=r"'fastest' is not a bcast algorithm.*binomial, pipeline"):
        decide("bcast", "fastest", 4, 8, True)


def _component(environ):
    component = TunedCollComponent(Registry(environ=environ, files=[]))
    component.register_params()
    return component


def test_every_operation_has_an_enum_parameter_defaulting_to_auto():
    component = _component({})
    component.open()
    assert component.settings.forced == dict.fromkeys(ALGORITHMS, "auto")
    assert component.priority == 30  # above basic (10)
    specs = {spec.name: spec for spec in component.registry.specs()}
    for operation, choices in ALGORITHMS.items():
        assert specs[f"coll_tuned_{operation}_algorithm"].choices == choices


def test_parameters_reach_the_module_settings():
    component = _component(
        {
            "OMPY_MCA_coll_tuned_allreduce_algorithm": "ring",
            "OMPY_MCA_coll_tuned_bcast_segment_size": "4096",
            "OMPY_MCA_coll_tuned_verbose": "1",
        }
    )
    component.open()
    intra = SimpleNamespace(is_inter=False)  # all query reads of the communicator
    module = component.query(intra).module
    assert component.query(SimpleNamespace(is_inter=True)) is None  # coll/inter's job
    assert module.settings.forced["allreduce"] == "ring"
    assert module.settings.forced["bcast"] == "auto"
    assert module.settings.segments["bcast"] == 4096
    assert module.settings.verbose == 1


def test_a_bad_value_is_an_error_naming_the_parameter_and_the_choices():
    component = _component({"OMPY_MCA_coll_tuned_barrier_algorithm": "fastest"})
    with pytest.raises(ValueError, match="coll_tuned_barrier_algorithm") as caught:
        component.open()
    assert "expected one of auto, recursive_doubling, bruck" in str(caught.value)
