/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <string.h>

#include "clock.h"
#include "clock_private.h"
#include "fuzz.h"

/* Clock estimators (lib/clock*.c) fed hostile probe timestamps: the agent takes
 * t2/t3 from peers' packets, so any int64 can arrive. Input: a 4-byte header
 * (estimator, all_pairs and trim, capacity, min_samples, window), then 33-byte
 * records: an op byte and four int64 (big-endian). Op bit 6 makes the four
 * values small offsets around a running "now", so that the fuzzer also builds
 * plausible sample series; without it they are taken raw (INT64_MIN, backwards
 * time, ...).
 *   op & 3 == 0: exchange t1..t4; 1: coded pair (dir from bit 2) tx0 tx1 rx0 rx1;
 *   2: estimate at the first value; 3: reset.
 * Oracles: add() returns 0 or 1 and counts the sample once (accepted, impure
 * or invalid), except a well-formed exchange fed to huygens, which only
 * follows the paths for holdover and is not counted; an estimate is either
 * valid with a non-negative bound, finite drift and sample counts, or refused
 * with EAGAIN; stats never go down. Every estimate also goes through the
 * agent's smoothing (fm_clock_smooth, span = the window): it moves an offset
 * by no more than it widens the bound, and never narrows it.
 */

#define RECORD 33

static int64_t get64 (const uint8_t *p)
{
    uint64_t v = 0;

    for (int i = 0; i < 8; i++) {
        v = v << 8 | p[i];
    }
    return (int64_t)v;
}

static void check_estimate (fm_clock_est_t *est, fm_clock_smooth_t *sm, int64_t at)
{
    fm_clock_estimate_t e, smoothed;
    int rc;

    errno = 0;
    rc = fm_clock_est_estimate (est, at, &e);
    fuzz_check (e.why != NULL);
    fuzz_check (e.at_ns == at);
    if (rc == 0) {
        fuzz_check (e.valid);
        fuzz_check (e.bound_ns >= 0);
        fuzz_check (isfinite (e.drift_ppb));
    } else {
        fuzz_check (rc == -1 && errno == EAGAIN && !e.valid);
    }
    smoothed = e;
    fm_clock_smooth_apply (sm, &smoothed);
    fuzz_check (smoothed.valid == e.valid && smoothed.bound_ns >= e.bound_ns);
    if (smoothed.offset_ns != e.offset_ns) {
        uint64_t moved = smoothed.offset_ns > e.offset_ns
                             ? (uint64_t)smoothed.offset_ns - (uint64_t)e.offset_ns
                             : (uint64_t)e.offset_ns - (uint64_t)smoothed.offset_ns;

        fuzz_check (moved == (uint64_t)(smoothed.bound_ns - e.bound_ns));
    }
    fm_clock_smooth_add (sm, &e);
    fuzz_check (sm->n <= FM_CLOCK_SMOOTH_MAX && (e.valid || sm->n == 0));
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    fm_clock_config_t cfg;
    fm_clock_stats_t st, prev = {0};
    fm_error_t err;
    fm_clock_est_t *est;
    fm_clock_smooth_t sm;
    int64_t now = 1800000000000000000LL;
    bool huygens;

    if (size < 4) {
        return -1;
    }
    fm_clock_config_default (&cfg);
    /* Small capacities and windows reach the expiry paths quickly. */
    cfg.capacity = 2u + data[1];
    cfg.min_samples = 2u + data[2] % (cfg.capacity - 1);
    cfg.window_ns = (1 + (int64_t)data[3]) * 20000000LL;
    cfg.min_span_ns = cfg.window_ns / 4;
    cfg.all_pairs = data[0] & 2;
    cfg.trim = (data[0] >> 2 & 3) * FM_CLOCK_TRIM_MAX / 3;
    fuzz_check (fm_clock_config_check (&cfg, &err) == 0);
    huygens = data[0] & 1;
    fm_clock_smooth_init (&sm, cfg.window_ns);
    est = fm_clock_est_create (
        huygens ? FM_CLOCK_EST_HUYGENS : FM_CLOCK_EST_NAIVE, &cfg, &err);
    fuzz_check (est != NULL);
    for (size_t off = 4; off + RECORD <= size; off += RECORD) {
        uint8_t op = data[off];
        int64_t v[4];
        fm_clock_sample_t s;
        int rc;

        for (int i = 0; i < 4; i++) {
            v[i] = get64 (data + off + 1 + 8 * i);
            if (op & 0x40) {
                v[i] = now + (int32_t)(uint32_t)v[i];
            }
        }
        if (op & 0x40) {
            now += (int64_t)(uint16_t)v[0] * 1000;
        }
        memset (&s, 0, sizeof (s));
        switch (op & 3) {
        case 0:
            s.type = FM_CLOCK_SAMPLE_EXCHANGE;
            s.exchange = (fm_clock_exchange_t){v[0], v[1], v[2], v[3]};
            break;
        case 1:
            s.type = FM_CLOCK_SAMPLE_PAIR;
            s.pair.dir = op & 4 ? FM_CLOCK_DIR_IN : FM_CLOCK_DIR_OUT;
            s.pair.tx_ns[0] = v[0];
            s.pair.tx_ns[1] = v[1];
            s.pair.rx_ns[0] = v[2];
            s.pair.rx_ns[1] = v[3];
            (void)fm_clock_pair_is_pure (&s.pair, cfg.guard_ns, cfg.max_gap_ns);
            break;
        case 2:
            check_estimate (est, &sm, v[0]);
            continue;
        default:
            fm_clock_est_reset (est);
            continue;
        }
        rc = fm_clock_est_add (est, &s);
        fuzz_check (rc == 0 || rc == 1);
        fm_clock_est_stats (est, &st);
        fuzz_check (st.accepted >= prev.accepted && st.impure >= prev.impure
                    && st.invalid >= prev.invalid && st.expired >= prev.expired);
        fuzz_check (st.accepted + st.impure + st.invalid
                    == prev.accepted + prev.impure + prev.invalid
                           + (huygens && s.type == FM_CLOCK_SAMPLE_EXCHANGE
                                      && fm_clock_exchange_ok (&s.exchange)
                                  ? 0
                                  : 1));
        prev = st;
    }
    check_estimate (est, &sm, now);
    fm_clock_est_destroy (est);
    return 0;
}
