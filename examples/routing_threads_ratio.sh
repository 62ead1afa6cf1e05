#!/bin/sh
# What a second routing thread buys: the SM's routing phase on the 11,664-CA fat tree
# (3 levels, radix 36) in ibsm-sim, `--routing-threads 1` against `--routing-threads 2`
# (or the count given), run in alternating pairs on one binary. Prints each pair's
# routing wall time and the median ratio (1 thread / N threads). The tables are the same
# for any count; only the time differs. Run it on an otherwise idle machine.
#
# Needs: cargo build --release -p ibsm-examples --example quickstart --example gen_topology
# Usage: examples/routing_threads_ratio.sh [PAIRS] [THREADS]   (default 9 pairs, 2 threads)
set -eu
pairs=${1:-9}
threads=${2:-2}
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
routing_ms() {
    "$bin/quickstart" --topology "$work/tree.net" --no-verify --json --routing-threads "$1" 2>/dev/null |
        tail -n 1 | sed -n 's/.*"routing_ms":\([0-9.]*\).*/\1/p'
}
i=0
: > "$work/ratios"
while [ "$i" -lt "$pairs" ]; do
    one=$(routing_ms 1)
    many=$(routing_ms "$threads")
    ratio=$(echo "$one $many" | awk '{ printf "%.3f", $1 / $2 }')
    echo "pair $i: 1 thread $one ms, $threads threads $many ms, ratio $ratio"
    echo "$ratio" >> "$work/ratios"
    i=$((i + 1))
done
sort -n "$work/ratios" | awk '{ r[NR] = $1 } END { printf "median ratio %.3f over %d pairs\n", r[int((NR + 1) / 2)], NR }'
