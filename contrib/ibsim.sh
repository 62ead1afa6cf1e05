# Sourced by the side-by-side measurements (crates/ibsm-tools/*_vs_*.sh,
# crates/ibsmd/ibsmd_vs_opensm.sh): a fat tree on ibsim, OpenSM to bring it up, timers.
# The caller sets ROOT (the repository, with release builds) and DIR (its scratch
# directory, from mktemp -d: it also names the ibsim sockets).

PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
SIM=
OSM=

now_ns() { date +%s%N; }
now_ms() { date +%s%3N; }

# gen_fabric RADIX LEVELS: $DIR/net, the fat tree in ibsim's format; HOST (the first CA,
# where the tools and SMs run), CAS and SWS (how many CAs and switches).
gen_fabric() {
    "$ROOT/target/release/examples/gen_topology" fat-tree "$1" "$2" --ibsim > "$DIR/net"
    HOST=$(sed -n 's/^Hca[^"]*"\([^"]*\)".*/\1/p' "$DIR/net" | head -n 1)
    CAS=$(grep -c '^Hca' "$DIR/net"); SWS=$(grep -c '^Switch' "$DIR/net")
}

# start_sim TAG: a fresh ibsim on $DIR/net (its socket and $DIR/ibsim_TAG.log named by
# TAG), once it is ready; SIM is its pid.
start_sim() {
    export IBSIM_SOCKNAME="$(basename "$DIR")_$1"
    (cd "$DIR" && exec ibsim -s -n -N 8192 -S 1024 -P 65536 net </dev/null >"ibsim_$1.log" 2>&1) &
    SIM=$!
    while ! grep -q "simulator ready" "$DIR/ibsim_$1.log" 2>/dev/null; do sleep 0.1; done
}

# wait_up FILE PID: waits (10 ms polls) for "SUBNET UP" in FILE; fails if PID ends first.
wait_up() {
    while ! grep -q "SUBNET UP" "$1" 2>/dev/null; do
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.01
    done
}

# start_opensm SUBDIR: OpenSM (`opensm -d2 -s 0 -o`, its log in $DIR/SUBDIR/osm.log) on
# HOST; OSM is its pid.
start_opensm() {
    mkdir -p "$DIR/$1"
    (cd "$DIR/$1" && SIM_HOST=$HOST OSM_TMP_DIR=. OSM_CACHE_DIR=. LD_PRELOAD=$PRELOAD \
        exec opensm -d2 -f osm.log -s 0 -o </dev/null >out 2>&1) &
    OSM=$!
}

# opensm_up: OpenSM configures the fabric, then is stopped, so that its sweeps do not
# share ibsim with what is measured.
opensm_up() {
    start_opensm sm
    wait_up "$DIR/sm/osm.log" "$OSM" || { echo "OpenSM did not bring the fabric up: $DIR/sm" >&2; exit 1; }
    kill -9 "$OSM" 2>/dev/null || true; wait "$OSM" 2>/dev/null || true; OSM=
}

# fabric_up RADIX LEVELS: the fat tree (gen_fabric, said on stdout) on a fresh ibsim,
# brought up by OpenSM (opensm_up).
fabric_up() {
    gen_fabric "$1" "$2"
    echo "fat tree radix $1, $2 levels: $CAS CAs, $SWS switches; tools on \"$HOST\""
    start_sim sim
    opensm_up
}

# stop_sim: ends OpenSM and ibsim where they still run (for the caller's EXIT trap).
stop_sim() {
    [ -n "$OSM" ] && kill -9 "$OSM" 2>/dev/null
    [ -n "$SIM" ] && kill "$SIM" 2>/dev/null
    true
}

# median FILE: the median of FILE's numbers, one a line.
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
