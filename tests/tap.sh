# SPDX-License-Identifier: GPL-3.0-or-later
# Minimal TAP producer for shell tests, sourced by every *.t script.
#   plan N | plan_skip_all REASON
#   ok COND-EXIT-STATUS DESCRIPTION     (use: cmd; ok $? "desc")
#   is GOT WANT DESCRIPTION
#   diag MESSAGE...
#   done_testing                        (when no plan was given)
#   median < NUMBERS                    (one per line; prints "" for none)
# The script exits non-zero when any test failed.

tap_n=0
tap_failed=0
tap_planned=

plan () { tap_planned=$1; echo "1..$1"; }
plan_skip_all () { echo "1..0 # SKIP $*"; exit 0; }
diag () { printf '%s\n' "$*" | sed 's/^/# /'; }

ok () {
    local status=$1
    shift
    tap_n=$((tap_n + 1))
    if [ "$status" -eq 0 ]; then
        echo "ok $tap_n - $*"
    else
        echo "not ok $tap_n - $*"
        tap_failed=$((tap_failed + 1))
    fi
    return "$status"
}

is () {
    local got=$1 want=$2
    shift 2
    if [ "$got" = "$want" ]; then
        ok 0 "$*"
    else
        ok 1 "$*"
        diag "got:  '$got'"
        diag "want: '$want'"
        return 1
    fi
}

skip () { tap_n=$((tap_n + 1)); echo "ok $tap_n # SKIP $*"; }

median () {
    sort -g | awk '{ v[NR] = $1 }
        END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

done_testing () {
    [ -n "$tap_planned" ] || echo "1..$tap_n"
    [ "$tap_failed" -eq 0 ]
    exit $?
}
