/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "scenario.h"

static int bad (fm_error_t *err, const char *field, const char *what)
{
    errno = EINVAL;
    return fm_errprintf (err, "%s: %s", field, what);
}

/* Every key of obj must be in allowed (NULL-terminated). */
static int
only_keys (json_t *obj, const char *field, const char *const *allowed, fm_error_t *err)
{
    const char *key;
    json_t *val;

    if (!json_is_object (obj)) {
        return bad (err, field, "must be an object");
    }
    json_object_foreach (obj, key, val) {
        bool ok = false;
        for (size_t i = 0; allowed[i]; i++) {
            if (strcmp (key, allowed[i]) == 0) {
                ok = true;
            }
        }
        if (!ok) {
            errno = EINVAL;
            return fm_errprintf (err, "%s: unknown key '%.40s'", field, key);
        }
    }
    return 0;
}

/* A number in [min, max]; absent -> def (required when def is NAN). */
static int get_num (json_t *obj,
                    const char *key,
                    const char *field,
                    double def,
                    double min,
                    double max,
                    double *out,
                    fm_error_t *err)
{
    json_t *v = json_object_get (obj, key);
    char name[96];

    snprintf (name, sizeof (name), "%s.%s", field, key);
    if (!v) {
        if (isnan (def)) {
            return bad (err, name, "required");
        }
        *out = def;
        return 0;
    }
    if (!json_is_number (v)) {
        return bad (err, name, "must be a number");
    }
    double x = json_number_value (v);
    if (!isfinite (x) || x < min || x > max) {
        errno = EINVAL;
        return fm_errprintf (err, "%s: %g out of range [%g, %g]", name, x, min, max);
    }
    /* -0 would print as "-0", which JSON reads back as the integer 0. */
    *out = x == 0 ? 0 : x;
    return 0;
}

static int get_int (json_t *obj,
                    const char *key,
                    const char *field,
                    double def,
                    double min,
                    double max,
                    int *out,
                    fm_error_t *err)
{
    double x;

    if (get_num (obj, key, field, def, min, max, &x, err) < 0) {
        return -1;
    }
    if (x != floor (x)) {
        char name[96];
        snprintf (name, sizeof (name), "%s.%s", field, key);
        return bad (err, name, "must be an integer");
    }
    *out = (int)x;
    return 0;
}

static int
parse_target (fm_sim_fault_t *f, const char *field, const char *t, fm_error_t *err)
{
    const char *colon = strchr (t, ':');

    if (strlen (t) >= sizeof (f->target) || !colon) {
        return bad (err, field, "must be node:NAME, uplink:LEAF-SPINE or switch:NAME");
    }
    snprintf (f->target, sizeof (f->target), "%s", t);
    const char *rest = colon + 1;
    if (strncmp (t, "node:", 5) == 0) {
        f->target_kind = FM_SIM_NODE;
    } else if (strncmp (t, "switch:", 7) == 0) {
        f->target_kind = FM_SIM_SWITCH;
    } else if (strncmp (t, "uplink:", 7) == 0) {
        f->target_kind = FM_SIM_UPLINK;
        const char *dash = strrchr (rest, '-');
        if (!dash || dash == rest || !dash[1] || (size_t)(dash - rest) >= sizeof (f->a)
            || strlen (dash + 1) >= sizeof (f->b)) {
            return bad (err, field, "uplink must be uplink:LEAF-SPINE");
        }
        memcpy (f->a, rest, (size_t)(dash - rest));
        f->a[dash - rest] = '\0';
        snprintf (f->b, sizeof (f->b), "%s", dash + 1);
        return 0;
    } else {
        return bad (err, field, "must be node:NAME, uplink:LEAF-SPINE or switch:NAME");
    }
    if (!*rest || strlen (rest) >= sizeof (f->a)) {
        return bad (err, field, "bad name");
    }
    snprintf (f->a, sizeof (f->a), "%s", rest);
    return 0;
}

