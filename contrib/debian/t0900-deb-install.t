#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# Build the .deb packages with contrib/debian/build-debs, unpack them into a
# fresh root with dpkg -x, and check what an admin gets: every file in its
# place, the programs run from the root, the man pages render, the plugin
# exports only Slurm's entry points, libfmclock-dev links a program.
# Skipped unless root and FM_SYSTEM_TESTS=1 (it builds the whole tree).
src=${FM_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$src/tests/tap.sh"

[ "$(id -u)" = 0 ] && [ "${FM_SYSTEM_TESTS:-}" = 1 ] \
    || plan_skip_all "needs root and FM_SYSTEM_TESTS=1"
for c in dpkg-buildpackage dh fakeroot man cc nm readelf; do
    command -v $c >/dev/null \
        || plan_skip_all "$c missing (apt-get install dpkg-dev debhelper fakeroot man-db gcc binutils)"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fm-t0900.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
version=$(dpkg-parsechangelog -l "$src/contrib/debian/changelog" -S Version)

plan 27

start=$(date +%s)
"$src/contrib/debian/build-debs" -o "$tmp/debs" "$src" >"$tmp/build.log" 2>&1
rc=$?
ok $rc "build-debs built the packages in $(($(date +%s) - start))s" \
    || { tail -n 30 "$tmp/build.log" | sed 's/^/# /'; done_testing; }

debs=
for p in fabric-monitor-daemon fabric-monitor-agent libfmclock0 libfmclock-dev; do
    f=$tmp/debs/${p}_${version}_$(dpkg-architecture -qDEB_HOST_ARCH).deb
    [ -f "$f" ] && debs="$debs $f"
done
is "$(echo $debs | wc -w)" 4 "four packages: daemon, agent, libfmclock0, libfmclock-dev"

mkdir "$root"
for f in $debs; do
    dpkg -x "$f" "$root" || rc=1
done
ok ${rc:-0} "dpkg -x of every package into a fresh root"

missing=
for f in usr/sbin/fabricd usr/bin/fabricctl usr/sbin/fabric-agent \
    etc/fabric-monitor/fabricd.conf lib/systemd/system/fabricd.service \
    etc/slurm/plugstack.conf.d/fabric-monitor.conf \
    usr/lib/$ma/slurm-wlm/fabric_monitor.so \
    usr/lib/$ma/libfmclock.so.0 usr/lib/$ma/libfmclock.so usr/include/fm/clock.h \
    usr/share/doc/fabric-monitor-daemon/api.md \
    usr/share/man/man1/fabricctl.1.gz usr/share/man/man5/fabricd.conf.5.gz \
    usr/share/man/man8/fabricd.8.gz usr/share/man/man8/fabric-agent.8.gz \
    usr/share/man/man8/fabric_monitor.8.gz; do
    [ -e "$root/$f" ] || missing="$missing $f"
done
is "$missing" "" "every installed file is in its place"
is "$(find "$root" -name '*.la' | wc -l)" 0 "no libtool .la files"

# Packages: the split and the metadata admins and apt rely on.
field () { dpkg-deb -f "$tmp/debs/${1}_${version}_$(dpkg-architecture -qDEB_HOST_ARCH).deb" "$2"; }
series=$(dpkg-query -W -f '${source:Upstream-Version}' libslurm-dev | cut -d. -f1,2)
field fabric-monitor-agent Depends | grep -qF "slurm-wlm-basic-plugins (>= $series)"
ok $? "the agent package depends on the Slurm series it was built for ($series)"
field fabric-monitor-daemon Depends | grep -qw munge
ok $? "the daemon package depends on munge"
conf=$(dpkg-deb --ctrl-tarfile "$tmp/debs/fabric-monitor-daemon_${version}_$(dpkg-architecture -qDEB_HOST_ARCH).deb" \
    | tar -xO ./conffiles 2>/dev/null)
is "$conf" "/etc/fabric-monitor/fabricd.conf" "fabricd.conf is a conffile"
conf=$(dpkg-deb --ctrl-tarfile "$tmp/debs/fabric-monitor-agent_${version}_$(dpkg-architecture -qDEB_HOST_ARCH).deb" \
    | tar -xO ./conffiles 2>/dev/null)
is "$conf" "/etc/slurm/plugstack.conf.d/fabric-monitor.conf" \
    "the plugstack snippet is a conffile"

# Programs run from the root.
out=$("$root/usr/sbin/fabricd" --version)
is "$out" "fabricd $version (API v1)" "fabricd --version"
"$root/usr/sbin/fabricd" --help >/dev/null
ok $? "fabricd --help"
"$root/usr/bin/fabricctl" --help >/dev/null
ok $? "fabricctl --help"
"$root/usr/sbin/fabric-agent" --help >/dev/null
ok $? "fabric-agent --help"
"$root/usr/sbin/fabricd" --show-config -c "$root/etc/fabric-monitor/fabricd.conf" \
    >"$tmp/show" 2>&1
ok $? "fabricd accepts the packaged fabricd.conf"
grep -qx 'state_dir = "/var/lib/fabric-monitor"' "$tmp/show"
ok $? "the packaged configuration keeps the store in /var/lib/fabric-monitor"
exec_start=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$root/lib/systemd/system/fabricd.service")
[ "$exec_start" = /usr/sbin/fabricd ] && [ -x "$root$exec_start" ]
ok $? "fabricd.service starts /usr/sbin/fabricd"
doc=$(sed -n 's|^Documentation=file://||p' "$root/lib/systemd/system/fabricd.service")
[ -n "$doc" ] && [ -f "$root$doc" ]
ok $? "fabricd.service's Documentation= exists ($doc)"

# Man pages.
warn=
for p in "$root"/usr/share/man/man*/*.gz; do
    w=$(MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null)
    [ -z "$w" ] || warn="$warn $(basename "$p"): $w"
done
is "$warn" "" "every man page renders without warnings"
out=$(MANPATH=$root/usr/share/man man -w fabricctl 2>&1)
is "$out" "$root/usr/share/man/man1/fabricctl.1.gz" "man fabricctl finds the page"
MANPATH=$root/usr/share/man MANWIDTH=80 man fabricd.conf 2>/dev/null \
    | grep -q "report_window"
ok $? "man fabricd.conf shows the keys"

# The SPANK plugin.
so=$root/usr/lib/$ma/slurm-wlm/fabric_monitor.so
extra=$(nm -D --defined-only "$so" | awk '{ print $3 }' \
    | grep -Ev '^(slurm_spank_|plugin_|spank_plugin_)')
is "$extra" "" "the plugin exports only Slurm's entry points"
nm -D --defined-only "$so" | grep -qw slurm_spank_job_prolog
ok $? "the plugin has slurm_spank_job_prolog"
# the agent is the snippet's agent=, else the default built into the plugin
snippet=$root/etc/slurm/plugstack.conf.d/fabric-monitor.conf
agent=$(sed -n 's/^optional fabric_monitor\.so.* agent=\([^ ]*\).*/\1/p' "$snippet")
if [ -z "$agent" ] && grep -q '^optional fabric_monitor\.so' "$snippet"; then
    agent=$(grep -ao '/[^[:space:][:cntrl:]]*/fabric-agent' "$so" | head -n 1)
fi
[ "$agent" = /usr/sbin/fabric-agent ] && [ -x "$root$agent" ]
ok $? "the plugstack snippet loads the plugin as optional with the packaged agent"

# libfmclock-dev: a program builds against the root and runs.
cat >"$tmp/clk.c" <<'CEOF'
#include <errno.h>
#include <stdio.h>
#include <fm/clock.h>
int main (void)
{
    fm_clock_t *c = fm_clock_open ("4294967294");
    if (c) {
        fm_clock_close (c);
        return 1;
    }
    printf ("%s\n", errno == ENOENT ? "ENOENT" : "other");
    return 0;
}
CEOF
cc -I"$root/usr/include" -o "$tmp/clk" "$tmp/clk.c" -L"$root/usr/lib/$ma" -lfmclock
ok $? "a program compiles and links with libfmclock-dev"
out=$(LD_LIBRARY_PATH=$root/usr/lib/$ma "$tmp/clk")
is "$out" ENOENT "it runs with libfmclock0: no agent publishes job 4294967294"
readelf -d "$tmp/clk" | grep -q 'NEEDED.*\[libfmclock\.so\.0\]'
ok $? "it needs libfmclock.so.0 (the soname of libfmclock0)"
is "$(nm -D --defined-only "$root/usr/lib/$ma/libfmclock.so.0" | awk '{ print $3 }' \
    | grep -v '^fm_clock_')" "" "libfmclock exports only fm_clock_*"
