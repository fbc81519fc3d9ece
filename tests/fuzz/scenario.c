/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

#include "scenario.h"
#include "fuzz.h"

/* fabric-sim scenario documents (bench/scenario.c, doc/scenario.md). Input: the
 * document text (up to the first NUL). Oracles:
 * - refused: -1, errno set, a message, and *sc exactly as it was;
 * - accepted: every field within the ranges doc/scenario.md gives, each fault
 *   consistent (at_s < until_s, a target of the topology's kinds whose parts
 *   spell the target back, the field of its kind in range);
 * - the accepted scenario, printed back as a document with every field written
 *   out, parses again to the same scenario (print, parse, print is stable), so
 *   nothing the parser accepts is something it would itself refuse.
 */

#define SC_DURATION_MAX (30 * 86400.0)

/* A growing text buffer; aborts on ENOMEM, which is not a finding. */
typedef struct {
    char *s;
    size_t len, cap;
} buf_t;

__attribute__ ((format (printf, 2, 3))) static void
bprintf (buf_t *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start (ap, fmt);
    n = vsnprintf (NULL, 0, fmt, ap);
    va_end (ap);
    fuzz_check (n >= 0);
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = (b->len + (size_t)n + 1) * 2;
        char *s = realloc (b->s, cap);
        if (!s) {
            abort ();
        }
        b->s = s;
        b->cap = cap;
    }
    va_start (ap, fmt);
    vsnprintf (b->s + b->len, b->cap - b->len, fmt, ap);
    va_end (ap);
    b->len += (size_t)n;
}

/* Target names come from JSON strings: escape what JSON needs escaped. */
static void bstring (buf_t *b, const char *s)
{
    bprintf (b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            bprintf (b, "\\%c", c);
        } else if (c < 0x20) {
            bprintf (b, "\\u%04x", c);
        } else {
            bprintf (b, "%c", c);
        }
    }
    bprintf (b, "\"");
}

static const char *const kinds[] = {"loss", "delay", "down", "flap"};
static const char *const dirs[] = {"", "tx", "rx", "both"};

/* %.17g: every double prints back to itself. */
static char *print (const fm_scenario_t *sc)
{
    buf_t b = {0};

    bprintf (&b,
             "{\"seed\": %.17g, \"duration_s\": %.17g, ",
             (double)sc->seed,
             sc->duration_s);
    if (sc->leafspine) {
        bprintf (&b,
                 "\"topology\": {\"kind\": \"leafspine\", \"leaves\": %d, "
                 "\"nodes_per_leaf\": %d, \"spines\": %d}, ",
                 sc->leaves,
                 sc->nodes_per_leaf,
                 sc->spines);
    } else {
        bprintf (&b, "\"topology\": {\"kind\": \"flat\", \"nodes\": %d}, ", sc->nodes);
    }
    bprintf (
        &b,
        "\"probing\": {\"peers\": %d, \"rate_hz\": %.17g, \"window_s\": %.17g}, "
        "\"noise\": {\"base_owd_us\": %.17g, \"jitter_us\": %.17g, \"loss\": %.17g}, "
        "\"policy\": {\"dry_run\": %s",
        sc->peers,
        sc->rate_hz,
        sc->window_s,
        sc->base_owd_us,
        sc->jitter_us,
        sc->loss,
        sc->dry_run ? "true" : "false");
    if (sc->max_drain_fraction >= 0) {
        bprintf (&b, ", \"max_drain_fraction\": %.17g", sc->max_drain_fraction);
    }
    if (sc->max_drains_per_hour >= 0) {
        bprintf (&b, ", \"max_drains_per_hour\": %d", sc->max_drains_per_hour);
    }
    bprintf (&b, "}, \"faults\": [");
    for (size_t i = 0; i < sc->nfaults; i++) {
        const fm_sim_fault_t *f = &sc->faults[i];
        bprintf (&b,
                 "%s{\"at_s\": %.17g, \"until_s\": %.17g, \"kind\": \"%s\", \"dir\": "
                 "\"%s\", \"target\": ",
                 i ? ", " : "",
                 f->at_s,
                 f->until_s,
                 kinds[f->kind],
                 dirs[f->dir]);
        bstring (&b, f->target);
        if (f->kind == FM_SIM_LOSS) {
            bprintf (&b, ", \"value\": %.17g", f->value);
        } else if (f->kind == FM_SIM_DELAY) {
            bprintf (&b, ", \"value_us\": %.17g", f->value_us);
        } else if (f->kind == FM_SIM_FLAP) {
            bprintf (&b, ", \"period_s\": %.17g", f->period_s);
        }
        bprintf (&b, "}");
    }
    bprintf (&b, "]}");
    return b.s;
}

static bool terminated (const char *s, size_t size)
{
    return memchr (s, '\0', size) != NULL;
}

