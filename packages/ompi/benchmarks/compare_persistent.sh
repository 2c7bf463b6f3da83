#!/usr/bin/env bash
# Persistent allreduce of one double (persistent.py: Allreduce_init + Start vs Allreduce) side by
# side: ompy against mpi4py + Open MPI on 2 ranks, over shared memory and tcp, interleaved (peer,
# ompy, peer, ompy, ...) so that the machine's noise hits both alike; then one table, ompy/peer.
#
#   packages/ompi/benchmarks/compare_persistent.sh [REPEATS=3] [OUTDIR=/tmp/ompy-persistent]
#
# Environment:
#   PEER_VENV    a venv with mpi4py and Open MPI (its bin/ has mpirun)  (default /tmp/ompy-bench-peer)
#   OMPY_PYTHON  an interpreter that can `from ompy import MPI`         (default: python3)
#   OMPY_RUN     ompy's launcher                                         (default: ompy run)
#   SIDES        which sides to run: "peer ompy", "peer" or "ompy"       (default: both)
#   PERSISTENT_ARGS extra arguments for persistent.py, e.g. "--iters 10"
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repeats=${1:-3}
out=${2:-/tmp/ompy-persistent}
PEER_VENV=${PEER_VENV:-/tmp/ompy-bench-peer}
OMPY_PYTHON=${OMPY_PYTHON:-python3}
OMPY_RUN=${OMPY_RUN:-ompy run}
SIDES=${SIDES:-peer ompy}
PERSISTENT_ARGS=${PERSISTENT_ARGS:-}
script=$here/persistent.py

if [[ " $SIDES " == *" peer "* && ! -x "$PEER_VENV/bin/mpirun" ]]; then
  echo "compare_persistent: no mpirun in $PEER_VENV/bin (set PEER_VENV to a venv with mpi4py and openmpi)" >&2
  exit 2
fi
if [[ " $SIDES " == *" ompy "* ]]; then
  "$OMPY_PYTHON" -c "from ompy import MPI" || {
    echo "compare_persistent: $OMPY_PYTHON cannot import ompy.MPI" >&2; exit 2; }
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -rf "$out"
mkdir -p "$out/peer" "$out/ompy"

run_side() {  # run_side SIDE ROUND
  local side=$1 round=$2
  if [ "$side" = peer ]; then
    local mpirun=(env "PATH=$PEER_VENV/bin:$PATH" OMPI_MCA_btl=^ofi mpirun --oversubscribe -n 2)
    "${mpirun[@]}" "$PEER_VENV/bin/python" "$script" --mpi mpi4py --label sm $PERSISTENT_ARGS \
      > "$out/peer/persistent-sm.run$round.csv"
    "${mpirun[@]}" --mca btl self,tcp --mca btl_tcp_if_include lo \
      "$PEER_VENV/bin/python" "$script" --mpi mpi4py --label tcp $PERSISTENT_ARGS \
      > "$out/peer/persistent-tcp.run$round.csv"
  else
    $OMPY_RUN -n 2 "$OMPY_PYTHON" "$script" --mpi ompy --label sm $PERSISTENT_ARGS \
      > "$out/ompy/persistent-sm.run$round.csv"
    $OMPY_RUN -n 2 --mca btl self,tcp "$OMPY_PYTHON" "$script" --mpi ompy --label tcp $PERSISTENT_ARGS \
      > "$out/ompy/persistent-tcp.run$round.csv"
  fi
}

for round in $(seq 1 "$repeats"); do
  echo "compare_persistent: round $round/$repeats (loadavg $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  for side in $SIDES; do
    run_side "$side" "$round"
  done
done
python3 "$here/sidebyside.py" "$out" --metrics lat_us,lat_min_us
