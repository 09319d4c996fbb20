#!/bin/bash
# Guest side: `uverbs cmatose`, `uverbs udaddy` and `uverbs mckey` against rdma-core's ucmatose,
# udaddy and mckey, both ways, on the cm-net veth pair (rxa 10.78.0.1, rxb 10.78.0.2).
#
#   cargo build -p uverbs-tools
#   tests/vm/run --kernel 6.12 --timeout 250 -- bash tests/vm/cm-interop-rdmacm.sh </dev/null
#
# One PASS/FAIL line per pair; exits non-zero if any pair failed. Every command is bounded by
# `timeout`; the uverbs side also bounds each phase with --timeout. UVERBS_BIN (or UVERBS) overrides the binary;
# UVERBS_CM_VERBOSE=1 prints both sides' output for passing pairs too.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/cm-interop-lib.sh" || exit 2
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
UVERBS=${UVERBS_BIN:-${UVERBS:-target/debug/uverbs}}
A=${UVERBS_CM_SERVER:-10.78.0.1}
B=${UVERBS_CM_CLIENT:-10.78.0.2}
GROUP=239.1.1.1
LOG=$(mktemp -d /tmp/cm-interop.XXXXXX)
T=40       # seconds for each process
fails=0

for tool in ucmatose udaddy mckey; do
    command -v "$tool" >/dev/null || { echo "FAIL setup: $tool not installed"; exit 2; }
done
[[ -x $UVERBS ]] || { echo "FAIL setup: $UVERBS not built (cargo build -p uverbs-tools)"; exit 2; }

# pair NAME EXPECT_SERVER EXPECT_CLIENT -- SERVER_CMD... -- CLIENT_CMD...
# Starts the server (receiver), waits a moment, runs the client (sender); both must exit 0 and
# print "return status 0" and their EXPECT line.
pair() {
    local name=$1 want_s=$2 want_c=$3
    shift 3
    [[ $1 == -- ]] && shift
    local srv=() cli=()
    while [[ $# -gt 0 && $1 != -- ]]; do srv+=("$1"); shift; done
    shift
    cli=("$@")
    local so="$LOG/${name//\//_}.server" co="$LOG/${name//\//_}.client"
    timeout -k 5 "$T" "${srv[@]}" >"$so" 2>&1 &
    local spid=$!
    # Start the client once the server listens (a listening identifier), at most 15 s; mckey's
    # receiver does not listen (and the C tool's stdout is buffered, so its "joined" line shows
    # only at exit): it gets 4 s to join.
    if [[ $name == mckey* || $name == *mckey-sender ]]; then
        sleep 4
    else
        wait_for_listener
    fi
    timeout -k 5 "$T" "${cli[@]}" >"$co" 2>&1
    local crc=$?
    wait "$spid"
    local src=$?
    local ok=1
    [[ $src -eq 0 && $crc -eq 0 ]] || ok=0
    grep -q "^return status 0$" "$so" || ok=0
    grep -q "^return status 0$" "$co" || ok=0
    grep -qF -- "$want_s" "$so" || ok=0
    grep -qF -- "$want_c" "$co" || ok=0
    if [[ $ok -eq 1 ]]; then
        echo "PASS $name (server rc=$src, client rc=$crc)"
        if [[ ${UVERBS_CM_VERBOSE:-0} == 1 ]]; then
            echo "--- server: ${srv[*]}"; sed 's/^/    /' "$so"
            echo "--- client: ${cli[*]}"; sed 's/^/    /' "$co"
        fi
    else
        echo "FAIL $name (server rc=$src, client rc=$crc)"
        fails=$((fails + 1))
        echo "--- server: ${srv[*]}"; sed 's/^/    /' "$so"
        echo "--- client: ${cli[*]}"; sed 's/^/    /' "$co"
    fi
}

U=("$UVERBS")

# cmatose: two RC connections, the server sends first.
pair "ucmatose-server/uverbs-client" "disconnected" "data transfers complete" -- \
    ucmatose -b "$A" -c 2 -- \
    "${U[@]}" cmatose -s "$A" -b "$B" -c 2 --timeout 30
pair "uverbs-server/ucmatose-client" "disconnected" "data transfers complete" -- \
    "${U[@]}" cmatose -b "$A" -c 2 --timeout 30 -- \
    ucmatose -s "$A" -b "$B" -c 2

# udaddy: SIDR resolve, the client sends first, the server replies through the GRH's address.
pair "udaddy-server/uverbs-client" "data transfers complete" "data transfers complete" -- \
    udaddy -b "$A" -- \
    "${U[@]}" udaddy -s "$A" -b "$B" --timeout 30
pair "uverbs-server/udaddy-client" "data transfers complete" "data transfers complete" -- \
    "${U[@]}" udaddy -b "$A" --timeout 30 -- \
    udaddy -s "$A" -b "$B"

# mckey: the receiver joins first, the sender sends to the group after its 3 s pause. Datagrams
# are unreliable, and on emulated rxe over the looped veth pair the first ones to a new group are
# often lost (for C sender and C receiver alike): the C receiver waits for one of the 500 the
# uverbs sender sends, and the pair gets three tries.
for try in 1 2 3; do
    before=$fails
    pair "mckey-receiver/uverbs-sender" "data transfers complete" "mckey: joined dgid: ::ffff:$GROUP" -- \
        mckey -m "$GROUP" -b "$A" -C 1 -- \
        "${U[@]}" mckey -m "$GROUP" -b "$B" -s -C 500 --timeout 30
    [[ $fails -eq $before ]] && break
    if [[ $try -lt 3 ]]; then
        fails=$before
        echo "    (retry $try)"
    fi
done
# The C sender posts its datagrams unsignaled and tears its queue pair down at once; on emulated
# rxe the teardown flushes most of them unsent (rxb's sent_pkts rose by 40, 90 and 0 in three runs
# of `-C 500`; C receiver vs C sender fails the same way). So the sender sends 500, this receiver
# waits for one, and the pair gets three tries.
sent_pkts() { rdma statistic show link "$1/1" 2>/dev/null | tr ' ' '\n' | grep -A1 '^sent_pkts$' | tail -1; }
for try in 1 2 3; do
    before=$fails
    pair "uverbs-receiver/mckey-sender" "data transfers complete" "data transfers complete" -- \
        "${U[@]}" mckey -m "$GROUP" -b "$A" -C 1 --timeout 20 -- \
        mckey -m "$GROUP" -b "$B" -s -C 500
    [[ $fails -eq $before ]] && break
    if [[ $try -lt 3 ]]; then
        fails=$before
        echo "    (retry $try: rxb sent_pkts so far: $(sent_pkts rxb))"
    fi
done

echo "logs: $LOG"
if [[ $fails -ne 0 ]]; then
    echo "FAIL: $fails of 6 pairs"
    exit 1
fi
echo "PASS: all 6 pairs"
