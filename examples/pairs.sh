# Sourced by the examples' alternating-pair measurements (topo_ref_cost.sh,
# routing_threads_ratio.sh): the release binaries they run, a scratch directory removed on
# exit, the 11,664-CA fat tree (3 levels, radix 36) in it, and the loop over the pairs.
# The caller sets nothing; it gets BIN, WORK and TREE.

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$ROOT/target/release/examples"
for b in quickstart gen_topology; do
    if [ ! -x "$BIN/$b" ]; then
        echo "missing $BIN/$b: cargo build --release -p ibsm-examples --example $b" >&2
        exit 2
    fi
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
TREE="$WORK/tree.net"
"$BIN/gen_topology" fat-tree 36 3 > "$TREE"
: > "$WORK/ratios"

# quickstart_field FIELD ARGS...: one JSON number of a quickstart run on the tree.
quickstart_field() {
    field=$1
    shift
    "$BIN/quickstart" --topology "$TREE" --no-verify --json "$@" 2>/dev/null |
        tail -n 1 | sed -n "s/.*\"$field\":\([0-9.]*\).*/\1/p"
}

# run_pairs PAIRS NAME_A NAME_B: PAIRS times, `measure_a` then `measure_b` (the caller's
# functions, each printing one number); prints each pair and A / B, then the median
# ratio.
run_pairs() {
    i=0
    while [ "$i" -lt "$1" ]; do
        a=$(measure_a)
        b=$(measure_b)
        ratio=$(echo "$a $b" | awk '{ printf "%.4f", $1 / $2 }')
        echo "pair $i: $2 $a ms, $3 $b ms, ratio $ratio"
        echo "$ratio" >> "$WORK/ratios"
        i=$((i + 1))
    done
    sort -n "$WORK/ratios" | awk '{ r[NR] = $1 } END { printf "median ratio %.4f over %d pairs\n", r[int((NR + 1) / 2)], NR }'
}