static void check_fault (const fm_scenario_t *sc, const fm_sim_fault_t *f)
{
    char spelled[sizeof (f->target) + 8];

    fuzz_check (f->at_s >= 0 && f->at_s <= sc->duration_s);
    fuzz_check (f->until_s > f->at_s && isfinite (f->until_s));
    fuzz_check ((unsigned)f->kind <= FM_SIM_FLAP);
    fuzz_check (f->dir >= 1 && f->dir <= 3);
    fuzz_check (f->period_s >= 0.001 && isfinite (f->period_s));
    if (f->kind == FM_SIM_LOSS) {
        fuzz_check (f->value > 0 && f->value <= 1);
    }
    if (f->kind == FM_SIM_DELAY) {
        fuzz_check (f->value_us >= 0.001 && f->value_us <= 1e7);
    }
    fuzz_check (terminated (f->target, sizeof (f->target)));
    fuzz_check (terminated (f->a, sizeof (f->a)) && terminated (f->b, sizeof (f->b)));
    fuzz_check (f->a[0] != '\0');
    fuzz_check (sc->leafspine || f->target_kind == FM_SIM_NODE);
    switch (f->target_kind) {
    case FM_SIM_NODE:
        snprintf (spelled, sizeof (spelled), "node:%s", f->a);
        break;
    case FM_SIM_SWITCH:
        snprintf (spelled, sizeof (spelled), "switch:%s", f->a);
        break;
    case FM_SIM_UPLINK:
        fuzz_check (f->b[0] != '\0');
        snprintf (spelled, sizeof (spelled), "uplink:%s-%s", f->a, f->b);
        break;
    default:
        fuzz_check (!"target kind");
    }
    fuzz_check (strcmp (spelled, f->target) == 0);
}

static void check (const fm_scenario_t *sc)
{
    double probes = sc->rate_hz * sc->window_s;

    fuzz_check (sc->seed <= (1ULL << 53));
    fuzz_check (sc->duration_s >= 1 && sc->duration_s <= SC_DURATION_MAX);
    fuzz_check (sc->nodes >= 2 && sc->nodes <= FM_SCENARIO_MAX_NODES);
    if (sc->leafspine) {
        fuzz_check (sc->leaves >= 1 && sc->leaves <= 65536);
        fuzz_check (sc->nodes_per_leaf >= 1 && sc->nodes_per_leaf <= 65536);
        fuzz_check (sc->spines >= 1 && sc->spines <= 4096);
        fuzz_check ((long long)sc->leaves * sc->nodes_per_leaf == sc->nodes);
    }
    fuzz_check (sc->peers >= 1 && sc->peers <= 1024);
    fuzz_check (sc->rate_hz >= 0.01 && sc->rate_hz <= 10000);
    fuzz_check (sc->window_s >= 0.1 && sc->window_s <= 3600);
    fuzz_check (probes >= 1 && probes <= 1e6);
    fuzz_check (sc->base_owd_us >= 0 && sc->base_owd_us <= 1e6);
    fuzz_check (sc->jitter_us >= 0 && sc->jitter_us <= 1e6);
    fuzz_check (sc->loss >= 0 && sc->loss <= 0.5);
    fuzz_check (sc->max_drain_fraction == -1
                || (sc->max_drain_fraction >= 0 && sc->max_drain_fraction <= 1));
    fuzz_check (sc->max_drains_per_hour >= -1 && sc->max_drains_per_hour <= 1000000);
    fuzz_check (sc->nfaults <= FM_SCENARIO_MAX_FAULTS);
    fuzz_check ((sc->nfaults == 0) == (sc->faults == NULL));
    for (size_t i = 0; i < sc->nfaults; i++) {
        check_fault (sc, &sc->faults[i]);
    }
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    char *text = fuzz_strndup (data, size);
    fm_error_t err = {""};
    fm_scenario_t sc, before, again;
    char *printed, *reprinted;

    /* memcpy, not assignment: the comparison covers the padding too. */
    memset (&sc, 0xa5, sizeof (sc));
    memcpy (&before, &sc, sizeof (sc));
    errno = 0;
    if (fm_scenario_parse (text, &sc, &err) < 0) {
        fuzz_check (errno != 0);
        fuzz_check (err.text[0] != '\0');
        fuzz_check (memcmp (&sc, &before, sizeof (sc)) == 0);
        free (text);
        return 0;
    }
    check (&sc);
    printed = print (&sc);
    if (fm_scenario_parse (printed, &again, &err) < 0) {
        fprintf (stderr,
                 "accepted scenario printed as\n%s\nis refused: %s\n",
                 printed,
                 err.text);
        abort ();
    }
    reprinted = print (&again);
    if (strcmp (printed, reprinted) != 0) {
        fprintf (stderr,
                 "scenario printed as\n%s\nparses back as\n%s\n",
                 printed,
                 reprinted);
        abort ();
    }
    fm_scenario_release (&again);
    fm_scenario_release (&sc);
    fm_scenario_release (&sc); /* release is idempotent */
    fuzz_check (sc.faults == NULL && sc.nfaults == 0);
    free (reprinted);
    free (printed);
    free (text);
    return 0;
}
