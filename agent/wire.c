/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sodium.h>

#include "wire.h"

_Static_assert(crypto_auth_BYTES == FM_PROBE_TAG_SIZE, "tag size");
_Static_assert(crypto_auth_KEYBYTES == FM_PROBE_KEY_SIZE, "key size");

static const char *reason_names[FM_WIRE_NREASONS] = {
    [FM_WIRE_OK] = "ok",
    [FM_WIRE_BAD_SIZE] = "bad_size",
    [FM_WIRE_BAD_MAGIC] = "bad_magic",
    [FM_WIRE_BAD_VERSION] = "bad_version",
    [FM_WIRE_BAD_FORMAT] = "bad_format",
    [FM_WIRE_BAD_TAG] = "bad_tag",
    [FM_WIRE_FOREIGN] = "foreign",
};

const char *fm_wire_reason_name (fm_wire_reason_t reason)
{
    if ((unsigned)reason >= FM_WIRE_NREASONS) {
        return "unknown";
    }
    return reason_names[reason];
}

static void put16 (uint8_t *b, uint16_t v)
{
    b[0] = v >> 8;
    b[1] = v;
}

static void put32 (uint8_t *b, uint32_t v)
{
    put16 (b, v >> 16);
    put16 (b + 2, v);
}

static void put64 (uint8_t *b, uint64_t v)
{
    put32 (b, v >> 32);
    put32 (b + 4, v);
}

static uint16_t get16 (const uint8_t *b)
{
    return (uint16_t)((b[0] << 8) | b[1]);
}

static uint32_t get32 (const uint8_t *b)
{
    return ((uint32_t)get16 (b) << 16) | get16 (b + 2);
}

static uint64_t get64 (const uint8_t *b)
{
    return ((uint64_t)get32 (b) << 32) | get32 (b + 4);
}

static void put_clock (uint8_t *b, const fm_probe_clock_t *c)
{
    put64 (b, (uint64_t)c->offset_ns);
    put64 (b + 8, (uint64_t)c->drift_ppt);
    put32 (b + 16, c->bound_ns);
    put32 (b + 20, c->drift_bound_ppb);
}

static bool get_clock (const uint8_t *b, fm_probe_clock_t *c)
{
    c->offset_ns = (int64_t)get64 (b);
    c->drift_ppt = (int64_t)get64 (b + 8);
    c->bound_ns = get32 (b + 16);
    c->drift_bound_ppb = get32 (b + 20);
    return c->offset_ns >= -FM_PROBE_OFFSET_MAX_NS
           && c->offset_ns <= FM_PROBE_OFFSET_MAX_NS
           && c->drift_ppt >= -FM_PROBE_DRIFT_MAX_PPT
           && c->drift_ppt <= FM_PROBE_DRIFT_MAX_PPT;
}

int fm_wire_encode (const fm_probe_t *p,
                    const uint8_t key[FM_PROBE_KEY_SIZE],
                    uint8_t buf[FM_PROBE_SIZE])
{
    if (p->type != FM_PROBE_REQUEST && p->type != FM_PROBE_REPLY
        && p->type != FM_PROBE_BYE) {
        errno = EINVAL;
        return -1;
    }
    memset (buf, 0, FM_PROBE_SIZE);
    put32 (buf, FM_PROBE_MAGIC);
    buf[4] = FM_PROBE_VERSION;
    buf[5] = p->type;
    if (p->type == FM_PROBE_REPLY) {
        put16 (buf + 6, p->flags);
    }
    put64 (buf + 8, p->job_id);
    put16 (buf + 16, p->src_index);
    put16 (buf + 18, p->dst_index);
    put32 (buf + 20, p->epoch);
    put64 (buf + 24, p->seq);
    if (p->type == FM_PROBE_REPLY) {
        put64 (buf + 32, (uint64_t)p->t2);
        put64 (buf + 40, (uint64_t)p->t3);
        put64 (buf + 48, p->t3_seq);
        put64 (buf + 56, p->rx_count);
        put64 (buf + 64, p->rx_reorder);
        put32 (buf + 72, p->req_epoch);
        if (p->flags & (FM_PROBE_FLAG_REF | FM_PROBE_FLAG_EDGE)) {
            put64 (buf + 80, (uint64_t)p->clock_at);
        }
        if (p->flags & FM_PROBE_FLAG_REF) {
            put_clock (buf + 88, &p->ref);
        }
        if (p->flags & FM_PROBE_FLAG_EDGE) {
            put_clock (buf + 112, &p->edge);
        }
    }
    crypto_auth (buf + FM_PROBE_BODY_SIZE, buf, FM_PROBE_BODY_SIZE, key);
    return FM_PROBE_SIZE;
}

