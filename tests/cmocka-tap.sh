#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# Run one cmocka test program for automake's tap-driver. cmocka 1.1.5 prints a
# skipped test as "not ok N # SKIP name", which tap-driver counts as a FAIL;
# TAP says a skip is "ok N # SKIP reason", so rewrite exactly that line and
# pass everything else, and the program's exit status, through unchanged.
#   usage: cmocka-tap.sh PROGRAM [ARGS...]
CMOCKA_MESSAGE_OUTPUT=TAP
export CMOCKA_MESSAGE_OUTPUT
exec 3>&1
status=$( { { "$@"; echo $? >&4; } \
    | sed -e 's/^not ok \([0-9][0-9]*\) # SKIP/ok \1 # SKIP/' >&3; } 4>&1 )
exit "$status"
