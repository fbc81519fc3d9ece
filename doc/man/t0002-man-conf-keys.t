#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# fabricd.conf(5) documents exactly the keys fabricd knows (its
# --show-config), each with the built-in default.
. "${FM_TOP_SRCDIR:?}/tests/tap.sh"

fabricd="${FM_TOP_BUILDDIR:?}/daemon/fabricd"
page="$FM_TOP_SRCDIR/doc/man/fabricd.conf.5"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

[ -x "$fabricd" ] || plan_skip_all "$fabricd not built"
: >"$tmp/empty.conf"
"$fabricd" --show-config -c "$tmp/empty.conf" | grep -v '^#' >"$tmp/defaults" \
    || { echo "1..1"; echo "not ok 1 - fabricd --show-config"; exit 1; }

# Keys documented: ".TP" then ".B key" under KEYS.
awk '/^\.SH KEYS/ { k = 1; next } /^\.SH / { k = 0 }
     k && prev == ".TP" && /^\.B [a-z_]+$/ { print $2 } { prev = $0 }' \
    "$page" | sort >"$tmp/documented"
cut -d' ' -f1 "$tmp/defaults" | sort >"$tmp/known"

plan $(($(wc -l <"$tmp/known") + 2))
is "$(comm -13 "$tmp/documented" "$tmp/known" | tr '\n' ' ')" "" \
    "every key of fabricd is documented"
is "$(comm -23 "$tmp/documented" "$tmp/known" | tr '\n' ' ')" "" \
    "every documented key exists"

# The entry of each key: from its ".B key" to the next ".TP"/".S[HS]"; the
# default is written "default:" then ".BR value ." or "default: empty.".
while read -r key _ value; do
    value=${value#\"}
    value=${value%\"}
    entry=$(awk -v k=".B $key" '$0 == k { on = 1; next }
        on && /^\.(TP|SH|SS)/ { exit } on' "$page" | sed 's/\\-/-/g')
    if [ -z "$value" ]; then
        printf '%s\n' "$entry" | grep -q 'default: empty\.'
    else
        printf '%s\n' "$entry" | tr '\n' ' ' \
            | grep -qF "default: .BR $value ."
    fi
    ok $? "$key: default '$value' documented"
done <"$tmp/defaults"
