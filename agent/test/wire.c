/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <sodium.h>

#include "fm/api.h"
#include "wire.h"

static uint8_t key[FM_PROBE_KEY_SIZE];

static fm_probe_t sample_reply (void)
{
    return (fm_probe_t){
        .type = FM_PROBE_REPLY,
        .flags = FM_PROBE_FLAG_T3_HW | FM_PROBE_FLAG_REF | FM_PROBE_FLAG_EDGE,
        .job_id = 4294967294ULL,
        .src_index = 3,
        .dst_index = 1,
        .epoch = 0xdeadbeef,
        .seq = 0x0102030405060708ULL,
        .t2 = 1764686400123456789LL,
        .t3 = 1764686400123999999LL,
        .t3_seq = 41,
        .rx_count = 42,
        .rx_reorder = 2,
        .req_epoch = 0xcafef00d,
        .clock_at = 1764686400000000001LL,
        .ref = {.offset_ns = -3000123,
                .drift_ppt = -25000123456LL,
                .bound_ns = 41,
                .drift_bound_ppb = 17},
        .edge = {.offset_ns = 5000000,
                 .drift_ppt = FM_PROBE_DRIFT_MAX_PPT,
                 .bound_ns = UINT32_MAX,
                 .drift_bound_ppb = 0},
    };
}

static int setup (void **state)
{
    if (sodium_init () < 0) {
        return -1;
    }
    for (size_t i = 0; i < sizeof (key); i++) {
        key[i] = (uint8_t)(i * 7 + 1);
    }
    return 0;
}

static void assert_probe_equal (const fm_probe_t *a, const fm_probe_t *b)
{
    assert_int_equal (a->type, b->type);
    assert_int_equal (a->flags, b->flags);
    assert_int_equal (a->job_id, b->job_id);
    assert_int_equal (a->src_index, b->src_index);
    assert_int_equal (a->dst_index, b->dst_index);
    assert_int_equal (a->epoch, b->epoch);
    assert_int_equal (a->seq, b->seq);
    assert_int_equal (a->t2, b->t2);
    assert_int_equal (a->t3, b->t3);
    assert_int_equal (a->t3_seq, b->t3_seq);
    assert_int_equal (a->rx_count, b->rx_count);
    assert_int_equal (a->rx_reorder, b->rx_reorder);
    assert_int_equal (a->req_epoch, b->req_epoch);
    assert_int_equal (a->clock_at, b->clock_at);
    assert_memory_equal (&a->ref, &b->ref, sizeof (a->ref));
    assert_memory_equal (&a->edge, &b->edge, sizeof (a->edge));
}

static void test_roundtrip_reply (void **state)
{
    fm_probe_t p = sample_reply (), d;
    uint8_t buf[FM_PROBE_SIZE];

    assert_int_equal (fm_wire_encode (&p, key, buf), FM_PROBE_SIZE);
    assert_int_equal (fm_wire_decode (buf, sizeof (buf), key, p.job_id, 1, &d),
                      FM_WIRE_OK);
    assert_probe_equal (&p, &d);
    /* negative times survive the unsigned wire encoding */
    p.t2 = -5;
    p.t3_seq = FM_PROBE_SEQ_NONE;
    fm_wire_encode (&p, key, buf);
    assert_int_equal (fm_wire_decode (buf, sizeof (buf), key, p.job_id, 1, &d),
                      FM_WIRE_OK);
    assert_probe_equal (&p, &d);
}

static void test_layout (void **state)
{
    fm_probe_t p = sample_reply ();
    uint8_t buf[FM_PROBE_SIZE];
    static const uint8_t head[] = {
        'F', 'M', 'P', 'R', 2,    2,    0,    14,   0, 0, 0, 0, 0xff, 0xff, 0xff, 0xfe,
        0,   3,   0,   1,   0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5,    6,    7,    8};
    uint8_t tag[FM_PROBE_TAG_SIZE];

    fm_wire_encode (&p, key, buf);
    /* big-endian at the documented offsets: other implementations rely on it */
    assert_memory_equal (buf, head, sizeof (head));
    assert_int_equal (buf[48 + 7], 41);
    assert_int_equal (buf[56 + 7], 42);
    assert_int_equal (buf[64 + 7], 2);
    assert_int_equal (buf[72], 0xca);
    assert_int_equal (buf[75], 0x0d);
    assert_int_equal (buf[80 + 7], 0x01);   /* clock_at */
    assert_int_equal (buf[88], 0xff);       /* ref offset, negative */
    assert_int_equal (buf[88 + 8], 0xff);   /* ref drift, negative */
    assert_int_equal (buf[88 + 19], 41);    /* ref bound */
    assert_int_equal (buf[88 + 23], 17);    /* ref drift bound */
    assert_int_equal (buf[112 + 5], 0x4c);  /* edge offset 5000000 = 0x4c4b40 */
    assert_int_equal (buf[112 + 16], 0xff); /* edge bound */
    crypto_auth (tag, buf, FM_PROBE_BODY_SIZE, key);
    assert_memory_equal (buf + FM_PROBE_BODY_SIZE, tag, sizeof (tag));
}

