#!/bin/bash
# Guest side (tests/cm_interop.rs): the cm_echo example, server on rxa's address, client from
# rxb's (the route to 10.78.0.1 from 10.78.0.2 leaves through vb). PASS/FAIL line, exit status.
set -u
ex=${UVERBS_EXAMPLES:-target/debug/examples}/cm_echo
srv=${UVERBS_CM_SERVER:-10.78.0.1}
out=$(mktemp -d)
timeout 60 "$ex" server "$srv:7471" >"$out/server" 2>&1 &
pid=$!
ok=0
for _ in 1 2 3 4 5 6 7 8 9 10; do
    sleep 1
    if timeout 60 "$ex" client "$srv:7471" "hello through the connection manager" >"$out/client" 2>&1; then
        ok=1
        break
    fi
    grep -q 'rejected' "$out/client" || break
done
wait "$pid"
src=$?
cat "$out/server" "$out/client"
if ((ok && src == 0)) && grep -q '^echo: hello through the connection manager$' "$out/client" &&
    grep -q 'echoed 36 bytes' "$out/server"; then
    echo "PASS cm_echo server/client"
else
    echo "FAIL cm_echo server/client (client ok=$ok, server status $src)"
    exit 1
fi
