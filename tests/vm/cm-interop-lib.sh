# Shared by the connection manager interop scripts (tests/vm/cm-interop-*.sh), which source it.

# Returns once a connection manager identifier listens in this guest (`rdma resource`: the
# server is up), or after 15 s, and then gives the server half a second more.
wait_for_listener() {
    local until=$((SECONDS + 15))
    while ((SECONDS < until)); do
        rdma resource show cm_id 2>/dev/null | grep -q LISTEN && break
        sleep 0.2
    done
    sleep 0.5
}
