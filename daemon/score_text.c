/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fmtime.h"
#include "score.h"

int fm_score_text_elem_name (
    const fm_topo_t *topo, fm_elem_kind_t kind, int id, char *buf, size_t len)
{
    switch (kind) {
    case FM_ELEM_NODE:
        return snprintf (buf, len, "node:%s", fm_topo_node_name (topo, id));
    case FM_ELEM_UPLINK:
        return snprintf (buf,
                         len,
                         "uplink:%s-%s",
                         fm_topo_leaf_name (topo, fm_topo_uplink_leaf (topo, id)),
                         fm_topo_spine_name (topo, fm_topo_uplink_spine (topo, id)));
    case FM_ELEM_LEAF:
        return snprintf (buf, len, "switch:%s", fm_topo_leaf_name (topo, id));
    case FM_ELEM_SPINE:
        break;
    }
    return snprintf (buf, len, "switch:%s", fm_topo_spine_name (topo, id));
}

static const char *witness_noun (fm_elem_kind_t kind)
{
    return kind == FM_ELEM_NODE ? "peers" : kind == FM_ELEM_SPINE ? "leaves" : "nodes";
}

int fm_score_text_evidence (const fm_topo_t *topo,
                            const fm_elem_status_t *e,
                            char *buf,
                            size_t len)
{
    const fm_score_hist_t *h;

    if (e->nhist == 0) {
        return snprintf (buf, len, "no evidence");
    }
    h = &e->hist[(e->nhist - 1) % FM_SCORE_HISTORY];
    if (h->local) {
        return snprintf (buf,
                         len,
                         "node health: %s, %d windows",
                         h->cls == FM_CLASS_FLAP          ? "link flapping"
                         : h->cls == FM_CLASS_DOWN        ? "link down"
                         : h->cls == FM_CLASS_PORT_ERRORS ? "port errors"
                         : h->gpu                         ? "gpu fault"
                                                          : "pcie link degraded",
                         e->streak);
    }
    if (e->cls == FM_CLASS_FLAP) {
        return snprintf (buf,
                         len,
                         "%s link flapping: %d down episodes, %.1f%% lost "
                         "(%.0f/%.0f probes) from %d %s",
                         fm_localize_side_name (e->side),
                         e->episodes,
                         100.0 * e->loss_ratio,
                         h->lost,
                         h->sent,
                         h->witnesses,
                         witness_noun (e->kind));
    }
    if (h->cls == FM_CLASS_DELAY) {
        return snprintf (buf,
                         len,
                         "%s delay +%.1fus over baseline from %d %s, "
                         "%d windows",
                         fm_localize_side_name (e->side),
                         h->delay_ns / 1000.0,
                         h->witnesses,
                         witness_noun (e->kind),
                         e->streak);
    }
    return snprintf (buf,
                     len,
                     "%s %s %.2f%% (%.0f/%.0f probes) from %d %s, %d windows",
                     fm_localize_side_name (e->side),
                     fm_localize_class_name (h->cls),
                     100.0 * e->loss_ratio,
                     h->lost,
                     h->sent,
                     h->witnesses,
                     witness_noun (e->kind),
                     e->streak);
}

/* A time of the explanation as an admin reads it beside logs and Slurm, in
 * UTC, named (the daemon does not know the reader's zone), never epoch
 * seconds: a date, or for the windows under it (date false) the
 * time of day alone (the 1024 bytes an action keeps hold more windows).
 */
static const char *utc (int64_t real_ns, bool date, char *buf, size_t len)
{
    time_t t = (time_t)(real_ns / FM_NSEC_PER_SEC);
    struct tm tm;

    if (!gmtime_r (&t, &tm)
        || !(date ? strftime (buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm)
                  : strftime (buf, len, "%H:%M:%S", &tm))) {
        snprintf (buf, len, "?");
    }
    return buf;
}

int fm_score_text_explain (const fm_topo_t *topo,
                           const fm_elem_status_t *e,
                           char *buf,
                           size_t len)
{
    char name[160], since[40], first[40], at[40];
    size_t used = 0;
    int n;

    fm_score_text_elem_name (topo, e->kind, e->id, name, sizeof (name));
    n = snprintf (buf,
                  len,
                  "%s: %s %s since %s (first implicated %s), p=%d\n",
                  name,
                  fm_score_state_name (e->state),
                  fm_localize_class_name (e->cls),
                  utc (e->since_ns, true, since, sizeof (since)),
                  utc (e->first_ns, true, first, sizeof (first)),
                  e->streak);
    if (n < 0) {
        return n;
    }
    used = (size_t)n;
    int start = e->nhist > FM_SCORE_HISTORY ? e->nhist - FM_SCORE_HISTORY : 0;
    for (int i = start; i < e->nhist; i++) {
        const fm_score_hist_t *h = &e->hist[i % FM_SCORE_HISTORY];
        char peers[160] = "";
        size_t pu = 0;
        for (int k = 0; k < 4 && h->peers[k] >= 0; k++) {
            const char *pn = e->kind == FM_ELEM_SPINE
                                 ? fm_topo_leaf_name (topo, h->peers[k])
                                 : fm_topo_node_name (topo, h->peers[k]);
            int m = snprintf (
                peers + pu, sizeof (peers) - pu, "%s%s", k ? "," : "", pn ? pn : "?");
            if (m < 0 || (size_t)m >= sizeof (peers) - pu) {
                break;
            }
            pu += (size_t)m;
        }
        n = snprintf (used < len ? buf + used : NULL,
                      used < len ? len - used : 0,
                      "  window@%s %s %s llr=%.1f lost=%.0f/%.0f delay=%.1fus "
                      "flows=%d witnesses=%d%s%s%s\n",
                      utc (h->end_ns, false, at, sizeof (at)),
                      fm_localize_side_name (h->side),
                      fm_localize_class_name (h->cls),
                      h->gain,
                      h->lost,
                      h->sent,
                      h->delay_ns / 1000.0,
                      h->nflows,
                      h->witnesses,
                      h->local ? " (node health)" : "",
                      peers[0] ? " e.g. " : "",
                      peers);
        if (n < 0) {
            return n;
        }
        used += (size_t)n;
    }
    return (int)used;
}
