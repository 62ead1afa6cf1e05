#!/bin/sh
# Side by side on one ibsim fabric: OpenSM (`opensm -d2 -s 0 -o`) vs `ibsmd --once`.
# Wall time to SUBNET UP and SMPs sent. Each SM gets a fresh ibsim (unconfigured fabric).
#   examples/ibsmd_vs_opensm.sh [RADIX [LEVELS]]     default: 36 2 (648 CAs, 54 switches)
# Needs: cargo build --release --example ibsmd --example gen_topology; ibsim-utils, opensm.
set -eu
RADIX=${1:-36}; LEVELS=${2:-2}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/target/release/examples
PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
DIR=$(mktemp -d /tmp/ibsmd_vs_opensm.XXXXXX)
"$BIN/gen_topology" fat-tree "$RADIX" "$LEVELS" --ibsim > "$DIR/net"
HOST=$(sed -n 's/^Hca[^"]*"\([^"]*\)".*/\1/p' "$DIR/net" | head -n 1)
now_ms() { date +%s%3N; }
start_sim() { # $1 = tag
    export IBSIM_SOCKNAME=ibsmd_vs_osm_$$_$1
    (cd "$DIR" && exec ibsim -s -N 8192 -S 1024 -P 65536 -n net </dev/null >"ibsim_$1.log" 2>&1) &
    SIM=$!
    while ! grep -q "simulator ready" "$DIR/ibsim_$1.log" 2>/dev/null; do sleep 0.1; done
}

# ibsmd
start_sim ibsmd
mkdir -p "$DIR/ibsmd"
t0=$(now_ms)
rc=0
(cd "$DIR/ibsmd" && SIM_HOST=$HOST LD_PRELOAD=$PRELOAD "$BIN/ibsmd" --once --json --timeout 120 \
    >out 2>err) || rc=$?
t1=$(now_ms)
grep "SUBNET UP" "$DIR/ibsmd/err" || true
kill "$SIM"; wait "$SIM" 2>/dev/null || true
json=$(tail -n 1 "$DIR/ibsmd/out")
echo "ibsmd:  exit $rc, process $((t1 - t0)) ms; $json" | sed 's/"role_changes.*//'

# OpenSM: time from process start to SUBNET UP in its log. Its SMP count is not
# reported here (OpenSM logs MADs only at -V, which slows it down by far).
start_sim osm
mkdir -p "$DIR/osm"
t0=$(now_ms)
(cd "$DIR/osm" && SIM_HOST=$HOST OSM_TMP_DIR=. OSM_CACHE_DIR=. LD_PRELOAD=$PRELOAD \
    exec opensm -d2 -f osm.log -s 0 -o </dev/null >out 2>&1) &
OSM=$!
while ! grep -q "SUBNET UP" "$DIR/osm/osm.log" 2>/dev/null; do sleep 0.01; done
t1=$(now_ms)
kill -9 "$OSM"; wait "$OSM" 2>/dev/null || true
kill "$SIM"; wait "$SIM" 2>/dev/null || true
echo "opensm: SUBNET UP after $((t1 - t0)) ms (process start to log line, 10 ms polling)"
echo "files in $DIR"
