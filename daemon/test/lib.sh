# SPDX-License-Identifier: GPL-3.0-or-later
# Helpers for fabricd system tests: a private munged and fabricd per test, in a
# temporary directory, both killed by PID when the test exits.
#   fm_setup                 temp dir in $T, trap; skips unless root with munged
#   fm_munged_start          $MUNGE_SOCKET
#   fm_fabricd_start [ARGS]  $FD_URL, $FD_PID; extra config lines in $FD_CONF_EXTRA
#   fm_fabricd_kill [SIG]    kill our fabricd and wait for it ($FD_RC)
#   fm_curl ARGS...          curl printing "BODY\nHTTP_CODE"
#   fm_auth METHOD PATH [BODYFILE] [UID]   an Authorization header value

. "$FM_TOP_SRCDIR/tests/tap.sh"

FABRICD="$FM_TOP_BUILDDIR/daemon/fabricd"
FABRICCTL="$FM_TOP_BUILDDIR/cli/fabricctl"
INGEST="$FM_TOP_BUILDDIR/bench/ingest"
MUNGED=$(command -v munged || echo /usr/sbin/munged)

fm_pids=

fm_cleanup () {
    for p in $fm_pids; do
        kill "$p" 2>/dev/null
    done
    # munged is not our child (it daemonises) and writes its seed file on exit:
    # wait until every process is gone before removing the directory.
    for p in $fm_pids; do
        wait "$p" 2>/dev/null
        for _ in $(seq 50); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
    done
    [ -n "$T" ] && rm -rf "$T"
}

fm_setup () {
    [ "$(id -u)" -eq 0 ] || plan_skip_all "needs root (munged, setpriv)"
    [ -x "$MUNGED" ] || plan_skip_all "munged is not installed"
    command -v curl >/dev/null || plan_skip_all "curl is not installed"
    command -v jq >/dev/null || plan_skip_all "jq is not installed"
    T=$(mktemp -d /tmp/fabricd-test.XXXXXX) || exit 1
    chmod 0755 "$T"
    trap fm_cleanup EXIT
}

fm_munged_start () {
    mkdir -m 0700 "$T/munge"
    dd if=/dev/urandom of="$T/munge/key" bs=1024 count=1 2>/dev/null
    chmod 0400 "$T/munge/key"
    MUNGE_SOCKET="$T/munge/sock"
    "$MUNGED" --force --socket="$MUNGE_SOCKET" --key-file="$T/munge/key" \
        --pid-file="$T/munge/pid" --log-file="$T/munge/log" \
        --seed-file="$T/munge/seed" 2>"$T/munge/stderr" || {
        diag "munged failed: $(cat "$T/munge/stderr")"
        return 1
    }
    fm_pids="$fm_pids $(cat "$T/munge/pid")"
    # Clients running as other users must reach the socket.
    chmod 0755 "$T/munge"
}

