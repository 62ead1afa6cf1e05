#!/bin/sh
# Side by side on one ibsim fabric: OpenSM (`opensm -d2 -s 0 -o`) vs `ibsmd --once`.
#   crates/ibsmd/ibsmd_vs_opensm.sh [RADIX [LEVELS [RUNS]]]   default: 36 2 1 (648 CAs, 54 switches)
#   crates/ibsmd/ibsmd_vs_opensm.sh 64 2 3                     2,048 CAs, 96 switches, 3 runs each
# Runs alternate (ibsmd, OpenSM, ibsmd, ...); each SM gets a fresh ibsim (unconfigured
# fabric) and runs on the same node (the first CA of the net file). Per run:
#   ms     process start -> "SUBNET UP" in its stderr/log (both polled every 10 ms)
#   smps   ibsmd: SMPs of its first sweep (--json); OpenSM: not reported by OpenSM
#   xmit   PortXmitPkts of the SM's port read by perfquery after the SM stopped (ibsim counts
#          every MAD it carries; OpenSM is SIGKILLed as soon as SUBNET UP is logged, ibsmd
#          exits by itself 100 ms after SUBNET UP, which includes what it sends meanwhile)
# Needs: cargo build --release -p ibsmd -p ibsm-examples --example gen_topology;
# ibsim-utils, opensm, infiniband-diags.
#
# Measured 2026-11-30 on the 2-core build machine, shared (load average 3.4-6.6), 3 runs:
#   648 CAs  (36 2 3):  ibsmd 196/214/250 ms, 10,585 SMPs, xmit 10,580 (the 5 SMPs to
#                       the SM's own CA never leave its port)
#                       OpenSM 577/1069/751 ms, xmit 20,351
#   2048 CAs (64 2 3):  ibsmd 558/559/522 ms, 34,465 SMPs, xmit 34,460 (load 2.9-3.2)
#                       OpenSM 2607/3032/2882 ms, xmit 65,273 (its own -D 0x08 log: 65,282
#                       "total sent" at SUBNET UP)
# Until 2026-11-30 ibsmd's xmit exceeded its SMP count (13.6-16.0k on 648 CAs, 44.6-51.3k
# on 2048): it started a second heavy sweep right after SUBNET UP, because the election's
# first SweepNeeded, arriving while the first sweep discovered, was queued instead of
# being satisfied by it.
set -eu
RADIX=${1:-36}; LEVELS=${2:-2}; RUNS=${3:-1}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$(mktemp -d /tmp/ibsmd_vs_opensm.XXXXXX)
. "$ROOT/contrib/ibsim.sh"
trap stop_sim EXIT
gen_fabric "$RADIX" "$LEVELS"
echo "fat tree radix $RADIX, $LEVELS levels: $CAS CAs, $SWS switches; SM on \"$HOST\""
echo "load before: $(uptime)"
xmit_pkts() { # PortXmitPkts of the SM node's port, read on that node
    (cd "$DIR" && SIM_HOST=$HOST LD_PRELOAD=$PRELOAD perfquery 2>/dev/null) |
        sed -n 's/^PortXmitPkts:\.*//p'
}
run_ibsmd() { # $1 = tag
    start_sim "$1"; mkdir -p "$DIR/$1"
    t0=$(now_ms)
    (cd "$DIR/$1" && SIM_HOST=$HOST LD_PRELOAD=$PRELOAD exec "$ROOT/target/release/ibsmd" --once --json \
        --time-limit 300 >out 2>err) &
    SM=$!
    wait_up "$DIR/$1/err" "$SM" || true
    t1=$(now_ms)
    rc=0; wait "$SM" || rc=$?
    json=$(tail -n 1 "$DIR/$1/out")
    smps=$(echo "$json" | sed -n 's/.*"smps":\([0-9]*\).*/\1/p')
    retries=$(echo "$json" | sed -n 's/.*"retries":\([0-9]*\).*/\1/p')
    echo "ibsmd   $1: exit $rc, $((t1 - t0)) ms to SUBNET UP, smps $smps (retries $retries), xmit $(xmit_pkts)"
    kill "$SIM"; wait "$SIM" 2>/dev/null || true
}
run_osm() { # $1 = tag
    start_sim "$1"
    t0=$(now_ms)
    start_opensm "$1"
    wait_up "$DIR/$1/osm.log" "$OSM" || true
    t1=$(now_ms)
    kill -9 "$OSM" 2>/dev/null || true; wait "$OSM" 2>/dev/null || true  # -o: it may have ended
    echo "opensm  $1: $((t1 - t0)) ms to SUBNET UP, xmit $(xmit_pkts)"
    kill "$SIM"; wait "$SIM" 2>/dev/null || true
}
i=1
while [ "$i" -le "$RUNS" ]; do
    run_ibsmd "ibsmd$i"
    run_osm "osm$i"
    i=$((i + 1))
done
echo "load after: $(uptime)"
echo "files in $DIR"
