#!/bin/sh
# What the reference-topology comparison costs a heavy sweep: the SM's bring-up of the
# 11,664-CA fat tree (3 levels, radix 36) in ibsm-sim, with and without
# `--topology-ref` (the plan is the same fabric, so the comparison walks every node and
# cable and finds nothing), run in alternating pairs. Prints each pair's SM wall time
# and the median ratio (with / without).
#
# Needs: cargo build --release -p ibsm-examples --example quickstart --example gen_topology
# Usage: examples/topo_ref_cost.sh [PAIRS]   (default 7)
set -eu
pairs=${1:-7}
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/target/release/examples"
for b in quickstart gen_topology; do
    if [ ! -x "$bin/$b" ]; then
        echo "missing $bin/$b: cargo build --release -p ibsm-examples --example $b" >&2
        exit 2
    fi
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin/gen_topology" fat-tree 36 3 > "$work/tree.net"
sm_ms() {
    "$bin/quickstart" --topology "$work/tree.net" --no-verify --json "$@" 2>/dev/null |
        tail -n 1 | sed -n 's/.*"sm_wall_ms":\([0-9.]*\).*/\1/p'
}
i=0
: > "$work/ratios"
while [ "$i" -lt "$pairs" ]; do
    without=$(sm_ms)
    with=$(sm_ms --topology-ref "$work/tree.net")
    ratio=$(echo "$with $without" | awk '{ printf "%.4f", $1 / $2 }')
    echo "pair $i: without $without ms, with $with ms, ratio $ratio"
    echo "$ratio" >> "$work/ratios"
    i=$((i + 1))
done
sort -n "$work/ratios" | awk '{ r[NR] = $1 } END { printf "median ratio %.4f over %d pairs\n", r[int((NR + 1) / 2)], NR }'
