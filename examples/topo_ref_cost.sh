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
. "$(dirname "$0")/pairs.sh"
measure_a() { quickstart_field sm_wall_ms --topology-ref "$TREE"; }
measure_b() { quickstart_field sm_wall_ms; }
run_pairs "$pairs" with without