static int parse_fault (
    json_t *o, size_t i, const fm_scenario_t *sc, fm_sim_fault_t *f, fm_error_t *err)
{
    static const char *const keys[] = {"at_s",
                                       "until_s",
                                       "kind",
                                       "target",
                                       "dir",
                                       "value",
                                       "value_us",
                                       "period_s",
                                       NULL};
    char field[64];
    json_t *v;

    snprintf (field, sizeof (field), "faults[%zu]", i);
    if (only_keys (o, field, keys, err) < 0) {
        return -1;
    }
    *f = (fm_sim_fault_t){.dir = 3};
    if (get_num (o, "at_s", field, NAN, 0, sc->duration_s, &f->at_s, err) < 0
        || get_num (o, "until_s", field, sc->duration_s, f->at_s, 1e9, &f->until_s, err)
               < 0
        || get_num (o, "period_s", field, 20, 0.001, 1e9, &f->period_s, err) < 0) {
        return -1;
    }
    if (f->until_s <= f->at_s) {
        return bad (err, field, "until_s must be after at_s");
    }
    v = json_object_get (o, "kind");
    const char *kind = json_string_value (v);
    char kf[80];
    snprintf (kf, sizeof (kf), "%s.kind", field);
    if (!kind) {
        return bad (err, kf, "required string");
    }
    if (strcmp (kind, "loss") == 0) {
        f->kind = FM_SIM_LOSS;
        if (get_num (o, "value", field, NAN, 1e-9, 1, &f->value, err) < 0) {
            return -1;
        }
    } else if (strcmp (kind, "delay") == 0) {
        f->kind = FM_SIM_DELAY;
        if (get_num (o, "value_us", field, NAN, 0.001, 1e7, &f->value_us, err) < 0) {
            return -1;
        }
    } else if (strcmp (kind, "down") == 0) {
        f->kind = FM_SIM_DOWN;
    } else if (strcmp (kind, "flap") == 0) {
        f->kind = FM_SIM_FLAP;
    } else {
        return bad (err, kf, "must be loss, delay, down or flap");
    }
    /* A field of another kind would be ignored, whatever its type or value. */
    static const char *const kind_field[] = {"value", "value_us", NULL, "period_s"};
    for (size_t k = 0; k < sizeof (kind_field) / sizeof (kind_field[0]); k++) {
        if (kind_field[k] && k != (size_t)f->kind
            && json_object_get (o, kind_field[k])) {
            snprintf (kf, sizeof (kf), "%s.%s", field, kind_field[k]);
            return bad (err, kf, "not for this kind");
        }
    }
    v = json_object_get (o, "target");
    snprintf (kf, sizeof (kf), "%s.target", field);
    if (!json_is_string (v) || parse_target (f, kf, json_string_value (v), err) < 0) {
        return json_is_string (v) ? -1 : bad (err, kf, "required string");
    }
    if ((v = json_object_get (o, "dir"))) {
        const char *d = json_string_value (v);
        snprintf (kf, sizeof (kf), "%s.dir", field);
        if (!d) {
            return bad (err, kf, "must be a string");
        }
        f->dir = strcmp (d, "tx") == 0     ? 1
                 : strcmp (d, "rx") == 0   ? 2
                 : strcmp (d, "both") == 0 ? 3
                                           : 0;
        if (!f->dir) {
            return bad (err, kf, "must be tx, rx or both");
        }
    }
    if (!sc->leafspine && f->target_kind != FM_SIM_NODE) {
        return bad (err, field, "a flat topology has only node targets");
    }
    return 0;
}

