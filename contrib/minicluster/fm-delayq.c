/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Copyright (C) 2026 The fabric-monitor authors */

/* fm-delayq - hold packets from an NFQUEUE for a fixed delay plus normally
 * distributed jitter, then reinject them.
 *
 * The minicluster has no sch_netem, so its delay fault sends the packets of one
 * switch port through `iptables -j NFQUEUE` in the switch namespace and this
 * program releases each one after delay + N(0, jitter).  Because the hold happens
 * in the switch, the kernel timestamps taken on the nodes see it, and each
 * direction can be delayed on its own.  The number of held packets is bounded:
 * beyond it new packets are dropped, as a full switch buffer would.
 *
 * A packet held for 0 still makes a trip through this process, and the wake-up
 * costs tens of microseconds, at random: an idle queue would add nothing. So the
 * start-up line gives the zero share (the share that delay + N(0, jitter) holds
 * for 0), the caller lets that share pass in the kernel (iptables' statistic
 * match), and with -b the holds of the packets that do arrive are drawn above 0.
 *
 * Usage: fm-delayq -q QUEUE -d DELAY_USEC [-j JITTER_USEC] [-m MAX_HELD] [-b]
 * Runs in the foreground until SIGTERM or SIGINT, then releases what it holds.
 */

#include "config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <libnetfilter_queue/libnetfilter_queue.h>

#define MAX_DELAY_USEC (10 * 1000 * 1000) /* a 10 s hold is already absurd */
#define DEFAULT_MAX_HELD 4096
#define MAX_MAX_HELD 65536

struct held {
    int64_t release_ns;
    uint64_t seq; /* keeps equal release times in arrival order */
    uint32_t id;
};

struct delayq {
    struct nfq_handle *h;
    struct nfq_q_handle *qh;
    struct held *heap;
    size_t len;
    size_t cap;
    uint64_t seq;
    int64_t delay_ns;
    int64_t jitter_ns;
    bool bypassed; /* -b: the kernel passes the share that would be held 0 */
    uint64_t rng;
    unsigned long dropped;
};

static volatile sig_atomic_t stop_requested;

static void on_signal (int sig)
{
    (void)sig;
    stop_requested = 1;
}

static int64_t now_ns (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* xorshift64*: the jitter needs no cryptographic quality, only independence */
static double uniform01 (struct delayq *dq)
{
    dq->rng ^= dq->rng >> 12;
    dq->rng ^= dq->rng << 25;
    dq->rng ^= dq->rng >> 27;
    /* 53 random bits, shifted into (0, 1] so that log() below stays finite */
    return ((dq->rng * 0x2545F4914F6CDD1DULL >> 11) + 1) * (1.0 / 9007199254740992.0);
}

static double gaussian (struct delayq *dq)
{
    double u1 = uniform01 (dq);
    double u2 = uniform01 (dq);

    return sqrt (-2.0 * log (u1)) * cos (2.0 * M_PI * u2);
}

/* The share of packets that delay + N(0, jitter) would hold for 0 or less. */
static double zero_share (const struct delayq *dq)
{
    if (dq->jitter_ns == 0) {
        return dq->delay_ns == 0 ? 1 : 0;
    }
    return 0.5 * erfc ((double)dq->delay_ns / ((double)dq->jitter_ns * M_SQRT2));
}

/* delay + N(0, jitter), never below 0. Where the kernel already passed the
 * zero share (-b), the packets that reach us draw from the rest, so that the
 * whole still follows the distribution.
 */
static int64_t draw_hold (struct delayq *dq)
{
    int64_t hold = dq->delay_ns;

    /* with delay >= 0 a draw is above 0 at least half the time */
    for (int i = 0; i < 64 && dq->jitter_ns > 0; i++) {
        hold = dq->delay_ns + (int64_t)(gaussian (dq) * (double)dq->jitter_ns);
        if (hold > 0 || !dq->bypassed) {
            break;
        }
    }
    return hold < 0 ? 0 : hold;
}

static bool held_before (const struct held *a, const struct held *b)
{
    if (a->release_ns != b->release_ns) {
        return a->release_ns < b->release_ns;
    }
    return a->seq < b->seq;
}

static void heap_push (struct delayq *dq, struct held item)
{
    size_t i = dq->len++;

    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!held_before (&item, &dq->heap[parent])) {
            break;
        }
        dq->heap[i] = dq->heap[parent];
        i = parent;
    }
    dq->heap[i] = item;
}