static int is_zero (const uint8_t *b, size_t n)
{
    uint8_t acc = 0;

    for (size_t i = 0; i < n; i++) {
        acc |= b[i];
    }
    return acc == 0;
}

fm_wire_reason_t fm_wire_decode (const void *data,
                                 size_t len,
                                 const uint8_t key[FM_PROBE_KEY_SIZE],
                                 uint64_t job_id,
                                 uint16_t my_index,
                                 fm_probe_t *p)
{
    const uint8_t *buf = data;
    fm_probe_t d;

    if (len != FM_PROBE_SIZE) {
        return FM_WIRE_BAD_SIZE;
    }
    if (get32 (buf) != FM_PROBE_MAGIC) {
        return FM_WIRE_BAD_MAGIC;
    }
    if (buf[4] != FM_PROBE_VERSION) {
        return FM_WIRE_BAD_VERSION;
    }
    if (crypto_auth_verify (buf + FM_PROBE_BODY_SIZE, buf, FM_PROBE_BODY_SIZE, key)
        != 0) {
        return FM_WIRE_BAD_TAG;
    }
    /* Authentic from here on, yet a peer of a newer minor revision may still
     * set bits we do not understand: refuse rather than guess.
     */
    d.type = buf[5];
    d.flags = get16 (buf + 6);
    if ((d.flags & ~FM_PROBE_FLAGS_KNOWN) != 0 || !is_zero (buf + 76, 4)) {
        return FM_WIRE_BAD_FORMAT;
    }
    if (d.type == FM_PROBE_REQUEST || d.type == FM_PROBE_BYE) {
        if (d.flags != 0 || !is_zero (buf + 32, FM_PROBE_BODY_SIZE - 32)) {
            return FM_WIRE_BAD_FORMAT;
        }
    } else if (d.type != FM_PROBE_REPLY) {
        return FM_WIRE_BAD_FORMAT;
    }
    /* an estimate in range where its flag is set, nothing where it is not */
    d.clock_at = (int64_t)get64 (buf + 80);
    if ((!(d.flags & (FM_PROBE_FLAG_REF | FM_PROBE_FLAG_EDGE)) && d.clock_at != 0)
        || ((d.flags & FM_PROBE_FLAG_REF) ? !get_clock (buf + 88, &d.ref)
                                          : !is_zero (buf + 88, 24))
        || ((d.flags & FM_PROBE_FLAG_EDGE) ? !get_clock (buf + 112, &d.edge)
                                           : !is_zero (buf + 112, 24))) {
        return FM_WIRE_BAD_FORMAT;
    }
    if (!(d.flags & FM_PROBE_FLAG_REF)) {
        d.ref = (fm_probe_clock_t){0};
    }
    if (!(d.flags & FM_PROBE_FLAG_EDGE)) {
        d.edge = (fm_probe_clock_t){0};
    }
    d.job_id = get64 (buf + 8);
    d.src_index = get16 (buf + 16);
    d.dst_index = get16 (buf + 18);
    if (d.job_id != job_id || d.dst_index != my_index || d.src_index == my_index) {
        return FM_WIRE_FOREIGN;
    }
    d.epoch = get32 (buf + 20);
    d.seq = get64 (buf + 24);
    d.t2 = (int64_t)get64 (buf + 32);
    d.t3 = (int64_t)get64 (buf + 40);
    d.t3_seq = get64 (buf + 48);
    d.rx_count = get64 (buf + 56);
    d.rx_reorder = get64 (buf + 64);
    d.req_epoch = get32 (buf + 72);
    *p = d;
    return FM_WIRE_OK;
}
