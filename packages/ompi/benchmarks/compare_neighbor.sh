#!/usr/bin/env bash
# Neighbor collectives on a 2x2 periodic grid (neighbor.py) side by side: ompy against mpi4py +
# Open MPI, over shared memory and tcp, interleaved (peer, ompy, peer, ompy, ...) so that the
# machine's noise hits both alike; then one table with the ratio ompy/peer.
#
#   packages/ompi/benchmarks/compare_neighbor.sh [REPEATS=3] [OUTDIR=/tmp/ompy-neighbor]
#
# Environment:
#   PEER_VENV    a venv with mpi4py and Open MPI (its bin/ has mpirun)  (default /tmp/ompy-bench-peer)
#   OMPY_PYTHON  an interpreter that can `from ompy import MPI`         (default: python3)
#   OMPY_RUN     ompy's launcher                                         (default: ompy run)
#   SIDES        which sides to run: "peer ompy", "peer" or "ompy"       (default: both)
#   NEIGHBOR_ARGS extra arguments for neighbor.py, e.g. "--iters 10"
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repeats=${1:-3}
out=${2:-/tmp/ompy-neighbor}
PEER_VENV=${PEER_VENV:-/tmp/ompy-bench-peer}
OMPY_PYTHON=${OMPY_PYTHON:-python3}
OMPY_RUN=${OMPY_RUN:-ompy run}
SIDES=${SIDES:-peer ompy}
NEIGHBOR_ARGS=${NEIGHBOR_ARGS:-}
script=$here/neighbor.py

if [[ " $SIDES " == *" peer "* && ! -x "$PEER_VENV/bin/mpirun" ]]; then
  echo "compare_neighbor: no mpirun in $PEER_VENV/bin (set PEER_VENV to a venv with mpi4py and openmpi)" >&2
  exit 2
fi
if [[ " $SIDES " == *" ompy "* ]]; then
  "$OMPY_PYTHON" -c "from ompy import MPI" || {
    echo "compare_neighbor: $OMPY_PYTHON cannot import ompy.MPI" >&2; exit 2; }
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -rf "$out"
mkdir -p "$out/peer" "$out/ompy"

run_side() {  # run_side SIDE ROUND
  local side=$1 round=$2
  if [ "$side" = peer ]; then
    local mpirun=(env "PATH=$PEER_VENV/bin:$PATH" OMPI_MCA_btl=^ofi mpirun --oversubscribe -n 4)
    "${mpirun[@]}" "$PEER_VENV/bin/python" "$script" --mpi mpi4py --label sm $NEIGHBOR_ARGS \
      > "$out/peer/neighbor-sm.run$round.csv"
    "${mpirun[@]}" --mca btl self,tcp --mca btl_tcp_if_include lo \
      "$PEER_VENV/bin/python" "$script" --mpi mpi4py --label tcp $NEIGHBOR_ARGS \
      > "$out/peer/neighbor-tcp.run$round.csv"
  else
    $OMPY_RUN -n 4 "$OMPY_PYTHON" "$script" --mpi ompy --label sm $NEIGHBOR_ARGS \
      > "$out/ompy/neighbor-sm.run$round.csv"
    $OMPY_RUN -n 4 --mca btl self,tcp "$OMPY_PYTHON" "$script" --mpi ompy --label tcp $NEIGHBOR_ARGS \
      > "$out/ompy/neighbor-tcp.run$round.csv"
  fi
}

for round in $(seq 1 "$repeats"); do
  echo "compare_neighbor: round $round/$repeats (loadavg $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  for side in $SIDES; do
    run_side "$side" "$round"
  done
done
python3 "$here/sidebyside.py" "$out" --metrics lat_us,lat_min_us
