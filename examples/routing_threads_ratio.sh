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
. "$(dirname "$0")/pairs.sh"
measure_a() { quickstart_field routing_ms --routing-threads 1; }
measure_b() { quickstart_field routing_ms --routing-threads "$threads"; }
run_pairs "$pairs" "1 thread" "$threads threads"