static struct held heap_pop (struct delayq *dq)
{
    struct held top = dq->heap[0];
    struct held last = dq->heap[--dq->len];
    size_t i = 0;

    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= dq->len) {
            break;
        }
        if (child + 1 < dq->len
            && held_before (&dq->heap[child + 1], &dq->heap[child])) {
            child++;
        }
        if (!held_before (&dq->heap[child], &last)) {
            break;
        }
        dq->heap[i] = dq->heap[child];
        i = child;
    }
    if (dq->len > 0) {
        dq->heap[i] = last;
    }
    return top;
}

static void release (struct delayq *dq, uint32_t id)
{
    if (nfq_set_verdict (dq->qh, id, NF_ACCEPT, 0, NULL) < 0) {
        fprintf (
            stderr, "fm-delayq: verdict for packet %u: %s\n", id, strerror (errno));
    }
}

static void release_due (struct delayq *dq, int64_t now)
{
    while (dq->len > 0 && dq->heap[0].release_ns <= now) {
        struct held item = heap_pop (dq);
        release (dq, item.id);
    }
}

static int on_packet (struct nfq_q_handle *qh,
                      struct nfgenmsg *msg,
                      struct nfq_data *nfa,
                      void *arg)
{
    struct delayq *dq = arg;
    struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr (nfa);
    struct held item;
    int64_t hold;

    (void)msg;
    if (!ph) {
        return 0;
    }
    item.id = ntohl (ph->packet_id);
    if (dq->len >= dq->cap) {
        dq->dropped++;
        return nfq_set_verdict (qh, item.id, NF_DROP, 0, NULL) < 0 ? -1 : 0;
    }
    hold = draw_hold (dq);
    item.release_ns = now_ns () + hold;
    item.seq = dq->seq++;
    heap_push (dq, item);
    return 0;
}

static int parse_long (const char *s, long min, long max, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol (s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
        errno = EINVAL;
        return -1;
    }
    *out = v;
    return 0;
}

static void usage (void)
{
    fprintf (
        stderr,
        "Usage: fm-delayq -q QUEUE -d DELAY_USEC [-j JITTER_USEC] [-m MAX_HELD] [-b]\n");
}

/* Wait for the queue socket or for the next release, whichever comes first.
 * ppoll() keeps microsecond delays precise where poll()'s milliseconds would not.
 */
static int wait_event (struct delayq *dq, int fd, const sigset_t *unblocked)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    struct timespec ts;
    struct timespec *tsp = NULL;

    if (dq->len > 0) {
        int64_t wait = dq->heap[0].release_ns - now_ns ();
        if (wait < 0) {
            wait = 0;
        }
        ts.tv_sec = wait / 1000000000;
        ts.tv_nsec = wait % 1000000000;
        tsp = &ts;
    }
    return ppoll (&pfd, 1, tsp, unblocked);
}

static int run (struct delayq *dq, const sigset_t *unblocked)
{
    char buf[4096] __attribute__ ((aligned));
    int fd = nfq_fd (dq->h);

    while (!stop_requested) {
        int rc = wait_event (dq, fd, unblocked);
        if (rc < 0) {
            if (errno == EINTR) {
                continue;
            }
            fprintf (stderr, "fm-delayq: poll: %s\n", strerror (errno));
            return -1;
        }
        if (rc > 0) {
            /* drain whatever is queued without blocking, then release */
            for (;;) {
                ssize_t n = recv (fd, buf, sizeof (buf), MSG_DONTWAIT);
                if (n < 0) {
                    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                        break;
                    }
                    if (errno == ENOBUFS) {
                        /* the kernel dropped messages: the link is overloaded */
                        dq->dropped++;
                        continue;
                    }
                    fprintf (stderr, "fm-delayq: recv: %s\n", strerror (errno));
                    return -1;
                }
                nfq_handle_packet (dq->h, buf, (int)n);
            }
        }
        release_due (dq, now_ns ());
    }
    return 0;
}

