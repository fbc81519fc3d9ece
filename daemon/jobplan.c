/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "jobplan.h"
#include "log.h"
#include "plan.h"
#include "topo.h"

typedef struct {
    bool known;
    int64_t agent_id, port, registered_ns;
    char addr[64];
} slot_t;

typedef struct {
    int64_t job_id;
    char *nodes; /* the node list it was built from */
    fm_hostlist_t *hosts;
    uint32_t *sorted; /* node indices in name order */
    fm_plan_t *plan;
    slot_t *agents; /* by node index */
    char warning[512];
    uint64_t used;
} entry_t;

struct fm_jobplan {
    pthread_mutex_t lock;
    char *topo_text;
    size_t max_nodes, nodes;
    entry_t *v;
    size_t n, cap;
    uint64_t tick;
};

fm_jobplan_t *fm_jobplan_create (const char *topo_text, size_t max_nodes)
{
    fm_jobplan_t *c = calloc (1, sizeof (*c));

    if (!c || (topo_text && !(c->topo_text = strdup (topo_text)))) {
        free (c);
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_init (&c->lock, NULL);
    c->max_nodes = max_nodes;
    return c;
}

static void entry_free (entry_t *e)
{
    free (e->nodes);
    fm_hostlist_destroy (e->hosts);
    fm_plan_destroy (e->plan);
    free (e->sorted);
    free (e->agents);
}

void fm_jobplan_destroy (fm_jobplan_t *c)
{
    if (!c) {
        return;
    }
    for (size_t i = 0; i < c->n; i++) {
        entry_free (&c->v[i]);
    }
    free (c->v);
    free (c->topo_text);
    pthread_mutex_destroy (&c->lock);
    free (c);
}

static int cmp_name (const void *a, const void *b, void *hosts)
{
    return strcmp (fm_hostlist_nth (hosts, *(const uint32_t *)a),
                   fm_hostlist_nth (hosts, *(const uint32_t *)b));
}

static int node_index (const entry_t *e, const char *name)
{
    size_t lo = 0, hi = fm_hostlist_count (e->hosts);

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int r = strcmp (fm_hostlist_nth (e->hosts, e->sorted[mid]), name);
        if (r == 0) {
            return (int)e->sorted[mid];
        }
        if (r < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return -1;
}

static void slot_set (entry_t *e, const fm_agent_t *a)
{
    int i = node_index (e, a->node);

    if (i >= 0) {
        slot_t *s = &e->agents[i];
        s->known = true;
        s->agent_id = a->agent_id;
        s->port = a->probe_port;
        s->registered_ns = a->registered_ns;
        snprintf (s->addr, sizeof (s->addr), "%s", a->probe_addr);
    }
}

/* The plan of the job's nodes on the topology, or on none when the topology
 * does not hold them (said in e->warning, which the answer carries).
 */
static int make_plan (fm_jobplan_t *c, entry_t *e, const fm_job_t *job, fm_error_t *err)
{
    size_t n = fm_hostlist_count (e->hosts);
    const char **names = malloc (n * sizeof (*names));
    fm_topo_t *topo = NULL;
    fm_plan_params_t p;
    fm_error_t why;

    if (!names) {
        errno = ENOMEM;
        return fm_errprintf (err, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        names[i] = fm_hostlist_nth (e->hosts, i);
    }
    fm_plan_params_default (&p);
    p.seed = (uint64_t)job->job_id;
    if (c->topo_text && !(topo = fm_topo_parse (c->topo_text, &why))) {
        snprintf (e->warning, sizeof (e->warning), "topology: %s", why.text);
    }
    if (topo && !(e->plan = fm_plan_create (topo, names, n, &p, &why))) {
        if (errno == EINVAL) {
            snprintf (e->warning,
                      sizeof (e->warning),
                      "%s: probing as in a flat fabric",
                      why.text);
        }
    } else if (topo && fm_plan_check (e->plan, &why) < 0) {
        snprintf (e->warning, sizeof (e->warning), "%s", why.text);
    }
    fm_topo_destroy (topo);
    if (!e->plan && !(e->plan = fm_plan_create (NULL, names, n, &p, err))) {
        free (names);
        return -1;
    }
    free (names);
    if (e->warning[0]) {
        fm_warn ("job %lld: probe plan: %s", (long long)job->job_id, e->warning);
    }
    return 0;
}

static int build (fm_jobplan_t *c, fm_store_t *st, const fm_job_t *job, entry_t *e, fm_error_t *err)
{
    fm_agent_t *agents = NULL;
    size_t n, na = 0;

    *e = (entry_t){.job_id = job->job_id};
    if (!job->nodes[0]) {
        errno = EINVAL;
        return fm_errprintf (
            err, "job %lld: its agents registered no node list", (long long)job->job_id);
    }
    if (!(e->nodes = strdup (job->nodes))) {
        errno = ENOMEM;
        return fm_errprintf (err, "out of memory");
    }
    if (!(e->hosts = fm_hostlist_expand (job->nodes, FM_PLAN_MAX_NODES + 1, err))) {
        entry_free (e);
        return -1;
    }
    n = fm_hostlist_count (e->hosts);
    if (!(e->sorted = malloc (n * sizeof (*e->sorted)))
        || !(e->agents = calloc (n, sizeof (*e->agents)))) {
        errno = ENOMEM;
        fm_errprintf (err, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        e->sorted[i] = (uint32_t)i;
    }
    qsort_r (e->sorted, n, sizeof (*e->sorted), cmp_name, e->hosts);
    if (make_plan (c, e, job, err) < 0
        || fm_store_agents (st, job->job_id, &agents, &na, err) < 0) {
        goto fail;
    }
    for (size_t i = 0; i < na; i++) {
        slot_set (e, &agents[i]);
    }
    free (agents);
    return 0;
fail:
    entry_free (e);
    return -1;
}

static entry_t *find (fm_jobplan_t *c, int64_t job_id)
{
    for (size_t i = 0; i < c->n; i++) {
        if (c->v[i].job_id == job_id) {
            c->v[i].used = ++c->tick;
            return &c->v[i];
        }
    }
    return NULL;
}

static void drop (fm_jobplan_t *c, entry_t *e)
{
    c->nodes -= fm_hostlist_count (e->hosts);
    entry_free (e);
    *e = c->v[--c->n];
}

/* Make room for n more nodes: the least recently used jobs go. */
static void evict (fm_jobplan_t *c, size_t n)
{
    while (c->n > 0 && c->nodes + n > c->max_nodes) {
        size_t lru = 0;
        for (size_t i = 1; i < c->n; i++) {
            if (c->v[i].used < c->v[lru].used) {
                lru = i;
            }
        }
        drop (c, &c->v[lru]);
    }
}

void fm_jobplan_agent (fm_jobplan_t *c, int64_t job_id, const fm_agent_t *agent)
{
    entry_t *e;

    pthread_mutex_lock (&c->lock);
    if ((e = find (c, job_id))) {
        slot_set (e, agent);
    }
    pthread_mutex_unlock (&c->lock);
}

static entry_t *get (fm_jobplan_t *c, fm_store_t *st, const fm_job_t *job, fm_error_t *err)
{
    entry_t *e = find (c, job->job_id), fresh;

    /* a requeued job runs again, on other nodes maybe */
    if (e && strcmp (e->nodes, job->nodes) == 0) {
        return e;
    }
    if (e) {
        drop (c, e);
    }
    if (build (c, st, job, &fresh, err) < 0) {
        return NULL;
    }
    evict (c, fm_hostlist_count (fresh.hosts));
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        entry_t *v = realloc (c->v, cap * sizeof (*v));
        if (!v) {
            entry_free (&fresh);
            errno = ENOMEM;
            fm_errprintf (err, "out of memory");
            return NULL;
        }
        c->v = v;
        c->cap = cap;
    }
    fresh.used = ++c->tick;
    c->nodes += fm_hostlist_count (fresh.hosts);
    c->v[c->n] = fresh;
    return &c->v[c->n++];
}

static json_t *peer_json (const entry_t *e, uint32_t i)
{
    const slot_t *s = &e->agents[i];

    return json_pack ("{s:I, s:s, s:s, s:I, s:I}",
                      "agent_id",
                      (json_int_t)s->agent_id,
                      "node",
                      fm_hostlist_nth (e->hosts, i),
                      "probe_addr",
                      s->addr,
                      "probe_port",
                      (json_int_t)s->port,
                      "registered_ns",
                      (json_int_t)s->registered_ns);
}

/* names of v[0..n) into a new array; the registered ones' agents into peers */
static json_t *
names_json (const entry_t *e, const uint32_t *v, size_t n, json_t *peers, bool skip_listed)
{
    json_t *a = json_array ();

    for (size_t j = 0; a && j < n; j++) {
        bool listed = false;
        if (json_array_append_new (a, json_string (fm_hostlist_nth (e->hosts, v[j])))
            < 0) {
            json_decref (a);
            return NULL;
        }
        if (!e->agents[v[j]].known) {
            continue;
        }
        /* a node both target and prober is listed once */
        for (size_t q = 0; skip_listed && q < json_array_size (peers) && !listed; q++) {
            listed = strcmp (json_string_value (
                                 json_object_get (json_array_get (peers, q), "node")),
                             fm_hostlist_nth (e->hosts, v[j]))
                     == 0;
        }
        if (!listed && json_array_append_new (peers, peer_json (e, v[j])) < 0) {
            json_decref (a);
            return NULL;
        }
    }
    return a;
}

int fm_jobplan_answer (fm_jobplan_t *c,
                       fm_store_t *st,
                       const fm_job_t *job,
                       const char *node,
                       int64_t epoch_ns,
                       int64_t now_ns,
                       json_t *o,
                       fm_error_t *err)
{
    uint64_t epoch = epoch_ns > 0 && now_ns > job->created_ns
                         ? (uint64_t)((now_ns - job->created_ns) / epoch_ns)
                         : 0;
    int64_t next_ns =
        epoch_ns > 0 ? job->created_ns + (int64_t)(epoch + 1) * epoch_ns : 0;
    const uint32_t *tv, *pv;
    size_t nt, np;
    json_t *peers, *targets = NULL, *probers = NULL, *plan = NULL;
    entry_t *e;
    int i;

    pthread_mutex_lock (&c->lock);
    if (!(e = get (c, st, job, err))) {
        pthread_mutex_unlock (&c->lock);
        return -1;
    }
    if (fm_plan_epoch (e->plan) != epoch && fm_plan_set_epoch (e->plan, epoch) < 0) {
        pthread_mutex_unlock (&c->lock);
        errno = ENOMEM;
        return fm_errprintf (err, "out of memory");
    }
    if ((i = node_index (e, node)) < 0) {
        pthread_mutex_unlock (&c->lock);
        errno = ENOENT;
        return fm_errprintf (
            err, "node %s is not in job %lld", node, (long long)job->job_id);
    }
    nt = fm_plan_targets (e->plan, (size_t)i, &tv);
    np = fm_plan_probers (e->plan, (size_t)i, &pv);
    if (!(peers = json_array ()) || !(targets = names_json (e, tv, nt, peers, false))
        || !(probers = names_json (e, pv, np, peers, true))
        || !(plan = json_pack ("{s:I, s:I, s:I, s:I, s:I}",
                               "epoch",
                               (json_int_t)fm_plan_epoch (e->plan),
                               "epoch_ns",
                               (json_int_t)epoch_ns,
                               "next_ns",
                               (json_int_t)next_ns,
                               "nodes",
                               (json_int_t)fm_hostlist_count (e->hosts),
                               "depth",
                               (json_int_t)fm_plan_depth (e->plan, (size_t)i)))
        || json_object_set_new (plan,
                                "parent",
                                fm_plan_parent (e->plan, (size_t)i) >= 0
                                    ? json_string (fm_hostlist_nth (
                                          e->hosts, (size_t)fm_plan_parent (e->plan, (size_t)i)))
                                    : json_null ())
               < 0
        || (e->warning[0]
            && json_object_set_new (plan, "warning", json_string (e->warning)) < 0)) {
        pthread_mutex_unlock (&c->lock);
        json_decref (peers);
        json_decref (targets);
        json_decref (probers);
        json_decref (plan);
        errno = ENOMEM;
        return fm_errprintf (err, "out of memory");
    }
    pthread_mutex_unlock (&c->lock);
    if (json_object_set_new (o, "peers", peers) < 0
        || json_object_set_new (o, "targets", targets) < 0
        || json_object_set_new (o, "probers", probers) < 0
        || json_object_set_new (o, "plan", plan) < 0) {
        errno = ENOMEM;
        return fm_errprintf (err, "out of memory");
    }
    return 0;
}
