/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_CHECK_NET_H
#define FM_CHECK_NET_H

#include <netinet/in.h>
#include <stdint.h>

#include "check_verdict.h"
#include "error.h"

/* One pair's TCP test (doc/fabric-check.md "Protocol"): the lower rank
 * connects, ping-pongs small messages (latency), then streams large ones
 * (bandwidth) which the higher rank counts for a bounded window.
 */
typedef struct {
    uint32_t pings;         /* round trips at most */
    uint32_t ping_size;     /* bytes per message */
    int64_t ping_budget_ns; /* the ping-pong stops after this long */
    uint64_t bw_bytes;      /* bandwidth phase: bytes at most */
    int64_t bw_window_ns;   /* bandwidth phase: the receiver counts this long */
    int64_t timeout_ns;     /* connect, accept, and each wait for the peer */
} fm_check_params_t;

/* Limits: what a server accepts from a client, and the options' ranges. */
#define FM_CHECK_PINGS_MAX 100000
#define FM_CHECK_PING_SIZE_MIN 16
#define FM_CHECK_PING_SIZE_MAX 65536
#define FM_CHECK_BW_BYTES_MAX (1ULL << 34)
#define FM_CHECK_WINDOW_MAX_NS (10LL * 1000000000LL)

/* A listening TCP socket on addr (IPv4 dotted quad), port chosen by the
 * kernel, returned in *port. Returns the fd, or -1 with errno and err.
 */
int fm_check_net_listen (const char *addr, uint16_t *port, fm_error_t *err);

/* Test the pair as its lower rank `me`, in round `round`, against the server
 * at peer. Always fills *res (a, b are the caller's): res->ok false and
 * res->error say why when the test did not complete.
 */
void fm_check_net_client (const struct sockaddr_in *peer,
                          uint32_t me,
                          uint32_t round,
                          const fm_check_params_t *p,
                          fm_check_result_t *res);

/* Serve one client on lfd: the rank `expect` in round `round`; others are
 * refused and waited past. Returns 0, or -1 with errno and err when no
 * client completed the test before the timeout.
 */
int fm_check_net_serve (int lfd,
                        uint32_t expect,
                        uint32_t round,
                        const fm_check_params_t *p,
                        fm_error_t *err);

#endif /* FM_CHECK_NET_H */