static void test_request_clears_reply_fields (void **state)
{
    fm_probe_t p = sample_reply (), d;
    uint8_t buf[FM_PROBE_SIZE];

    p.type = FM_PROBE_REQUEST;
    fm_wire_encode (&p, key, buf);
    assert_int_equal (buf[6] | buf[7], 0); /* flags are for replies */
    for (int i = 32; i < FM_PROBE_BODY_SIZE; i++) {
        assert_int_equal (buf[i], 0);
    }
    assert_int_equal (fm_wire_decode (buf, sizeof (buf), key, p.job_id, 1, &d),
                      FM_WIRE_OK);
    assert_int_equal (d.type, FM_PROBE_REQUEST);
    assert_int_equal (d.t2, 0);
    assert_int_equal (d.flags, 0);
    assert_int_equal (d.seq, p.seq);
}

static void test_bye (void **state)
{
    fm_probe_t p = sample_reply (), d;
    uint8_t buf[FM_PROBE_SIZE];

    p.type = FM_PROBE_BYE;
    assert_int_equal (fm_wire_encode (&p, key, buf), FM_PROBE_SIZE);
    assert_int_equal (buf[5], 3);
    for (int i = 32; i < FM_PROBE_BODY_SIZE; i++) {
        assert_int_equal (buf[i], 0);
    }
    assert_int_equal (fm_wire_decode (buf, sizeof (buf), key, p.job_id, 1, &d),
                      FM_WIRE_OK);
    assert_int_equal (d.type, FM_PROBE_BYE);
    assert_int_equal (d.epoch, p.epoch);
    buf[40] = 1; /* a bye carries no times */
    crypto_auth (buf + FM_PROBE_BODY_SIZE, buf, FM_PROBE_BODY_SIZE, key);
    assert_int_equal (fm_wire_decode (buf, sizeof (buf), key, p.job_id, 1, &d),
                      FM_WIRE_BAD_FORMAT);
}

static void test_encode_bad_type (void **state)
{
    fm_probe_t p = sample_reply ();
    uint8_t buf[FM_PROBE_SIZE];

    p.type = 4;
    errno = 0;
    assert_int_equal (fm_wire_encode (&p, key, buf), -1);
    assert_int_equal (errno, EINVAL);
}

/* Re-authenticate a modified body, as a peer holding the key could. */
static void resign (uint8_t *buf)
{
    crypto_auth (buf + FM_PROBE_BODY_SIZE, buf, FM_PROBE_BODY_SIZE, key);
}