int main (int argc, char *argv[])
{
    struct delayq dq = {.cap = DEFAULT_MAX_HELD};
    long queue = -1, delay = -1, jitter = 0, max_held = DEFAULT_MAX_HELD;
    struct sigaction sa = {.sa_handler = on_signal};
    sigset_t block, unblocked;
    int opt;
    int rc = 1;

    while ((opt = getopt (argc, argv, "q:d:j:m:bh")) != -1) {
        switch (opt) {
        case 'q':
            if (parse_long (optarg, 0, 65535, &queue) < 0) {
                fprintf (stderr, "fm-delayq: bad queue number '%s'\n", optarg);
                return 1;
            }
            break;
        case 'd':
            if (parse_long (optarg, 0, MAX_DELAY_USEC, &delay) < 0) {
                fprintf (stderr,
                         "fm-delayq: bad delay '%s' (0..%d usec)\n",
                         optarg,
                         MAX_DELAY_USEC);
                return 1;
            }
            break;
        case 'j':
            if (parse_long (optarg, 0, MAX_DELAY_USEC, &jitter) < 0) {
                fprintf (stderr,
                         "fm-delayq: bad jitter '%s' (0..%d usec)\n",
                         optarg,
                         MAX_DELAY_USEC);
                return 1;
            }
            break;
        case 'm':
            if (parse_long (optarg, 1, MAX_MAX_HELD, &max_held) < 0) {
                fprintf (stderr,
                         "fm-delayq: bad max held '%s' (1..%d)\n",
                         optarg,
                         MAX_MAX_HELD);
                return 1;
            }
            break;
        case 'b':
            dq.bypassed = true;
            break;
        default:
            usage ();
            return opt == 'h' ? 0 : 1;
        }
    }
    if (queue < 0 || delay < 0 || optind != argc) {
        usage ();
        return 1;
    }
    dq.delay_ns = delay * 1000;
    dq.jitter_ns = jitter * 1000;
    dq.cap = (size_t)max_held;
    dq.rng = (uint64_t)now_ns () ^ ((uint64_t)getpid () << 32) ^ 0x9E3779B97F4A7C15ULL;
    if (dq.rng == 0) {
        dq.rng = 1;
    }
    if (!(dq.heap = calloc (dq.cap, sizeof (dq.heap[0])))) {
        fprintf (stderr, "fm-delayq: out of memory\n");
        return 1;
    }

    /* Signals are only delivered inside ppoll(), so no packet is half handled. */
    sigemptyset (&block);
    sigaddset (&block, SIGTERM);
    sigaddset (&block, SIGINT);
    sigprocmask (SIG_BLOCK, &block, &unblocked);
    sigdelset (&unblocked, SIGTERM);
    sigdelset (&unblocked, SIGINT);
    sigaction (SIGTERM, &sa, NULL);
    sigaction (SIGINT, &sa, NULL);

    if (!(dq.h = nfq_open ())) {
        fprintf (stderr, "fm-delayq: nfq_open: %s\n", strerror (errno));
        goto out;
    }
    if (!(dq.qh = nfq_create_queue (dq.h, (uint16_t)queue, on_packet, &dq))) {
        fprintf (stderr, "fm-delayq: bind queue %ld: %s\n", queue, strerror (errno));
        goto out;
    }
    /* only the packet id is needed for the verdict: do not copy payloads */
    if (nfq_set_mode (dq.qh, NFQNL_COPY_META, 0) < 0) {
        fprintf (stderr, "fm-delayq: set mode: %s\n", strerror (errno));
        goto out;
    }
    if (nfq_set_queue_maxlen (dq.qh, (uint32_t)dq.cap) < 0) {
        fprintf (stderr, "fm-delayq: set queue length: %s\n", strerror (errno));
        goto out;
    }
    fprintf (stderr,
             "fm-delayq: queue %ld delay %ld usec jitter %ld usec max %ld zero-share %.6f\n",
             queue,
             delay,
             jitter,
             max_held,
             zero_share (&dq));
    if (run (&dq, &unblocked) == 0) {
        rc = 0;
    }
    /* let go of everything still held rather than dropping it on exit */
    while (dq.len > 0) {
        struct held item = heap_pop (&dq);
        release (&dq, item.id);
    }
    if (dq.dropped > 0) {
        fprintf (stderr, "fm-delayq: dropped %lu packets (queue full)\n", dq.dropped);
    }
out:
    if (dq.qh) {
        nfq_destroy_queue (dq.qh);
    }
    if (dq.h) {
        nfq_close (dq.h);
    }
    free (dq.heap);
    return rc;
}
