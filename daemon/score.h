/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_SCORE_H
#define FM_SCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "localize.h"
#include "topo.h"

/* Scoring: per directed link and window, evidence from one-way delay inflation
 * against a learned baseline, loss, probe failures, clock loop residuals and
 * node-local health; localization (localize.h) turns it into blamed elements;
 * per node, uplink and switch a state with persistence and hysteresis. Pure
 * computation with an explicit clock: fabricd and bench/fabric-sim run the same
 * code.
 */

#define FM_SCORE_NONE INT64_MIN /* an absent quantity */

/* One link-window record: what is known about probes in one direction,
 * src -> dst, during one window. fabricd's ingest maps a report's link entry to
 * it (node names through fm_topo_node_find()/fm_topo_add_node()); several
 * records for the same (src, dst) in one window (sender and receiver view, or
 * two jobs) are merged.
 */
typedef struct {
    int64_t job_id;           /* informational */
    int32_t src, dst;         /* fm_topo node ids, src != dst */
    int32_t via;              /* spine index the probes crossed when known
                               * (traceroute, ECMP map), else -1 */
    int64_t start_ns, end_ns; /* window, realtime ns, start < end */
    int64_t sent, received;   /* probes in this direction, 0 <= received <= sent */
    int64_t owd_p50_ns;       /* one-way delay quantiles, clock corrected, or NONE */
    int64_t owd_p99_ns;       /* validated and carried; the score uses p50 */
    int64_t rtt_p50_ns;       /* round trip of probes src sent to dst, or NONE */
    int64_t loop_residual_ns; /* the clock's loop-closure residual attributed to
                               * this direction (positive: slower than the clock
                               * model says), or NONE */
} fm_link_window_t;

typedef enum {
    FM_HEALTH_LINK_DOWN = 1, /* NIC or IB port not up */
    FM_HEALTH_CARRIER,       /* carrier changes / link_downed, count = changes */
    FM_HEALTH_PORT_ERRORS,   /* symbol, receive errors, discards: count = delta */
    FM_HEALTH_PCIE_DEGRADED, /* link width or speed below maximum */
    FM_HEALTH_CLOCK_UNSYNC,  /* the node's clock estimate is not trustworthy */
    FM_HEALTH_GPU_FAULT,     /* a GPU needs a reset, a reboot or service (XID or
                              * GPU counters of class reset/reboot/fault; never
                              * an application-class XID): count = events */
} fm_health_kind_t;

/* A node-local health observation during a window. */
typedef struct {
    int32_t node;
    int64_t at_ns;
    fm_health_kind_t kind;
    int64_t count; /* >= 0; meaning per kind above */
} fm_health_event_t;

typedef enum {
    FM_STATE_HEALTHY = 0,
    FM_STATE_SUSPECT,  /* implicated, not yet for persist_windows */
    FM_STATE_DEGRADED, /* slow or lightly lossy: persistent */
    FM_STATE_FAILED,   /* down, flapping, lossy beyond fail_loss, very slow */
} fm_state_t;

typedef struct {
    fm_localize_params_t loc; /* localization thresholds (p0 is learned) */
    double decay;             /* evidence carried into the next window (0.7) */
    int persist_windows;      /* N: windows implicated before degraded/failed (2) */
    int recover_windows;      /* clean windows before healthy again (6) */
    int learn_windows;        /* windows of baseline before delay counts (6) */
    double fail_loss;         /* loss ratio that makes failed, not degraded (0.005) */
    double fail_delay_ns;     /* inflation that makes failed (1 ms) */
    double sigma_floor_ns;    /* least delay noise assumed per link (200 ns) */
    double z_clip;            /* |z| cap per link-window (50) */
    double loss_prior;        /* p0 before any data (1e-5) */
    double loss_floor;        /* p0 never below (1e-7) */
    int64_t port_errors_min;  /* PORT_ERRORS count per window that counts (10) */
    int flap_episodes;        /* down episodes within flap_horizon = flap (2) */
    int64_t flap_horizon_ns;  /* (1 h) */
} fm_score_params_t;

void fm_score_params_default (fm_score_params_t *p);

