"""A paper model of the tree launch of ``ompy run`` over ssh: launch time and modex size.

The model (derived in ``docs/multi-host.md``) for ``n`` nodes with ``p`` ranks each (``N = n p``
ranks), the launcher on the first node serving that node itself, daemons started through a
tree of fan-out ``k`` (``plm_ssh_tree_fanout``):

    D(n)  = tree depth: the least D with k + k^2 + ... + k^D >= n - 1  (0 for one node)
    T(n)  = L + D(n) (s + d) + w + p c + i + 3 n m + 2 N x + e

with ``L`` the launcher's start until its first remote shell, ``s`` one remote-shell login,
``d`` a daemon's interpreter and imports until it connects back, ``w`` a fork server's
imports (overlapping everything before it), ``c`` one rank's start on its node (the launcher
sends each daemon one ``launch`` message with all of its node's ranks, so the nodes start
theirs at the same time), ``i`` a rank's MPI initialization after its fork, ``m`` the
launcher's cost of one control message (a launch message per node, and two fences:
initialization and finalization, one message per node each thanks to the daemons' relays),
``x`` the launcher's cost of one rank's report (started, exited) and ``e`` the teardown.
One node is plm ``local`` (no daemons, no ssh): there
``T(1) = max(L1, w) + p c + i + e`` (the fork server starts with the launcher).

CPU: when all hosts share a few cores (the namespace hosts of the benchmark) the wall time
follows the CPU a launch needs on all hosts together:
``C(n) = C1 + (n - 1) (s + d + w + p r)``, ``C1`` a whole one-host job, ``r`` one rank after
its fork; the table prints it beside the measured CPU.

Modex: every rank publishes ``b`` bytes (tcp card, sm card, architecture, keys), kept by the
launcher: ``N b`` in all; a rank fetches a peer's card the first time it talks to it, so a
barrier (dissemination, ``ceil(log2 N)`` peers) fetches ``ceil(log2 N) b`` and an all-to-all
``(N - 1) b``; the launcher answers one request per fetch.

    python packages/orte/benchmarks/launch_model.py [--per-node 2] [--fanout 32]
        [--measured 1=1.0,2=2.3,4=3.4] [parameter options, seconds or bytes]

Prints a table; not a test.  The defaults are the parameters measured on the namespace hosts
of ``integration/multihost`` (see ``docs/multi-host.md`` for how each was measured).
"""

from __future__ import annotations

import argparse
import math

import attrs

NODES = (1, 2, 4, 8, 16, 32, 64, 100, 256, 1000, 1057, 4096, 10_000)


@attrs.frozen
class Parameters:
    """The model's constants (seconds unless said otherwise)."""

    launcher_local: float  # L1: the one-node launcher (plm local) until its fork server works
    launcher: float  # L: start of ompy run until its first remote shell starts
    login: float  # s: one remote-shell login, remote shell start-up files included
    daemon: float  # d: a daemon's interpreter and imports until it connects back
    fork_server: float  # w: a fork server's imports (preload)
    spawn: float  # c: one rank's start on its node: daemon -> fork server -> answer
    init: float  # i: a rank's MPI initialization after its fork, fence included
    message: float  # m: the launcher's cost of one control message
    exit_report: float  # x: the launcher's cost of one rank's exit
    teardown: float  # e: finalization, exits, daemons ending
    card: int  # b: the modex bytes one rank publishes
    one_host_cpu: float  # C1: CPU of a whole one-host job (launcher, fork server, ranks)
    rank_cpu: float  # r: CPU of a forked rank from its fork to its exit


def depth(nodes: int, fanout: int) -> int:
    """Levels of remote shells before the last of ``nodes`` runs its daemon."""
    remote, level, reach = nodes - 1, 0, 0
    while reach < remote:
        level += 1
        reach += fanout**level
    return level


def launch_time(nodes: int, per_node: int, fanout: int, p: Parameters) -> float:
    ranks = nodes * per_node
    if nodes == 1:  # the fork server started with the launcher and imports beside it
        ready = max(p.launcher_local, p.fork_server)
        return ready + per_node * p.spawn + p.init + p.teardown
    ready = depth(nodes, fanout) * (p.login + p.daemon) + p.fork_server + per_node * p.spawn
    control = 3 * nodes * p.message + 2 * ranks * p.exit_report
    return p.launcher + ready + p.init + control + p.teardown


def cpu_time(nodes: int, per_node: int, p: Parameters) -> float:
    """CPU seconds of a launch on all hosts together: the one-host job, plus per other host
    a login, a daemon, a fork server and its ranks (what decides the wall time when every
    host shares the same few cores, as the namespace hosts do)."""
    other = p.login + p.daemon + p.fork_server + per_node * p.rank_cpu
    return p.one_host_cpu + (nodes - 1) * other


def human(nbytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if nbytes < 1024 or unit == "GiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    raise AssertionError("unreachable")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-node", type=int, default=2)
    parser.add_argument("--fanout", type=int, default=32)
    parser.add_argument("--measured", default="", help="nodes=seconds,... to print beside")
    parser.add_argument("--measured-cpu", default="", help="nodes=CPU seconds,... to print beside")
    defaults = DEFAULTS
    for field in attrs.fields(Parameters):
        parser.add_argument(
            f"--{field.name.replace('_', '-')}",
            type=field.type if field.type in (int, float) else float,
            default=getattr(defaults, field.name),
        )
    args = parser.parse_args()
    p = Parameters(**{f.name: getattr(args, f.name) for f in attrs.fields(Parameters)})
    measured, measured_cpu = pairs(args.measured), pairs(args.measured_cpu)
    print(
        f"{'nodes':>6} {'ranks':>6} {'depth':>5} {'model s':>8} {'measured':>8} "
        f"{'CPU s':>7} {'measured':>8}  "
        f"{'modex at launcher':>17} {'barrier fetch':>13} {'alltoall fetch':>14}"
    )
    for nodes in sorted({*NODES, *measured, *measured_cpu}):
        ranks = nodes * args.per_node
        peers = math.ceil(math.log2(ranks)) if ranks > 1 else 0
        seen = f"{measured[nodes]:8.2f}" if nodes in measured else f"{'':>8}"
        seen_cpu = f"{measured_cpu[nodes]:8.2f}" if nodes in measured_cpu else f"{'':>8}"
        print(
            f"{nodes:>6} {ranks:>6} {depth(nodes, args.fanout):>5} "
            f"{launch_time(nodes, args.per_node, args.fanout, p):8.2f} {seen} "
            f"{cpu_time(nodes, args.per_node, p):7.1f} {seen_cpu}  "
            f"{human(ranks * p.card):>17} {human(peers * p.card):>13} "
            f"{human((ranks - 1) * p.card):>14}"
        )


def pairs(text: str) -> dict[int, float]:
    """``"1=0.5,2=1.5"`` -> ``{1: 0.5, 2: 1.5}``."""
    return {int(n): float(v) for n, v in (item.split("=") for item in text.split(",") if item)}


#: The costs of each step on one idle core, from CPU times measured on the namespace hosts
#: (see docs/multi-host.md for how each was measured).
DEFAULTS = Parameters(
    launcher_local=0.2,
    launcher=0.25,
    login=0.5,
    daemon=0.17,
    fork_server=0.46,
    spawn=0.003,
    init=0.1,
    message=0.0001,
    exit_report=0.0001,
    teardown=0.2,
    card=620,
    one_host_cpu=0.74,
    rank_cpu=0.03,
)

if __name__ == "__main__":
    main()
