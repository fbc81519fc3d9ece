/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_API_H
#define FM_API_H

/* Constants of the fabricd HTTP API; doc/api.md is the contract. */

#define FM_API_VERSION_STRING "v1"
#define FM_API_PREFIX "/v1"
#define FM_API_DEFAULT_ADDRESS "127.0.0.1"
#define FM_API_DEFAULT_PORT 8470
#define FM_API_DEFAULT_URL "http://127.0.0.1:8470"

/* "Authorization: Munge <cred>"; the credential payload is
 * "fm1 METHOD PATH HEXSHA256(body)".
 */
#define FM_API_AUTH_SCHEME "Munge"
#define FM_API_AUTH_PAYLOAD_TAG "fm1"

#define FM_API_MAX_BODY_DEFAULT (4 * 1024 * 1024)
#define FM_API_MAX_WINDOWS 256    /* windows per POST /v1/reports */
#define FM_API_MAX_LINKS 4096     /* link entries per window */
#define FM_API_MAX_HEALTH 64      /* health records per window */
#define FM_API_MAX_NICS 64        /* nics per registration */
#define FM_API_NODE_MAX 63        /* node name length */
#define FM_API_JOB_NODES_MAX 4096 /* job_nodes hostlist expression length */
#define FM_API_JOB_ID_MAX 4294967294LL
#define FM_API_UID_MAX 4294967294LL
#define FM_API_SEQ_MAX 9007199254740992LL /* 2^53 */

#define FM_API_PROBE_KEY_BYTES 32

/* The keys of a window's "probe_drops": probe datagrams the agent dropped in
 * the window, by reason (agent/wire.h, then senders it does not know).
 */
#define FM_API_PROBE_DROP_REASONS                                                        \
    "bad_size", "bad_magic", "bad_version", "bad_format", "bad_tag", "foreign",          \
        "unknown_sender"
#define FM_API_PROBE_DROP_NREASONS 7

/* Value bounds (ns). */
#define FM_API_RTT_MAX_NS 60000000000LL
#define FM_API_OWD_ABS_MAX_NS 60000000000LL
#define FM_API_WINDOW_MAX_NS 3600000000000LL
#define FM_API_CLOCK_ABS_MAX_NS 1000000000000LL
#define FM_API_COUNT_MAX 1000000000LL
#define FM_API_TIME_MIN_NS 1577836800000000000LL /* 2020-01-01T00:00:00Z */
#define FM_API_FUTURE_SLACK_NS 86400000000000LL  /* 1 day */

#endif /* FM_API_H */