# A port nothing listens on (fabricd's bind error names a port taken since).
fm_free_port () {
    local port
    for _ in $(seq 50); do
        port=$((20000 + RANDOM % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return 0
        fi
    done
    return 1
}

fm_write_conf () {
    FD_PORT=${FD_PORT:-$(fm_free_port)}
    FD_URL="http://127.0.0.1:$FD_PORT"
    cat >"$T/fabricd.conf" <<EOT
listen_address = 127.0.0.1
listen_port = $FD_PORT
state_dir = "$T/state"
munge_socket = "${MUNGE_SOCKET:-/nonexistent}"
report_uids = "slurm"
admin_uids = ""
admin_groups = ""
${FD_CONF_EXTRA:-}
EOT
}

# Wait until GET /v1/status answers 200 (10 s).
fm_wait_ready () {
    for _ in $(seq 100); do
        if curl -sf -o /dev/null "$FD_URL/v1/status"; then
            return 0
        fi
        kill -0 "$FD_PID" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

fm_fabricd_start () {
    local off
    [ -f "$T/fabricd.conf" ] || fm_write_conf
    for _ in 1 2 3; do
        touch "$T/fabricd.log"
        off=$(wc -l <"$T/fabricd.log")
        "$FABRICD" -c "$T/fabricd.conf" "$@" >>"$T/fabricd.log" 2>&1 &
        FD_PID=$!
        fm_pids="$fm_pids $FD_PID"
        if fm_wait_ready; then
            return 0
        fi
        # Another process on this machine took the port meanwhile: take another.
        tail -n +$((off + 1)) "$T/fabricd.log" | grep -q "cannot listen" || break
        FD_PORT=$(fm_free_port)
        FD_URL="http://127.0.0.1:$FD_PORT"
        sed -i "s/^listen_port = .*/listen_port = $FD_PORT/" "$T/fabricd.conf"
    done
    diag "fabricd did not become ready:"
    diag "$(tail -n +$((off + 1)) "$T/fabricd.log" | tail -5)"
    return 1
}

# Sets FD_RC to fabricd's exit status (0 after a clean SIGTERM shutdown, also
# under the sanitizers, which fail the exit on a leak or an error).
fm_fabricd_kill () {
    kill "-${1:-TERM}" "$FD_PID" 2>/dev/null
    wait "$FD_PID" 2>/dev/null
    FD_RC=$?
    fm_pids=$(echo "$fm_pids" | sed "s/ $FD_PID\b//")
    if [ "$FD_RC" -ne 0 ] && [ "${1:-TERM}" = TERM ]; then
        diag "$(tail -20 "$T/fabricd.log")"
    fi
}

fm_curl () {
    curl -s -w '\n%{http_code}' "$@"
}

# fm_auth METHOD PATH [BODYFILE] [USER]: "Munge <cred>" binding the request.
fm_auth () {
    local method=$1 path=$2 body=${3:-/dev/null} user=${4:-}
    local hash cred
    hash=$(sha256sum <"$body" | cut -d' ' -f1)
    if [ -n "$user" ]; then
        cred=$(printf 'fm1 %s %s %s' "$method" "$path" "$hash" \
            | setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups \
                munge --socket="$MUNGE_SOCKET") || return 1
    else
        cred=$(printf 'fm1 %s %s %s' "$method" "$path" "$hash" \
            | munge --socket="$MUNGE_SOCKET") || return 1
    fi
    printf 'Munge %s' "$cred"
}

# fm_post PATH BODYFILE [USER]: POST with a fresh credential; prints body then code.
fm_post () {
    local auth
    auth=$(fm_auth POST "$1" "$2" "${3:-}") || return 1
    fm_curl -X POST -H 'Content-Type: application/json' -H "Authorization: $auth" \
        --data-binary "@$2" "$FD_URL$1"
}

# fm_get PATH [USER]
fm_get () {
    local auth
    auth=$(fm_auth GET "$1" /dev/null "${2:-}") || return 1
    fm_curl -H "Authorization: $auth" "$FD_URL$1"
}

# Last line of fm_curl output = HTTP code; the rest = body.
fm_code () { tail -n 1; }
fm_body () { sed '$d'; }

# Report documents (built as text: jq would round the nanosecond integers).
# fm_window SEQ PEER [LOST]
fm_window () {
    local seq=$1 peer=$2 lost=${3:-0}
    local now start
    now=$(date +%s%N)
    start=$((now - 5000000000))
    printf '{"seq":%s,"start_ns":%s,"end_ns":%s,"clock":{"offset_ns":10,"error_ns":5},' \
        "$seq" "$start" "$now"
    printf '"links":[{"peer":"%s","dir":"out","rtt_ns":{"p50":1000,"p90":2000,' "$peer"
    printf '"p99":3000,"max":4000},"owd_ns":{"p50":500,"p90":900,"p99":1500,"max":2000},'
    printf '"sent":100,"received":%s,"lost":%s,"reordered":0},' $((100 - lost)) "$lost"
    printf '{"peer":"%s","dir":"in","rtt_ns":null,"owd_ns":null,"sent":100,' "$peer"
    printf '"received":100,"lost":0,"reordered":1}],'
    printf '"health":[{"type":"nic","name":"eth0","link_up":true,"speed_mbps":100000,'
    printf '"rx_errors":0,"tx_errors":0,"rx_dropped":0,"tx_dropped":0,"carrier_changes":0}]}'
}

# fm_report JOB NODE WINDOW-JSON...
fm_report () {
    local job=$1 node=$2 sep=
    shift 2
    printf '{"job_id":%s,"node":"%s","windows":[' "$job" "$node"
    for w in "$@"; do
        printf '%s%s' "$sep" "$w"
        sep=,
    done
    printf ']}'
}

# fm_register JOB NODE UID PORT [JOB_NODES]
fm_register_body () {
    printf '{"job_id":%s,"node":"%s","user_id":%s,%s"probe_addr":"127.0.0.1",' \
        "$1" "$2" "$3" "${5:+\"job_nodes\":\"$5\",}"
    printf '"probe_port":%s,"nics":[{"name":"eth0","kind":"ethernet","addr":"127.0.0.1"}]}' "$4"
}