static void test_rejects (void **state)
{
    fm_probe_t p = sample_reply (), d, untouched;
    uint8_t good[FM_PROBE_SIZE], buf[FM_PROBE_SIZE + 1];
    uint8_t other_key[FM_PROBE_KEY_SIZE] = {0};

    fm_wire_encode (&p, key, good);
    memset (&untouched, 0x5a, sizeof (untouched));

    /* every reason, and d must stay untouched each time */
    d = untouched;
    memcpy (buf, good, sizeof (good));
    assert_int_equal (fm_wire_decode (buf, FM_PROBE_SIZE - 1, key, p.job_id, 1, &d),
                      FM_WIRE_BAD_SIZE);
    assert_int_equal (fm_wire_decode (buf, FM_PROBE_SIZE + 1, key, p.job_id, 1, &d),
                      FM_WIRE_BAD_SIZE);
    assert_int_equal (fm_wire_decode (buf, 0, key, p.job_id, 1, &d), FM_WIRE_BAD_SIZE);

    memcpy (buf, good, sizeof (good));
    buf[0] = 'X';
    assert_int_equal (fm_wire_decode (buf, FM_PROBE_SIZE, key, p.job_id, 1, &d),
                      FM_WIRE_BAD_MAGIC);

    for (int v = 1; v <= 3; v += 2) {
        memcpy (buf, good, sizeof (good));
        buf[4] = (uint8_t)v;
        resign (buf);
        assert_int_equal (fm_wire_decode (buf, FM_PROBE_SIZE, key, p.job_id, 1, &d),
                          FM_WIRE_BAD_VERSION);
    }

    /* a flipped bit anywhere in body or tag breaks authentication */
    for (int i = 5; i < FM_PROBE_SIZE; i += 7) {
        memcpy (buf, good, sizeof (good));
        buf[i] ^= 0x10;
        assert_int_equal (fm_wire_decode (buf, FM_PROBE_SIZE, key, p.job_id, 1, &d),
                          FM_WIRE_BAD_TAG);
    }
    assert_int_equal (fm_wire_decode (good, FM_PROBE_SIZE, other_key, p.job_id, 1, &d),
                      FM_WIRE_BAD_TAG);

    memcpy (buf, good, sizeof (good));
    buf[5] = 9; /* unknown type */
    resign (buf);
    assert_int_equal (fm_wire_decode (buf, FM_PROBE_SIZE, key, p.job_id, 1, &d),
                      FM_WIRE_BAD_FORMAT);
    memcpy (buf, good, sizeof (good));
    buf[7] |= 0x10; /* an unknown flag */
    resign (buf);
    assert_int_equal (fm_wire_decode (buf, FM_PROBE_SIZE, key, p.job_id, 1, &d),
                      FM_WIRE_BAD_FORMAT);
    memcpy (buf, good, sizeof (good));
    buf[6] = 0x80;
    resign (buf);
    assert_int_equal (fm_wire_decode (buf, FM_PROBE_SIZE, key, p.job_id, 1, &d),
                      FM_WIRE_BAD_FORMAT);
    memcpy (buf, good, sizeof (good));
    buf[79] = 1; /* reserved tail */
    resign (buf);
    assert_int_equal (fm_wire_decode (buf, FM_PROBE_SIZE, key, p.job_id, 1, &d),
                      FM_WIRE_BAD_FORMAT);
    memcpy (buf, good, sizeof (good));
    buf[7] &= ~FM_PROBE_FLAG_EDGE; /* an estimate without its flag */
    resign (buf);
    assert_int_equal (fm_wire_decode (buf, FM_PROBE_SIZE, key, p.job_id, 1, &d),
                      FM_WIRE_BAD_FORMAT);
    memcpy (buf, good, sizeof (good));
    buf[7] = 0; /* a time of estimates without any */
    memset (buf + 88, 0, 48);
    resign (buf);
    assert_int_equal (fm_wire_decode (buf, FM_PROBE_SIZE, key, p.job_id, 1, &d),
                      FM_WIRE_BAD_FORMAT);
    memcpy (buf, good, sizeof (good));
    buf[112 + 15]++; /* the edge's drift just beyond its range */
    resign (buf);
    assert_int_equal (fm_wire_decode (buf, FM_PROBE_SIZE, key, p.job_id, 1, &d),
                      FM_WIRE_BAD_FORMAT);
    memcpy (buf, good, sizeof (good));
    buf[88] = 0x7f; /* the reference offset beyond a day */
    resign (buf);
    assert_int_equal (fm_wire_decode (buf, FM_PROBE_SIZE, key, p.job_id, 1, &d),
                      FM_WIRE_BAD_FORMAT);
    memcpy (buf, good, sizeof (good));
    buf[5] = FM_PROBE_REQUEST; /* a request must not carry reply fields */
    resign (buf);
    assert_int_equal (fm_wire_decode (buf, FM_PROBE_SIZE, key, p.job_id, 1, &d),
                      FM_WIRE_BAD_FORMAT);

    assert_int_equal (fm_wire_decode (good, FM_PROBE_SIZE, key, p.job_id + 1, 1, &d),
                      FM_WIRE_FOREIGN);
    assert_int_equal (fm_wire_decode (good, FM_PROBE_SIZE, key, p.job_id, 2, &d),
                      FM_WIRE_FOREIGN);
    /* a datagram claiming to come from ourselves is a reflection */
    assert_int_equal (fm_wire_decode (good, FM_PROBE_SIZE, key, p.job_id, 3, &d),
                      FM_WIRE_FOREIGN);
    assert_memory_equal (&d, &untouched, sizeof (d));
}

static void test_reason_names (void **state)
{
    assert_string_equal (fm_wire_reason_name (FM_WIRE_BAD_TAG), "bad_tag");
    assert_string_equal (fm_wire_reason_name (FM_WIRE_FOREIGN), "foreign");
    assert_string_equal (fm_wire_reason_name (FM_WIRE_NREASONS), "unknown");
    for (int i = 0; i < FM_WIRE_NREASONS; i++) {
        assert_non_null (fm_wire_reason_name (i));
        assert_string_not_equal (fm_wire_reason_name (i), "unknown");
    }
    /* a report's probe_drops keys are these names (doc/api.md) */
    {
        static const char *const api[] = {FM_API_PROBE_DROP_REASONS};
        for (int i = 1; i < FM_WIRE_NREASONS; i++) {
            assert_string_equal (fm_wire_reason_name (i), api[i - 1]);
        }
        assert_string_equal (api[FM_API_PROBE_DROP_NREASONS - 1], "unknown_sender");
    }
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_roundtrip_reply),
        cmocka_unit_test (test_layout),
        cmocka_unit_test (test_request_clears_reply_fields),
        cmocka_unit_test (test_bye),
        cmocka_unit_test (test_encode_bad_type),
        cmocka_unit_test (test_rejects),
        cmocka_unit_test (test_reason_names),
    };
    return cmocka_run_group_tests (tests, setup, NULL);
}
