#!/bin/sh
# One discovery, side by side on one ibsim fat tree that OpenSM brought up (OpenSM then
# stopped, so that its sweeps do not share ibsim with what is measured):
#   A  ibsm-netdiscover > topo        B  ibnetdiscover > topo
#   crates/ibsm-tools/netdiscover_vs_ibnetdiscover.sh [RADIX [LEVELS [RUNS [NETDISCOVER]]]]
#   default: 24 3 9 target/release/ibsm-netdiscover  (3,456 CAs, 720 switches)
# Runs alternate A B A B ...; each prints both wall times in ms and the ratio A/B, then
# the median ratio; `uptime` before and after; the node blocks of the last two outputs
# compared (sorted, comments left out).
#
# Measured 2026-12-02 on the 2-core build machine, shared (load average 6-8.5), 3,456
# CAs, with a whole-process timer alternating the two (10-20 pairs a round): median
# ratio 0.26, 0.33, 0.34, 0.52 in four rounds (fastest runs 0.20-0.24 s against
# 0.55-0.64 s); the walk before the lean one 0.49 (0.27-0.30 s fastest). SMPs (a counting
# transport; strace -c for ibnetdiscover): 29,088 (NodeInfo 10,369, NodeDescription
# 4,176, PortInfo 14,543) where ibnetdiscover sends about 42,900 and the walk before
# sent 40,956; since then one SwitchInfo per switch more (216 here) for ibnetdiscover's
# `enhanced port 0`. Re-run with it, load 1.4-2.3 (the machine otherwise idle), 9 pairs:
# ibsm-netdiscover 178-222 ms, ibnetdiscover 1718-1806 ms, median ratio 0.115, node
# blocks identical (4,176 nodes); why ibnetdiscover took 3x its time of the runs above
# was not looked into (the ratio is of pairs run side by side). Per SMP the preload costs our process about 4 us of CPU (a write, its
# reader thread's poll and read, futex hand-offs) and ibsim about 2 us; start-up (the
# preload's fake sysfs) about 6 ms of CPU, as for ibnetdiscover.
# Needs: cargo build --release -p ibsm-tools --bins && cargo build --release -p ibsm-examples --example gen_topology;
# ibsim-utils, opensm, infiniband-diags.
set -eu
RADIX=${1:-24}; LEVELS=${2:-3}; RUNS=${3:-9}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ND=${4:-$ROOT/target/release/ibsm-netdiscover}
DIR=$(mktemp -d /tmp/netdiscover_vs_ibnetdiscover.XXXXXX)
. "$ROOT/contrib/ibsim.sh"
trap stop_sim EXIT
fabric_up "$RADIX" "$LEVELS"
mkdir -p "$DIR/a" "$DIR/b"
timed() { # $1 = dir, rest = command
    d=$1; shift
    t0=$(now_ns)
    (cd "$DIR/$d" && SIM_HOST=$HOST LD_PRELOAD=$PRELOAD "$@" >topo 2>err) || { echo "$* failed:" >&2; cat "$DIR/$d/err" >&2; exit 1; }
    t1=$(now_ns)
    echo $(((t1 - t0) / 1000000))
}
echo "load before: $(uptime)"
i=1
: >"$DIR/ratios"
while [ "$i" -le "$RUNS" ]; do
    a=$(timed a "$ND"); b=$(timed b ibnetdiscover)
    r=$(echo "scale=3; $a / $b" | bc)
    echo "$r" >>"$DIR/ratios"
    echo "run $i: ibsm-netdiscover $a ms, ibnetdiscover $b ms, ratio $r"
    i=$((i + 1))
done
echo "median ratio: $(median "$DIR/ratios")"
echo "load after: $(uptime)"
blocks() { awk 'BEGIN{RS=""} {out=""; n=split($0, l, "\n"); for (k=1;k<=n;k++) if (l[k] !~ /^#/) out=out l[k] "|"; if (out!="") print out}' "$1" | sort; }
if [ "$(blocks "$DIR/a/topo" | md5sum)" = "$(blocks "$DIR/b/topo" | md5sum)" ]; then
    echo "node blocks: identical ($(blocks "$DIR/a/topo" | wc -l) nodes)"
else
    echo "node blocks DIFFER: see $DIR/a/topo and $DIR/b/topo"
fi
echo "files in $DIR"
