#!/bin/bash
# Guest side: `uverbs rping` against rdma-core's `rping`, both ways, over rxa/rxb (tests/vm/cm-net).
#
#   cargo build -p uverbs-tools
#   tests/vm/run --kernel 6.12 --timeout 300 -- bash tests/vm/cm-interop-rping.sh </dev/null
#
# For each size (-S 64, -S 4000), with -C 5 -v: rping -s vs rping -c (the baseline), rping -s vs
# uverbs rping -c, uverbs rping -s vs rping -c. A pair passes when both exit 0 and the server's
# "server ping data: X" lines and the client's "ping data: X" lines are the same 5 lines, equal to
# the baseline's. Prints PASS/FAIL per pair; exits 1 if any pair fails.
# Environment: UVERBS_BIN or UVERBS (default target/debug/uverbs), RPING_SRV / RPING_CLI (default 10.78.0.1 /
# 10.78.0.2), RPING_PORT (default 7174; each pair uses its own port from there).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/cm-interop-lib.sh" || exit 2

UVERBS=${UVERBS_BIN:-${UVERBS:-target/debug/uverbs}}
SRV=${RPING_SRV:-10.78.0.1}
CLI=${RPING_CLI:-10.78.0.2}
PORT=${RPING_PORT:-7174}
COUNT=5
T=60 # seconds each side may take
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0

if [ ! -x "$UVERBS" ]; then
    echo "FAIL: $UVERBS not found (cargo build -p uverbs-tools on the host first)"
    exit 1
fi
command -v rping >/dev/null || { echo "FAIL: rping not installed"; exit 1; }

# run_pair NAME SIZE SERVER-CMD... -- CLIENT-CMD...
run_pair() {
    local name=$1 size=$2
    shift 2
    local srv=() cli=()
    while [ "$1" != -- ]; do srv+=("$1"); shift; done
    shift
    cli=("$@")
    local d="$work/$name"
    mkdir -p "$d"
    local port=$PORT
    PORT=$((PORT + 1))
    timeout -k 5 "$T" "${srv[@]}" -s -a "$SRV" -p "$port" -S "$size" -C "$COUNT" -v \
        >"$d/srv.out" 2>"$d/srv.err" &
    local spid=$!
    # Start the client once the server listens (at most 15 s).
    wait_for_listener
    timeout -k 5 "$T" "${cli[@]}" -c -a "$SRV" -I "$CLI" -p "$port" -S "$size" -C "$COUNT" -v \
        >"$d/cli.out" 2>"$d/cli.err"
    local crc=$?
    wait "$spid"
    local src=$?
    sed -n 's/^server ping data: //p' "$d/srv.out" >"$d/srv.data"
    sed -n 's/^ping data: //p' "$d/cli.out" >"$d/cli.data"
    local why=""
    [ "$src" = 0 ] || why="$why server exit $src;"
    [ "$crc" = 0 ] || why="$why client exit $crc;"
    [ "$(wc -l <"$d/srv.data")" = "$COUNT" ] || why="$why server printed $(wc -l <"$d/srv.data") ping lines;"
    [ "$(wc -l <"$d/cli.data")" = "$COUNT" ] || why="$why client printed $(wc -l <"$d/cli.data") ping lines;"
    cmp -s "$d/srv.data" "$d/cli.data" || why="$why server and client data differ;"
    if [ -n "${baseline:-}" ] && ! cmp -s "$d/cli.data" "$baseline"; then
        why="$why data differ from rping-vs-rping;"
    fi
    if [ -z "$why" ]; then
        echo "PASS: $name (-S $size -C $COUNT): server rc $src, client rc $crc"
        head -n 1 "$d/cli.data" | cut -c1-100 | sed 's/^/    client ping data: /'
        head -n 1 "$d/srv.data" | cut -c1-100 | sed 's/^/    server ping data: /'
    else
        echo "FAIL: $name (-S $size -C $COUNT):$why"
        fails=$((fails + 1))
        for f in srv.out srv.err cli.out cli.err; do
            echo "  --- $f"
            head -c 2000 "$d/$f" | sed 's/^/    /'
        done
    fi
}

for size in 64 4000; do
    baseline=""
    run_pair "rping-vs-rping-S$size" "$size" rping -- rping
    baseline="$work/rping-vs-rping-S$size/cli.data"
    run_pair "rping-s-vs-uverbs-c-S$size" "$size" rping -- "$UVERBS" rping
    run_pair "uverbs-s-vs-rping-c-S$size" "$size" "$UVERBS" rping -- rping
done

if [ "$fails" -ne 0 ]; then
    echo "cm-interop-rping: $fails pair(s) FAILED"
    exit 1
fi
echo "cm-interop-rping: all pairs passed"
