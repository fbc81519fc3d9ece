# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# Shared by the agent's loopback tests (t01*.t): after tests/tap.sh, skips
# unless root with munged, curl, jq and python3 and a built fabricd, and sets
#   AGENT FABRICD       the programs under test
#   T                   a scratch directory (mode 0755), removed at exit
#   pids                PIDs ended at exit (add yours)
#   SOCK                the socket of a private munged, started here
#   free_port KIND      a free 127.0.0.1 port (SOCK_STREAM or SOCK_DGRAM)
[ "$(id -u)" -eq 0 ] || plan_skip_all "needs root (munged)"
for t in munged munge curl jq python3; do
    command -v $t >/dev/null || plan_skip_all "$t is not installed"
done

AGENT=$FM_BUILDDIR/agent/fabric-agent
FABRICD=$FM_BUILDDIR/daemon/fabricd
[ -x "$FABRICD" ] || plan_skip_all "fabricd is not built"

T=$(mktemp -d /tmp/fm-agent-test.XXXXXX) || exit 1
chmod 0755 "$T"
pids=
cleanup () {
    for p in $pids; do kill "$p" 2>/dev/null; done
    for p in $pids; do wait "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT

free_port () {
    python3 -c 'import socket,sys; s=socket.socket(socket.AF_INET, getattr(socket, sys.argv[1])); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' "$1"
}

mkdir -m 0700 "$T/munge"
dd if=/dev/urandom of="$T/munge/key" bs=1024 count=1 2>/dev/null
chmod 0400 "$T/munge/key"
SOCK=$T/munge/sock
munged --force --socket="$SOCK" --key-file="$T/munge/key" --pid-file="$T/munge/pid" \
    --log-file="$T/munge/log" --seed-file="$T/munge/seed" || plan_skip_all "munged failed"
pids="$pids $(cat "$T/munge/pid")"
chmod 0755 "$T/munge"
