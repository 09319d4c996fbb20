#!/bin/bash
# Guest side: the `uverbs` perf tools with -R (test queue pairs and the exchange over the RDMA
# connection manager) against perftest's, both ways, over rxa/rxb (tests/vm/cm-net).
#
#   cargo build -p uverbs-tools
#   tests/vm/run --kernel 6.12 --timeout 250 -- bash tests/vm/cm-interop-perftest.sh </dev/null
#
# Pairs: ib_send_lat -R, ib_write_bw -R, ib_read_bw -R, each as perftest server + uverbs client and
# uverbs server + perftest client (EXTRA=1 adds ib_write_lat -R and ib_send_bw -R, both ways). The
# server runs on rxa (10.78.0.1), the client on rxb and connects to 10.78.0.1. A pair passes when
# both sides exit 0, both print " rdma_cm QPs : ON" and " Data ex. method : rdma_cm", and both
# print a result row for the message size with the iteration count. Prints PASS/FAIL per pair
# (with the result rows, or the reason and the tails of the outputs); exits 1 if any pair fails.
# Environment: UVERBS (default target/debug/uverbs), PT_SRV (default 10.78.0.1), PT_PORT (default
# 18515; each pair uses its own port from there), EXTRA.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/cm-interop-lib.sh" || exit 2

UVERBS=${UVERBS_BIN:-${UVERBS:-target/debug/uverbs}}
SRV=${PT_SRV:-10.78.0.1}
PORT=${PT_PORT:-18515}
T=60 # seconds each side may take
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0

if [ ! -x "$UVERBS" ]; then
    echo "FAIL: $UVERBS not found (cargo build -p uverbs-tools on the host first)"
    exit 1
fi
for t in ib_send_lat ib_write_bw ib_read_bw; do
    command -v "$t" >/dev/null || { echo "FAIL: $t (perftest) not installed"; exit 1; }
done

# run_pair NAME SIZE ITERS SERVER-CMD... -- CLIENT-CMD...   (the client gets the server address)
run_pair() {
    local all=("$@")
    local name=$1 size=$2 iters=$3
    shift 3
    local srv=() cli=()
    while [ "$1" != -- ]; do srv+=("$1"); shift; done
    shift
    cli=("$@")
    local d="$work/$name"
    mkdir -p "$d"
    local port=$PORT
    PORT=$((PORT + 1))
    timeout -k 5 "$T" "${srv[@]}" -d rxa -R -p "$port" -s "$size" -n "$iters" \
        >"$d/srv.out" 2>"$d/srv.err" &
    local spid=$!
    # perftest's server listens only after the first sync: give it a moment to come up (the
    # uverbs client also retries a rejected connect). At most 15 s for a listener to appear.
    wait_for_listener
    timeout -k 5 "$T" "${cli[@]}" -d rxb -R -p "$port" -s "$size" -n "$iters" "$SRV" \
        >"$d/cli.out" 2>"$d/cli.err"
    local crc=$?
    wait "$spid"
    local src=$?
    local why=""
    [ "$src" = 0 ] || why="$why server exit $src;"
    [ "$crc" = 0 ] || why="$why client exit $crc;"
    local side
    for side in srv cli; do
        grep -qP '^ rdma_cm QPs\t : ON' "$d/$side.out" || why="$why $side: no 'rdma_cm QPs : ON';"
        grep -q '^ Data ex. method : rdma_cm' "$d/$side.out" \
            || why="$why $side: no 'Data ex. method : rdma_cm';"
        grep -qE "^ *$size +$iters +[0-9]" "$d/$side.out" || why="$why $side: no result row;"
    done
    if [ -z "$why" ]; then
        echo "PASS: $name"
        for side in srv cli; do
            echo "    $side: $(grep -E "^ *$size +$iters +[0-9]" "$d/$side.out" | head -1 | tr -s ' ')"
        done
    elif [ -z "${RETRIED:-}" ] && grep -q "Can't produce a report" "$d/srv.err" "$d/cli.err"; then
        # perftest estimates the CPU clock before it reports, and gives up (exit 1, no row) when
        # its samples do not line up, which happens under emulation on a loaded machine: a
        # failure of the reference tool's timing, not of the exchange. Once more, then it counts.
        echo "RETRY: $name: perftest could not estimate the CPU clock (Can't produce a report)"
        RETRIED=1 run_pair "${all[@]}"
    else
        echo "FAIL: $name:$why"
        for f in srv.out srv.err cli.out cli.err; do
            echo "    --- $f (tail)"
            tail -n 8 "$d/$f" | sed 's/^/    /'
        done
        fails=$((fails + 1))
    fi
}

U=("$UVERBS")
run_pair "ib_send_lat -R: perftest server, uverbs client" 2 100 \
    ib_send_lat -- "${U[@]}" send-lat
run_pair "ib_send_lat -R: uverbs server, perftest client" 2 100 \
    "${U[@]}" send-lat -- ib_send_lat
run_pair "ib_write_bw -R: perftest server, uverbs client" 65536 200 \
    ib_write_bw -- "${U[@]}" write-bw
run_pair "ib_write_bw -R: uverbs server, perftest client" 65536 200 \
    "${U[@]}" write-bw -- ib_write_bw
run_pair "ib_read_bw -R: perftest server, uverbs client" 65536 200 \
    ib_read_bw -- "${U[@]}" read-bw
run_pair "ib_read_bw -R: uverbs server, perftest client" 65536 200 \
    "${U[@]}" read-bw -- ib_read_bw
if [ -n "${EXTRA:-}" ]; then
    run_pair "ib_write_lat -R: perftest server, uverbs client" 2 100 \
        ib_write_lat -- "${U[@]}" write-lat
    run_pair "ib_write_lat -R: uverbs server, perftest client" 2 100 \
        "${U[@]}" write-lat -- ib_write_lat
    run_pair "ib_send_bw -R: perftest server, uverbs client" 65536 200 \
        ib_send_bw -- "${U[@]}" send-bw
    run_pair "ib_send_bw -R: uverbs server, perftest client" 65536 200 \
        "${U[@]}" send-bw -- ib_send_bw
fi

if [ "$fails" -ne 0 ]; then
    echo "FAIL: $fails pair(s) failed"
    exit 1
fi
echo "PASS: all pairs"
