/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_PROBE_H
#define FM_PROBE_H

#include <stdint.h>

/* The UDP probe exchanged between the fabric-agents of one job.
 *
 * Every field is big-endian and at a fixed offset; a datagram is exactly
 * FM_PROBE_SIZE bytes: FM_PROBE_BODY_SIZE bytes of body followed by an
 * FM_PROBE_TAG_SIZE byte crypto_auth (HMAC-SHA512-256) tag over the body,
 * keyed with the job's 32-byte probe key handed out by fabricd. A receiver
 * drops (and counts) any datagram of another size, magic, version or type,
 * with non-zero reserved bits, an estimate out of range, a foreign job id or
 * a bad tag.
 *
 *   off size field
 *     0    4 magic        FM_PROBE_MAGIC ("FMPR")
 *     4    1 version      FM_PROBE_VERSION
 *     5    1 type         fm_probe_type_t
 *     6    2 flags        reply: fm_probe_flag_b; request: 0
 *     8    8 job_id       Slurm job id
 *    16    2 src_index    sender's index in the job's node list
 *    18    2 dst_index    intended receiver's index
 *    20    4 epoch        random per agent start; sequence numbers restart with it
 *    24    8 seq          request: sender's sequence; reply: the request's seq
 *    32    8 t2           reply: responder's receive time of request `seq`
 *    40    8 t3           reply: responder's transmit time of its reply to `t3_seq`
 *    48    8 t3_seq       reply: which earlier request t3 belongs to
 *                         (FM_PROBE_SEQ_NONE: none)
 *    56    8 rx_count     reply: requests from this requester+epoch so far
 *    64    8 rx_reorder   reply: those that arrived after a higher seq
 *    72    4 req_epoch    reply: the requester epoch being answered
 *    76    4 reserved     0
 *    80    8 clock_at     reply: the responder's time of the two estimates
 *                         below (FM_PROBE_FLAG_REF or _EDGE set)
 *    88   24 ref          reply, FM_PROBE_FLAG_REF: the responder's estimate
 *                         of the job's reference clock, reference - responder
 *   112   24 edge         reply, FM_PROBE_FLAG_EDGE: the responder's own
 *                         estimate of the requester, requester - responder
 *   136   32 tag          crypto_auth over bytes 0..135
 *
 * An estimate (ref, edge) is, at its offset:
 *     0    8 offset_ns        at clock_at
 *     8    8 drift_ppt        d offset / dt, 10^-12 (|x| <= FM_PROBE_DRIFT_MAX_PPT)
 *    16    4 bound_ns         error bound of offset_ns
 *    20    4 drift_bound_ppb  error bound of the drift, rounded up
 * and all zero where its flag is clear.
 *
 * Times are nanoseconds of the sender's clock (kernel SO_TIMESTAMPING
 * stamps, CLOCK_REALTIME domain). Kernel transmit stamps are only known after
 * a datagram has left, so a reply carries the transmit time of the previous
 * reply to the same requester ("interleaved" mode, as in chrony): the
 * requester keeps t1 (its own transmit stamp) and t4 (its receive stamp) per
 * seq and completes the four-timestamp sample for t3_seq when the next reply
 * arrives. Requests (and byes) leave t2..edge zero.
 *
 * An agent that stops sends a bye to every node of the job, so that their
 * requests outstanding to it and its silence afterwards are not taken for
 * network loss.
 *
 * Where the NIC's hardware timestamping is enabled, stamps come from the
 * NIC's clock (PHC) instead; the flags say which stamps of a reply are
 * hardware ones, and a requester only combines four stamps of one kind.
 *
 * The estimates a reply carries are the network effect's messages
 * (doc/clock.md, Network effect): with the responder's estimate of the
 * reference and of the requester, the requester combines its own estimates
 * of all its peers into one of the reference, at every refresh, and the
 * role bias of one end's estimate of an edge cancels against the other's.
 */

#define FM_PROBE_MAGIC 0x464d5052u /* "FMPR" */
#define FM_PROBE_VERSION 2
#define FM_PROBE_BODY_SIZE 136
#define FM_PROBE_TAG_SIZE 32
#define FM_PROBE_KEY_SIZE 32
#define FM_PROBE_SIZE (FM_PROBE_BODY_SIZE + FM_PROBE_TAG_SIZE)
#define FM_PROBE_SEQ_NONE UINT64_MAX
/* 1000 ppm: no oscillator runs further off, virtual clocks included */
#define FM_PROBE_DRIFT_MAX_PPT 1000000000000LL
/* offsets beyond a day are no clock of this job's */
#define FM_PROBE_OFFSET_MAX_NS (86400LL * 1000000000LL)

typedef enum {
    FM_PROBE_REQUEST = 1,
    FM_PROBE_REPLY = 2,
    FM_PROBE_BYE = 3, /* the sender stops: do not count its silence as loss */
} fm_probe_type_t;

typedef enum {
    FM_PROBE_FLAG_T2_HW = 1, /* t2 is a hardware receive stamp */
    FM_PROBE_FLAG_T3_HW = 2, /* t3 is a hardware transmit stamp */
    FM_PROBE_FLAG_REF = 4,   /* ref holds an estimate */
    FM_PROBE_FLAG_EDGE = 8,  /* edge holds an estimate */
} fm_probe_flag_b;

#define FM_PROBE_FLAGS_KNOWN                                                           \
    (FM_PROBE_FLAG_T2_HW | FM_PROBE_FLAG_T3_HW | FM_PROBE_FLAG_REF | FM_PROBE_FLAG_EDGE)

/* One clock estimate on the wire (see the layout above). */
typedef struct {
    int64_t offset_ns;
    int64_t drift_ppt;
    uint32_t bound_ns;
    uint32_t drift_bound_ppb;
} fm_probe_clock_t;

/* The decoded form of one probe datagram (host byte order). */
typedef struct {
    uint8_t type;
    uint16_t flags;
    uint64_t job_id;
    uint16_t src_index;
    uint16_t dst_index;
    uint32_t epoch;
    uint64_t seq;
    int64_t t2;
    int64_t t3;
    uint64_t t3_seq;
    uint64_t rx_count;
    uint64_t rx_reorder;
    uint32_t req_epoch;
    int64_t clock_at;
    fm_probe_clock_t ref;
    fm_probe_clock_t edge;
} fm_probe_t;

#endif /* FM_PROBE_H */