#define FM_SCORE_HISTORY 8

/* One window of an element's explanation chain. */
typedef struct {
    int64_t end_ns;
    fm_side_t side;
    fm_class_t cls;
    double gain;
    double sent, lost; /* decayed pooled probes */
    double delay_ns;
    int nflows, witnesses;
    bool current;
    int peers[4]; /* node ids (leaf ids for a spine), -1 padded */
    bool local;   /* from node health, not peers */
    bool gpu;     /* local, and a GPU fault among it */
} fm_score_hist_t;

typedef struct {
    fm_elem_kind_t kind;
    int id;
    fm_side_t side; /* latest */
    fm_state_t state;
    fm_class_t cls;    /* worst class while not healthy */
    double score;      /* latest gain (LLR) */
    int64_t since_ns;  /* when the state was entered */
    int64_t first_ns;  /* first implicated window end of this episode */
    int streak;        /* consecutive implicated windows */
    int clean;         /* consecutive clean windows */
    double loss_ratio; /* latest pooled */
    double delay_ns;   /* latest mean inflation */
    int witnesses;     /* latest */
    int episodes;      /* down episodes within flap_horizon */
    fm_score_hist_t hist[FM_SCORE_HISTORY]; /* ring, newest at (nhist-1) % size */
    int nhist;
    /* private */
    bool was_down;
    int gap;
    int64_t episode_ns[4];
} fm_elem_status_t;

typedef struct fm_score fm_score_t;

/* The topology must outlive the engine and not grow while it exists: nodes
 * added later are out of range (recreate the engine when the node set changes).
 * NULL/EINVAL (bad params), ENOMEM.
 */
fm_score_t *fm_score_create (const fm_topo_t *topo, const fm_score_params_t *p);
void fm_score_destroy (fm_score_t *s);

/* Add a record or event to the open window. -1/EINVAL for out-of-range ids or
 * values (nothing is added), ENOMEM.
 */
int fm_score_add_link (fm_score_t *s, const fm_link_window_t *r);
int fm_score_add_health (fm_score_t *s, const fm_health_event_t *e);

/* Close the window ending at end_ns: update baselines, localize, step the
 * states. end_ns must increase. 0, or -1/EINVAL, ENOMEM.
 */
int fm_score_close_window (fm_score_t *s, int64_t end_ns);

/* Elements that are not healthy, or were recently (valid until the next close). */
size_t fm_score_nelems (const fm_score_t *s);
/* Flows (src, dst) the score holds: those reported in the last 120 windows,
 * give or take 32. */
size_t fm_score_nflows (const fm_score_t *s);
const fm_elem_status_t *fm_score_elem (const fm_score_t *s, size_t i);
/* The status of one element, NULL when healthy and untracked. */
const fm_elem_status_t *
fm_score_find (const fm_score_t *s, fm_elem_kind_t kind, int id);
/* Start an element over, as if never implicated (its clean count too): for
 * a node put back to a test after an outside change. -1/EINVAL.
 */
int fm_score_forget (fm_score_t *s, fm_elem_kind_t kind, int id);
/* Consecutive observed windows in which the node was not implicated. */
int fm_score_node_clean (const fm_score_t *s, int node);
double fm_score_p0 (const fm_score_t *s);

/* score_text.c: the words for an element and its evidence. */

/* "node:n42", "uplink:leaf7-spine3", "switch:leaf7", "switch:spine1". */
int fm_score_text_elem_name (
    const fm_topo_t *topo, fm_elem_kind_t kind, int id, char *buf, size_t len);
/* One line of evidence with numbers, for a Slurm reason ("tx loss 2.10% (105/5000
 * probes) from 9 peers, 3 windows"). Returns the length as snprintf does.
 */
int fm_score_text_evidence (const fm_topo_t *topo,
                            const fm_elem_status_t *e,
                            char *buf,
                            size_t len);
/* The explanation chain, one line per window, for `fabricctl explain`. */
int fm_score_text_explain (const fm_topo_t *topo,
                           const fm_elem_status_t *e,
                           char *buf,
                           size_t len);

const char *fm_score_state_name (fm_state_t st);

#endif /* FM_SCORE_H */
