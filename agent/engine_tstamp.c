/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <stdio.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <linux/errqueue.h>
#include <linux/sockios.h>
#include <linux/net_tstamp.h>
#include <sodium.h>
#include <sys/socket.h>

#include "engine_private.h"

int fm_engine_tstamp_enable (int fd, bool with_id, bool hw)
{
    int flags = SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_RX_SOFTWARE
                | SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_OPT_TSONLY;

    if (with_id) {
        flags |= SOF_TIMESTAMPING_OPT_ID;
    }
    if (hw) {
        flags |= SOF_TIMESTAMPING_TX_HARDWARE | SOF_TIMESTAMPING_RX_HARDWARE
                 | SOF_TIMESTAMPING_RAW_HARDWARE;
    }
    return setsockopt (fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof (flags));
}

/* The interface holding addr, into ifname. -1 when none does (a wildcard). */
int fm_engine_tstamp_ifname (const struct sockaddr *addr, char *ifname)
{
    struct ifaddrs *ifa, *i;
    int ret = -1;

    if (getifaddrs (&ifa) < 0) {
        return -1;
    }
    for (i = ifa; i && ret < 0; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != addr->sa_family) {
            continue;
        }
        if ((addr->sa_family == AF_INET
             && ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr
                    == ((const struct sockaddr_in *)addr)->sin_addr.s_addr)
            || (addr->sa_family == AF_INET6
                && memcmp (&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
                           &((const struct sockaddr_in6 *)addr)->sin6_addr,
                           sizeof (struct in6_addr))
                       == 0)) {
            snprintf (ifname, IF_NAMESIZE, "%s", i->ifa_name);
            ret = 0;
        }
    }
    freeifaddrs (ifa);
    return ret;
}

/* Whether the NIC of ifname already stamps every packet in hardware. We
 * never change the NIC's setting ourselves (SIOCSHWTSTAMP): it is shared by
 * the whole node, and ptp4l or another tool may own it. An admin enables it
 * with `hwstamp_ctl -i IF -t 1 -r 1`.
 */
bool fm_engine_tstamp_hw_on (int fd, const char *ifname)
{
    struct hwtstamp_config hc = {0};
    struct ifreq ifr;

    memset (&ifr, 0, sizeof (ifr));
    snprintf (ifr.ifr_name, sizeof (ifr.ifr_name), "%s", ifname);
    ifr.ifr_data = (void *)&hc;
    if (ioctl (fd, SIOCGHWTSTAMP, &ifr) < 0) {
        return false;
    }
    return hc.tx_type == HWTSTAMP_TX_ON && hc.rx_filter == HWTSTAMP_FILTER_ALL;
}

/* The stamp of a control message: the NIC's when we use hardware stamps
 * and it gave one, else the kernel's software stamp.
 */
bool fm_engine_tstamp_pick (fm_engine_t *e,
                            const struct scm_timestamping *sts,
                            int64_t *ts,
                            bool *hw)
{
    if (e->hw && (sts->ts[2].tv_sec != 0 || sts->ts[2].tv_nsec != 0)) {
        *ts = fm_vclock_map (e->vclock, fm_time_from_timespec (&sts->ts[2]));
        *hw = true;
        return true;
    }
    *ts = fm_vclock_map (e->vclock, fm_time_from_timespec (&sts->ts[0]));
    *hw = false;
    return sts->ts[0].tv_sec != 0 || sts->ts[0].tv_nsec != 0;
}

/* The kernel numbers every datagram sent with timestamping enabled
 * (SOF_TIMESTAMPING_OPT_ID); we number them the same way to match the stamps.
 * A failed send may or may not have consumed a number, so after one the
 * numbering is restarted: pending stamps are discarded, and the option is
 * cleared and set again, which resets the kernel's counter to zero.
 */
void fm_engine_tstamp_resync (fm_engine_t *e)
{
    /* only the stamps: reading data here would recurse into the sender */
    fm_engine_tstamp_read_errqueue (e);
    for (int i = 0; i < TXQ_SIZE; i++) {
        if (e->txq[i].used) {
            e->txq[i].used = false;
            e->cnt.no_tx_stamp++;
        }
    }
    if (fm_engine_tstamp_enable (e->fd, false, e->hw) < 0
        || fm_engine_tstamp_enable (e->fd, true, e->hw) < 0) {
        fm_log_ratelimited (
            &e->rl_send, LOG_ERR, "SO_TIMESTAMPING: %s", strerror (errno));
    }
    e->tx_next_id = 0;
}

static void tx_stamp (fm_engine_t *e, uint32_t id, int64_t ts, bool hw)
{
    txent_t *tx = &e->txq[id % TXQ_SIZE];

    if (!tx->used || tx->id != id) {
        e->cnt.no_tx_stamp++;
        return;
    }
    tx->used = false;
    /* a NIC clock is not the system clock: only software stamps can be
     * checked against the time of the send
     */
    if (!hw && (ts < tx->tx_user || ts - tx->tx_user > TX_STAMP_SLACK_NS)) {
        e->cnt.no_tx_stamp++;
        return;
    }
    if (tx->kind == TX_BYE) {
        return;
    }
    if (tx->kind == TX_REQUEST) {
        target_t *t = &e->targets[tx->node];
        req_t *r = &t->ring[tx->seq % RING_SIZE];
        if (r->used && r->seq == tx->seq) {
            r->t1 = ts;
            r->t1_hw = hw;
            r->have_t1 = true;
            fm_engine_clock_feed_pair (e, t, tx->seq);
        }
    } else {
        requester_t *q = &e->requesters[tx->node];
        if (q->active && q->epoch == tx->epoch) {
            if (q->t3q_len == T3Q_SIZE) {
                q->t3q_head = (q->t3q_head + 1) % T3Q_SIZE;
                q->t3q_len--;
            }
            q->t3q[(q->t3q_head + q->t3q_len++) % T3Q_SIZE] =
                (t3_t){.hw = hw, .seq = tx->seq, .t3 = ts};
        }
    }
}

void fm_engine_tstamp_read_errqueue (fm_engine_t *e)
{
    for (;;) {
        char control[512];
        char data[64];
        struct iovec iov = {.iov_base = data, .iov_len = sizeof (data)};
        struct msghdr msg = {
            .msg_iov = &iov,
            .msg_iovlen = 1,
            .msg_control = control,
            .msg_controllen = sizeof (control),
        };
        struct cmsghdr *c;
        int64_t ts = 0;
        bool have_ts = false, have_id = false, hw = false;
        uint32_t id = 0;

        if (recvmsg (e->fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
            return;
        }
        for (c = CMSG_FIRSTHDR (&msg); c; c = CMSG_NXTHDR (&msg, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING) {
                struct scm_timestamping sts;
                memcpy (&sts, CMSG_DATA (c), sizeof (sts));
                have_ts = fm_engine_tstamp_pick (e, &sts, &ts, &hw);
            } else if ((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR)
                       || (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR)) {
                struct sock_extended_err ee;
                memcpy (&ee, CMSG_DATA (c), sizeof (ee));
                if (ee.ee_errno == ENOMSG
                    && ee.ee_origin == SO_EE_ORIGIN_TIMESTAMPING) {
                    id = ee.ee_data;
                    have_id = true;
                }
            }
        }
        if (have_ts && have_id) {
            tx_stamp (e, id, ts, hw);
        }
    }
}
