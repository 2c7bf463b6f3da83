#!/usr/bin/env bash
# One benchmark of this directory side by side: ompy against mpi4py + Open MPI, over shared
# memory and tcp, interleaved (peer, ompy, peer, ompy, ...) so that the machine's noise hits
# both alike; then one table of the medians over the rounds and the ratio ompy/peer
# (sidebyside.py).
#
#   packages/ompi/benchmarks/compare.sh BENCH [REPEATS=3] [OUTDIR=/tmp/ompy-BENCH]
#
# BENCH is one of:
#   derived     16 MiB ping-pong, contiguous/vector/subarray datatypes   2 ranks
#   neighbor    neighbor collectives on a 2x2 periodic grid              4 ranks
#   persistent  Allreduce_init + Start against Allreduce                 2 ranks
#   rma         Put+Fence latency and bandwidth, Fetch_and_op latency    2 ranks
#   futures     MPIPoolExecutor.map of empty tasks, spawned workers      1 rank + WORKERS
#
# Environment:
#   PEER_VENV    a venv with mpi4py and Open MPI (its bin/ has mpirun)  (default /tmp/ompy-bench-peer)
#   OMPY_PYTHON  an interpreter that can `from ompy import MPI`         (default: python3)
#   OMPY_RUN     ompy's launcher                                         (default: ompy run)
#   SIDES        which sides to run: "peer ompy", "peer" or "ompy"       (default: both)
#   TRANSPORTS   which byte transports: "sm tcp", "sm" or "tcp"           (default: both)
#   ARGS         extra arguments for the benchmark script, e.g. "--iters 10"
#   METRICS      the table's metrics, e.g. "lat_us"                      (default: the bench's)
#   WORKERS      futures only: the pool's spawned workers                (default: 4)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: $0 derived|neighbor|persistent|rma|futures [REPEATS] [OUTDIR]"
bench=${1:?$usage}
repeats=${2:-3}
out=${3:-/tmp/ompy-$bench}
PEER_VENV=${PEER_VENV:-/tmp/ompy-bench-peer}
OMPY_PYTHON=${OMPY_PYTHON:-python3}
OMPY_RUN=${OMPY_RUN:-ompy run}
SIDES=${SIDES:-peer ompy}
TRANSPORTS=${TRANSPORTS:-sm tcp}
ARGS=${ARGS:-}
WORKERS=${WORKERS:-4}

# Per benchmark: the launcher's process options and the metrics of the table.
case $bench in
  derived) procs=(-n 2); metrics=bw_GBps,bw_best_GBps ;;
  neighbor) procs=(-n 4); metrics=lat_us,lat_min_us ;;
  persistent) procs=(-n 2); metrics=lat_us,lat_min_us ;;
  rma) procs=(-n 2); metrics=lat_us,lat_min_us,bw_GBps ;;
  # One parent rank on a host with room for the workers it spawns (both launchers take
  # --host NAME:SLOTS); the script is told how many workers to start.
  futures)
    procs=(-n 1 --host "localhost:$((WORKERS + 1))")
    ARGS="--workers $WORKERS $ARGS"
    metrics=tasks_per_s,wall_s ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
METRICS=${METRICS:-$metrics}
script=$here/$bench.py

if [[ " $SIDES " == *" peer "* && ! -x "$PEER_VENV/bin/mpirun" ]]; then
  echo "compare.sh: no mpirun in $PEER_VENV/bin (set PEER_VENV to a venv with mpi4py and openmpi)" >&2
  exit 2
fi
if [[ " $SIDES " == *" ompy "* ]]; then
  "$OMPY_PYTHON" -c "from ompy import MPI" || {
    echo "compare.sh: $OMPY_PYTHON cannot import ompy.MPI" >&2; exit 2; }
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -rf "$out"
mkdir -p "$out/peer" "$out/ompy"

run_side() {  # run_side SIDE TRANSPORT ROUND
  local side=$1 transport=$2 round=$3 launcher python package btl=()
  if [ "$side" = peer ]; then
    launcher=(env "PATH=$PEER_VENV/bin:$PATH" OMPI_MCA_btl=^ofi OMPI_MCA_osc=^ucx mpirun --oversubscribe)
    python=$PEER_VENV/bin/python
    package=mpi4py
    [ "$transport" = tcp ] && btl=(--mca btl self,tcp --mca btl_tcp_if_include lo)
  else
    read -r -a launcher <<< "$OMPY_RUN"
    python=$OMPY_PYTHON
    package=ompy
    [ "$transport" = tcp ] && btl=(--mca btl self,tcp)
  fi
  # shellcheck disable=SC2086  # ARGS is a list of words
  "${launcher[@]}" "${procs[@]}" "${btl[@]}" "$python" "$script" --mpi "$package" \
    --label "$transport" $ARGS > "$out/$side/$bench-$transport.run$round.csv"
}

for round in $(seq 1 "$repeats"); do
  echo "compare.sh $bench: round $round/$repeats (loadavg $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  for transport in $TRANSPORTS; do
    for side in $SIDES; do
      run_side "$side" "$transport" "$round"
    done
  done
done
python3 "$here/sidebyside.py" "$out" --metrics "$METRICS"
