/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include <sodium.h>

#include "wire.h"
#include "fuzz.h"

/* Probe datagrams (agent/wire.c). Input: one control byte, the receiver's
 * index (2 bytes) and job id (8 bytes), then the datagram. A random tag never
 * verifies, so control bit 0 asks the harness to sign the body with the key
 * first: that lets the fuzzer reach the field checks after the tag.
 * Oracles: a decoded probe re-encodes to the very same bytes (the decoder
 * refuses every bit the encoder would not write), and the reason is one of
 * the enumerated ones.
 */

static uint8_t key[FM_PROBE_KEY_SIZE];

int LLVMFuzzerInitialize (int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (sodium_init () < 0) {
        abort ();
    }
    for (size_t i = 0; i < sizeof (key); i++) {
        key[i] = (uint8_t)(0x5a ^ i);
    }
    return 0;
}

static bool clock_equal (const fm_probe_clock_t *a, const fm_probe_clock_t *b)
{
    return a->offset_ns == b->offset_ns && a->drift_ppt == b->drift_ppt
           && a->bound_ns == b->bound_ns && a->drift_bound_ppb == b->drift_bound_ppb;
}

/* Field by field: struct padding is not part of the contract. */
static bool probe_equal (const fm_probe_t *a, const fm_probe_t *b)
{
    return a->type == b->type && a->flags == b->flags && a->job_id == b->job_id
           && a->src_index == b->src_index && a->dst_index == b->dst_index
           && a->epoch == b->epoch && a->seq == b->seq && a->t2 == b->t2
           && a->t3 == b->t3 && a->t3_seq == b->t3_seq && a->rx_count == b->rx_count
           && a->rx_reorder == b->rx_reorder && a->req_epoch == b->req_epoch
           && a->clock_at == b->clock_at && clock_equal (&a->ref, &b->ref)
           && clock_equal (&a->edge, &b->edge);
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    uint8_t buf[FM_PROBE_SIZE];
    uint8_t *dgram;
    uint16_t my_index;
    uint64_t job_id = 0;
    fm_probe_t p, untouched;
    fm_wire_reason_t r;
    size_t len;
    bool sign;

    if (size < 11) {
        return -1;
    }
    sign = data[0] & 1;
    my_index = (uint16_t)(data[1] << 8 | data[2]);
    for (int i = 0; i < 8; i++) {
        job_id = job_id << 8 | data[3 + i];
    }
    data += 11;
    len = size - 11;
    /* A copy of exactly len bytes, so that ASan catches a read past the end. */
    if (!(dgram = malloc (len ? len : 1))) {
        abort ();
    }
    if (len > 0) {
        memcpy (dgram, data, len);
    }
    if (sign && len == FM_PROBE_SIZE) {
        crypto_auth (dgram + FM_PROBE_BODY_SIZE, dgram, FM_PROBE_BODY_SIZE, key);
    }
    memset (&p, 0xa5, sizeof (p));
    untouched = p;
    r = fm_wire_decode (dgram, len, key, job_id, my_index, &p);
    fuzz_check (r >= FM_WIRE_OK && r < FM_WIRE_NREASONS);
    fuzz_check (fm_wire_reason_name (r) != NULL);
    if (r == FM_WIRE_OK) {
        fuzz_check (len == FM_PROBE_SIZE);
        fuzz_check (p.job_id == job_id && p.dst_index == my_index);
        fuzz_check (fm_wire_encode (&p, key, buf) == FM_PROBE_SIZE);
        fuzz_check (memcmp (buf, dgram, FM_PROBE_SIZE) == 0);
        /* And a second round trip through the decoder. */
        fuzz_check (
            fm_wire_decode (buf, sizeof (buf), key, job_id, my_index, &untouched)
            == FM_WIRE_OK);
        fuzz_check (probe_equal (&untouched, &p));
    } else {
        fuzz_check (memcmp (&p, &untouched, sizeof (p)) == 0);
    }
    free (dgram);
    return 0;
}