int fm_scenario_parse (const char *text, fm_scenario_t *sc, fm_error_t *err)
{
    static const char *const top_keys[] = {
        "seed", "topology", "probing", "noise", "duration_s", "faults", "policy", NULL};
    static const char *const topo_keys[] = {
        "kind", "leaves", "nodes_per_leaf", "spines", "nodes", NULL};
    static const char *const probe_keys[] = {"peers", "rate_hz", "window_s", NULL};
    static const char *const noise_keys[] = {"base_owd_us", "jitter_us", "loss", NULL};
    static const char *const pol_keys[] = {
        "dry_run", "max_drain_fraction", "max_drains_per_hour", NULL};
    fm_scenario_t s = {.max_drain_fraction = -1, .max_drains_per_hour = -1};
    json_error_t jerr;
    json_t *root, *o, *v;
    double seed;

    if (!text || strlen (text) > 1024 * 1024) {
        errno = text ? EFBIG : EINVAL;
        return fm_errprintf (err, "scenario text missing or over 1 MiB");
    }
    if (!(root = json_loads (text, JSON_REJECT_DUPLICATES, &jerr))) {
        errno = EINVAL;
        return fm_errprintf (err, "line %d: %s", jerr.line, jerr.text);
    }
    if (only_keys (root, "scenario", top_keys, err) < 0
        || get_num (root, "seed", "scenario", 1, 0, 9007199254740992.0, &seed, err) < 0
        || get_num (
               root, "duration_s", "scenario", NAN, 1, 30 * 86400.0, &s.duration_s, err)
               < 0) {
        goto fail;
    }
    if (seed != floor (seed)) {
        bad (err, "scenario.seed", "must be an integer");
        goto fail;
    }
    s.seed = (uint64_t)seed;
    o = json_object_get (root, "topology");
    if (!o) {
        bad (err, "topology", "required");
        goto fail;
    }
    if (only_keys (o, "topology", topo_keys, err) < 0) {
        goto fail;
    }
    const char *kind = json_string_value (json_object_get (o, "kind"));
    if (!kind || (strcmp (kind, "flat") != 0 && strcmp (kind, "leafspine") != 0)) {
        bad (err, "topology.kind", "must be flat or leafspine");
        goto fail;
    }
    s.leafspine = strcmp (kind, "leafspine") == 0;
    if (s.leafspine) {
        if (get_int (o, "leaves", "topology", NAN, 1, 65536, &s.leaves, err) < 0
            || get_int (o,
                        "nodes_per_leaf",
                        "topology",
                        NAN,
                        1,
                        65536,
                        &s.nodes_per_leaf,
                        err)
                   < 0
            || get_int (o, "spines", "topology", NAN, 1, 4096, &s.spines, err) < 0) {
            goto fail;
        }
        if (json_object_get (o, "nodes")) {
            bad (err,
                 "topology.nodes",
                 "only for flat (leafspine has leaves x "
                 "nodes_per_leaf)");
            goto fail;
        }
        if ((double)s.leaves * s.nodes_per_leaf > FM_SCENARIO_MAX_NODES) {
            bad (err, "topology", "too many nodes");
            goto fail;
        }
        s.nodes = s.leaves * s.nodes_per_leaf;
    } else {
        int l = 0, m = 0;
        if (get_int (o, "leaves", "topology", 0, 0, 65536, &l, err) < 0
            || get_int (o, "nodes_per_leaf", "topology", 0, 0, 65536, &m, err) < 0) {
            goto fail;
        }
        /* get_int() takes a default as it is: bound this one before it. */
        if ((double)l * m > FM_SCENARIO_MAX_NODES) {
            bad (err, "topology", "too many nodes");
            goto fail;
        }
        if (get_int (o,
                     "nodes",
                     "topology",
                     (double)l * m,
                     2,
                     FM_SCENARIO_MAX_NODES,
                     &s.nodes,
                     err)
            < 0) {
            goto fail;
        }
        if (json_object_get (o, "spines")) {
            bad (err, "topology.spines", "not for flat");
            goto fail;
        }
    }
    if (s.nodes < 2) {
        bad (err, "topology", "needs at least 2 nodes");
        goto fail;
    }
    o = json_object_get (root, "probing");
    if (o && only_keys (o, "probing", probe_keys, err) < 0) {
        goto fail;
    }
    if (!o) {
        o = json_object ();
        json_object_set_new (root, "probing", o);
    }
    if (get_int (o, "peers", "probing", 10, 3, 64, &s.peers, err) < 0
        || get_num (o, "rate_hz", "probing", 10, 0.01, 10000, &s.rate_hz, err) < 0
        || get_num (o, "window_s", "probing", 5, 0.1, 3600, &s.window_s, err) < 0) {
        goto fail;
    }
    if (s.rate_hz * s.window_s < 1 || s.rate_hz * s.window_s > 1e6) {
        bad (err, "probing", "rate_hz * window_s must be 1..1e6 probes");
        goto fail;
    }
    o = json_object_get (root, "noise");
    if (o && only_keys (o, "noise", noise_keys, err) < 0) {
        goto fail;
    }
    if (!o) {
        o = json_object ();
        json_object_set_new (root, "noise", o);
    }
    if (get_num (o, "base_owd_us", "noise", 3, 0, 1e6, &s.base_owd_us, err) < 0
        || get_num (o, "jitter_us", "noise", 1, 0, 1e6, &s.jitter_us, err) < 0
        || get_num (o, "loss", "noise", 1e-5, 0, 0.5, &s.loss, err) < 0) {
        goto fail;
    }
    if ((o = json_object_get (root, "policy"))) {
        double x;
        if (only_keys (o, "policy", pol_keys, err) < 0) {
            goto fail;
        }
        if ((v = json_object_get (o, "dry_run"))) {
            if (!json_is_boolean (v)) {
                bad (err, "policy.dry_run", "must be a boolean");
                goto fail;
            }
            s.dry_run = json_is_true (v);
        }
        if (get_num (o, "max_drain_fraction", "policy", -1, 0, 1, &x, err) < 0) {
            goto fail;
        }
        s.max_drain_fraction = x;
        if (get_int (o,
                     "max_drains_per_hour",
                     "policy",
                     -1,
                     0,
                     1e6,
                     &s.max_drains_per_hour,
                     err)
            < 0) {
            goto fail;
        }
    }
    v = json_object_get (root, "faults");
    if (v && !json_is_array (v)) {
        bad (err, "faults", "must be an array");
        goto fail;
    }
    if (v && json_array_size (v) > FM_SCENARIO_MAX_FAULTS) {
        bad (err, "faults", "too many");
        goto fail;
    }
    s.nfaults = v ? json_array_size (v) : 0;
    if (s.nfaults && !(s.faults = calloc (s.nfaults, sizeof (*s.faults)))) {
        errno = ENOMEM;
        fm_errprintf (err, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < s.nfaults; i++) {
        if (parse_fault (json_array_get (v, i), i, &s, &s.faults[i], err) < 0) {
            goto fail;
        }
    }
    json_decref (root);
    *sc = s;
    return 0;
fail:
    free (s.faults);
    json_decref (root);
    return -1;
}

void fm_scenario_release (fm_scenario_t *sc)
{
    if (sc) {
        free (sc->faults);
        sc->faults = NULL;
        sc->nfaults = 0;
    }
}
