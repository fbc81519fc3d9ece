/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store_private.h"
#include "store_sqlite_private.h"

/* Schema migrations: migrations[i] takes user_version i to i + 1. Append only. */
static const char *const migrations[] = {
    /* 1: initial schema */
    "CREATE TABLE nodes (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"
    "CREATE TABLE jobs (job_id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL,"
    " expected INTEGER NOT NULL, window_ns INTEGER NOT NULL,"
    " created_ns INTEGER NOT NULL, probe_key BLOB NOT NULL);"
    "CREATE TABLE agents (agent_id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL,"
    " node_id INTEGER NOT NULL, probe_addr TEXT NOT NULL, probe_port INTEGER NOT NULL,"
    " nics TEXT NOT NULL, registered_ns INTEGER NOT NULL, UNIQUE (job_id, node_id));"
    "CREATE TABLE windows (id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL,"
    " node_id INTEGER NOT NULL, seq INTEGER NOT NULL, start_ns INTEGER NOT NULL,"
    " end_ns INTEGER NOT NULL, clock_offset_ns INTEGER, clock_error_ns INTEGER,"
    " nlinks INTEGER NOT NULL, health TEXT NOT NULL, UNIQUE (job_id, node_id, seq));"
    "CREATE INDEX windows_end ON windows (end_ns);"
    "CREATE TABLE links (window_id INTEGER NOT NULL, peer_id INTEGER NOT NULL,"
    " dir INTEGER NOT NULL, rtt_p50 INTEGER, rtt_p90 INTEGER, rtt_p99 INTEGER,"
    " rtt_max INTEGER, owd_p50 INTEGER, owd_p90 INTEGER, owd_p99 INTEGER,"
    " owd_max INTEGER, sent INTEGER NOT NULL, received INTEGER NOT NULL,"
    " lost INTEGER NOT NULL, reordered INTEGER NOT NULL,"
    " PRIMARY KEY (window_id, peer_id, dir)) WITHOUT ROWID;",
    /* 2: per-node latest-window lookups for GET /v1/nodes */
    "CREATE INDEX windows_node_end ON windows (node_id, end_ns);",
    /* 3: the job's mode; whether an agent sent its last batch; clock drift */
    "ALTER TABLE jobs ADD COLUMN mode INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE agents ADD COLUMN final INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE windows ADD COLUMN clock_drift_ppb REAL;",
    /* 4: what the policy did, kept past the windows' retention */
    "CREATE TABLE actions (id INTEGER PRIMARY KEY, at_ns INTEGER NOT NULL,"
    " kind TEXT NOT NULL, node TEXT NOT NULL, job_id INTEGER NOT NULL,"
    " element TEXT NOT NULL, reason TEXT NOT NULL, explain TEXT NOT NULL,"
    " result TEXT NOT NULL, dry_run INTEGER NOT NULL);"
    "CREATE INDEX actions_at ON actions (at_ns);"
    "CREATE INDEX actions_job ON actions (job_id, at_ns);",
    /* 5: the job's node list, for its probe plan (doc/plan.md) */
    "ALTER TABLE jobs ADD COLUMN nodes TEXT NOT NULL DEFAULT '';",
};
#define NMIGRATIONS ((int)(sizeof (migrations) / sizeof (migrations[0])))

static const char *const sql[S_COUNT] = {
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    [S_NODE_INS] = "INSERT OR IGNORE INTO nodes (name) VALUES (?1)",
    [S_NODE_SEL] = "SELECT id FROM nodes WHERE name = ?1",
    [S_JOB_SEL] = "SELECT user_id, expected, window_ns, created_ns, probe_key, mode,"
                  " nodes FROM jobs WHERE job_id = ?1",
    [S_JOB_INS] = "INSERT INTO jobs (job_id, user_id, expected, window_ns, created_ns,"
                  " probe_key, mode, nodes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [S_JOB_EXPECTED] = "UPDATE jobs SET expected = ?2, nodes = ?3 WHERE job_id = ?1",
    [S_AGENT_SEL] = "SELECT agent_id FROM agents WHERE job_id = ?1 AND node_id = ?2",
    [S_AGENT_INS] = "INSERT INTO agents (job_id, node_id, probe_addr, probe_port, nics,"
                    " registered_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [S_AGENT_UPD] = "UPDATE agents SET probe_addr = ?2, probe_port = ?3, nics = ?4,"
                    " registered_ns = ?5, final = 0 WHERE agent_id = ?1",
    [S_AGENTS] =
        "SELECT a.agent_id, n.name, a.probe_addr, a.probe_port, a.registered_ns,"
        " (SELECT max(seq) FROM windows w WHERE w.job_id = a.job_id"
        "  AND w.node_id = a.node_id),"
        " (SELECT count(*) FROM windows w WHERE w.job_id = a.job_id"
        "  AND w.node_id = a.node_id), a.final"
        " FROM agents a JOIN nodes n ON n.id = a.node_id"
        " WHERE a.job_id = ?1 ORDER BY a.agent_id",
    [S_AGENT_FINAL] = "UPDATE agents SET final = 1 WHERE job_id = ?1 AND node_id = ?2",
    [S_WIN_INS] =
        "INSERT OR IGNORE INTO windows (job_id, node_id, seq, start_ns, end_ns,"
        " clock_offset_ns, clock_error_ns, nlinks, health, clock_drift_ppb)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    [S_LINK_INS] =
        "INSERT INTO links VALUES"
        " (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
    [S_LINKS] =
        "SELECT CASE g.dir WHEN 0 THEN rn.name ELSE pn.name END AS src,"
        " CASE g.dir WHEN 0 THEN pn.name ELSE rn.name END AS dst, rn.name AS rep,"
        " g.n, g.last_end, g.sent, g.received, g.lost, g.reordered,"
        " g.rtt50, g.rtt99, g.owd50, g.owd99,"
        " CASE WHEN g.sent > 0 THEN CAST (g.lost AS REAL) / g.sent ELSE 0.0 END AS loss"
        " FROM (SELECT w.node_id AS reporter, l.peer_id AS peer, l.dir AS dir,"
        "  count(*) AS n, max(w.end_ns) AS last_end, sum(l.sent) AS sent,"
        "  sum(l.received) AS received, sum(l.lost) AS lost,"
        "  sum(l.reordered) AS reordered, CAST (round (avg (l.rtt_p50)) AS INTEGER) AS "
        "rtt50,"
        "  max(l.rtt_p99) AS rtt99, CAST (round (avg (l.owd_p50)) AS INTEGER) AS owd50,"
        "  max(l.owd_p99) AS owd99"
        "  FROM windows w JOIN links l ON l.window_id = w.id"
        "  WHERE w.end_ns >= ?1 AND (?2 = 0 OR w.job_id = ?2)"
        "  GROUP BY w.node_id, l.peer_id, l.dir) g"
        " JOIN nodes rn ON rn.id = g.reporter JOIN nodes pn ON pn.id = g.peer"
        " ORDER BY loss DESC, g.rtt99 IS NULL, g.rtt99 DESC, src, dst, rep LIMIT ?3",
    [S_NODES] =
        "SELECT n.name, lw.end_ns, lw.job_id, lw.clock_offset_ns, lw.clock_error_ns,"
        " lw.health,"
        " (SELECT count(*) FROM windows w WHERE w.node_id = n.id AND w.end_ns >= ?1),"
        " a.links, a.sent, a.lost, a.rtt99, lw.clock_drift_ppb"
        " FROM nodes n JOIN windows lw ON lw.id = (SELECT id FROM windows w2"
        "  WHERE w2.node_id = n.id ORDER BY w2.end_ns DESC, w2.id DESC LIMIT 1)"
        " LEFT JOIN (SELECT w.node_id AS node_id,"
        "  count(DISTINCT l.peer_id * 2 + l.dir) AS links, sum(l.sent) AS sent,"
        "  sum(l.lost) AS lost, max(l.rtt_p99) AS rtt99"
        "  FROM windows w JOIN links l ON l.window_id = w.id WHERE w.end_ns >= ?1"
        "  GROUP BY w.node_id) a ON a.node_id = n.id"
        " ORDER BY n.name",
    [S_COUNTS] = "SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM nodes),"
                 " (SELECT count(*) FROM windows),"
                 " (SELECT coalesce(sum(nlinks), 0) FROM windows)",
    [S_JOB_COUNTS] = "SELECT count(*), coalesce(sum(nlinks), 0) FROM windows"
                     " WHERE job_id = ?1 AND end_ns >= ?2",
    [S_PRUNE_LINKS] = "DELETE FROM links WHERE window_id IN"
                      " (SELECT id FROM windows WHERE end_ns < ?1)",
    [S_PRUNE_WINDOWS] = "DELETE FROM windows WHERE end_ns < ?1",
    [S_PRUNE_AGENTS] = "DELETE FROM agents WHERE job_id IN (SELECT job_id FROM jobs j"
                       " WHERE j.created_ns < ?1 AND NOT EXISTS"
                       " (SELECT 1 FROM windows w WHERE w.job_id = j.job_id))",
    [S_PRUNE_JOBS] = "DELETE FROM jobs WHERE created_ns < ?1 AND NOT EXISTS"
                     " (SELECT 1 FROM windows w WHERE w.job_id = jobs.job_id)",
    [S_ACTION_INS] = "INSERT INTO actions (at_ns, kind, node, job_id, element, reason,"
                     " explain, result, dry_run)"
                     " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    [S_ACTIONS] = "SELECT id, at_ns, kind, node, job_id, element, reason, explain,"
                  " result, dry_run FROM actions WHERE at_ns >= ?1"
                  " AND (?2 = 0 OR job_id = ?2) AND (?3 IS NULL OR node = ?3)"
                  " ORDER BY at_ns DESC, id DESC LIMIT ?4",
};

int fm_store_sqlite_dberr (sqlite_store_t *s, fm_error_t *err, const char *what)
{
    int code = sqlite3_extended_errcode (s->db) & 0xff;

    switch (code) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        errno = EBUSY;
        break;
    case SQLITE_FULL:
        errno = ENOSPC;
        break;
    case SQLITE_CONSTRAINT:
        errno = EEXIST;
        break;
    case SQLITE_NOMEM:
        errno = ENOMEM;
        break;
    default:
        errno = EIO;
        break;
    }
    return fm_errprintf (err, "sqlite: %s: %s", what, sqlite3_errmsg (s->db));
}

static void cache_flush (sqlite_store_t *s)
{
    for (int i = 0; i < NODE_BUCKETS; i++) {
        while (s->nodes[i]) {
            struct node_entry *e = s->nodes[i];
            s->nodes[i] = e->next;
            free (e);
        }
    }
}

static unsigned hash (const char *s)
{
    unsigned h = 2166136261u;

    while (*s) {
        h = (h ^ (unsigned char)*s++) * 16777619u;
    }
    return h % NODE_BUCKETS;
}

sqlite3_stmt *fm_store_sqlite_stmt (sqlite_store_t *s, int i)
{
    sqlite3_reset (s->stmt[i]);
    sqlite3_clear_bindings (s->stmt[i]);
    return s->stmt[i];
}

static int exec_simple (sqlite_store_t *s, int i, fm_error_t *err)
{
    sqlite3_stmt *q = fm_store_sqlite_stmt (s, i);

    if (sqlite3_step (q) != SQLITE_DONE) {
        return fm_store_sqlite_dberr (s, err, sql[i]);
    }
    return 0;
}

static int begin (sqlite_store_t *s, fm_error_t *err)
{
    return exec_simple (s, S_BEGIN, err);
}

static int commit (sqlite_store_t *s, fm_error_t *err)
{
    return exec_simple (s, S_COMMIT, err);
}

static void rollback (sqlite_store_t *s)
{
    int saved = errno;

    if (!sqlite3_get_autocommit (s->db)) {
        sqlite3_step (fm_store_sqlite_stmt (s, S_ROLLBACK));
        sqlite3_reset (s->stmt[S_ROLLBACK]);
    }
    cache_flush (s);
    errno = saved;
}

/* Within a transaction. */
static int node_id (sqlite_store_t *s, const char *name, int64_t *id, fm_error_t *err)
{
    unsigned h = hash (name);
    struct node_entry *e;
    sqlite3_stmt *q;
    size_t len;

    for (e = s->nodes[h]; e; e = e->next) {
        if (strcmp (e->name, name) == 0) {
            *id = e->id;
            return 0;
        }
    }
    q = fm_store_sqlite_stmt (s, S_NODE_INS);
    sqlite3_bind_text (q, 1, name, -1, SQLITE_STATIC);
    if (sqlite3_step (q) != SQLITE_DONE) {
        return fm_store_sqlite_dberr (s, err, "insert node");
    }
    q = fm_store_sqlite_stmt (s, S_NODE_SEL);
    sqlite3_bind_text (q, 1, name, -1, SQLITE_STATIC);
    if (sqlite3_step (q) != SQLITE_ROW) {
        return fm_store_sqlite_dberr (s, err, "select node");
    }
    len = strlen (name);
    if (!(e = malloc (sizeof (*e) + len + 1))) {
        return fm_errprintf (err, "out of memory");
    }
    e->id = sqlite3_column_int64 (q, 0);
    sqlite3_reset (q);
    memcpy (e->name, name, len + 1);
    e->next = s->nodes[h];
    s->nodes[h] = e;
    *id = e->id;
    return 0;
}

static int job_get (fm_store_t *st, int64_t job_id, fm_job_t *job, fm_error_t *err)
{
    sqlite_store_t *s = S (st);
    sqlite3_stmt *q = fm_store_sqlite_stmt (s, S_JOB_SEL);
    int rc;

    sqlite3_bind_int64 (q, 1, job_id);
    rc = sqlite3_step (q);
    if (rc == SQLITE_DONE) {
        errno = ENOENT;
        return fm_errprintf (err, "job %lld is unknown", (long long)job_id);
    }
    if (rc != SQLITE_ROW) {
        return fm_store_sqlite_dberr (s, err, "select job");
    }
    job->job_id = job_id;
    job->user_id = sqlite3_column_int64 (q, 0);
    job->expected = sqlite3_column_int64 (q, 1);
    job->window_ns = sqlite3_column_int64 (q, 2);
    job->created_ns = sqlite3_column_int64 (q, 3);
    if (sqlite3_column_bytes (q, 4) != (int)sizeof (job->probe_key)) {
        sqlite3_reset (q);
        errno = EIO;
        return fm_errprintf (err, "job %lld: corrupt probe key", (long long)job_id);
    }
    memcpy (job->probe_key, sqlite3_column_blob (q, 4), sizeof (job->probe_key));
    job->mode =
        sqlite3_column_int (q, 5) == FM_JOB_PROTECT ? FM_JOB_PROTECT : FM_JOB_OBSERVE;
    snprintf (job->nodes,
              sizeof (job->nodes),
              "%s",
              sqlite3_column_text (q, 6) ? (const char *)sqlite3_column_text (q, 6)
                                         : "");
    sqlite3_reset (q);
    return 0;
}

static int reg (fm_store_t *st,
                fm_job_t *job,
                const fm_agent_t *agent,
                const char *nics_json,
                int64_t *agent_id,
                bool *created,
                fm_error_t *err)
{
    sqlite_store_t *s = S (st);
    fm_job_t cur;
    sqlite3_stmt *q;
    int64_t nid, aid;
    bool is_new;
    int rc;

    if (begin (s, err) < 0) {
        return -1;
    }
    if (job_get (st, job->job_id, &cur, err) == 0) {
        if (cur.user_id != job->user_id) {
            errno = EEXIST;
            fm_errprintf (err,
                          "job %lld is registered for user %lld, not %lld",
                          (long long)job->job_id,
                          (long long)cur.user_id,
                          (long long)job->user_id);
            goto error;
        }
        /* the newest node list: a requeued job keeps its id, not its nodes */
        if (job->expected > 0 && strcmp (cur.nodes, job->nodes) != 0) {
            q = fm_store_sqlite_stmt (s, S_JOB_EXPECTED);
            sqlite3_bind_int64 (q, 1, job->job_id);
            sqlite3_bind_int64 (q, 2, job->expected);
            sqlite3_bind_text (q, 3, job->nodes, -1, SQLITE_STATIC);
            if (sqlite3_step (q) != SQLITE_DONE) {
                fm_store_sqlite_dberr (s, err, "update job");
                goto error;
            }
            cur.expected = job->expected;
            memcpy (cur.nodes, job->nodes, sizeof (cur.nodes));
        }
    } else if (errno == ENOENT) {
        q = fm_store_sqlite_stmt (s, S_JOB_INS);
        sqlite3_bind_int64 (q, 1, job->job_id);
        sqlite3_bind_int64 (q, 2, job->user_id);
        sqlite3_bind_int64 (q, 3, job->expected);
        sqlite3_bind_int64 (q, 4, job->window_ns);
        sqlite3_bind_int64 (q, 5, job->created_ns);
        sqlite3_bind_blob (
            q, 6, job->probe_key, sizeof (job->probe_key), SQLITE_STATIC);
        sqlite3_bind_int (q, 7, (int)job->mode);
        sqlite3_bind_text (q, 8, job->nodes, -1, SQLITE_STATIC);
        if (sqlite3_step (q) != SQLITE_DONE) {
            fm_store_sqlite_dberr (s, err, "insert job");
            goto error;
        }
        cur = *job;
    } else {
        goto error;
    }
    if (node_id (s, agent->node, &nid, err) < 0) {
        goto error;
    }
    q = fm_store_sqlite_stmt (s, S_AGENT_SEL);
    sqlite3_bind_int64 (q, 1, job->job_id);
    sqlite3_bind_int64 (q, 2, nid);
    rc = sqlite3_step (q);
    if (rc == SQLITE_ROW) {
        aid = sqlite3_column_int64 (q, 0);
        sqlite3_reset (q);
        is_new = false;
        q = fm_store_sqlite_stmt (s, S_AGENT_UPD);
        sqlite3_bind_int64 (q, 1, aid);
        sqlite3_bind_text (q, 2, agent->probe_addr, -1, SQLITE_STATIC);
        sqlite3_bind_int64 (q, 3, agent->probe_port);
        sqlite3_bind_text (q, 4, nics_json, -1, SQLITE_STATIC);
        sqlite3_bind_int64 (q, 5, agent->registered_ns);
        if (sqlite3_step (q) != SQLITE_DONE) {
            fm_store_sqlite_dberr (s, err, "update agent");
            goto error;
        }
    } else if (rc == SQLITE_DONE) {
        is_new = true;
        q = fm_store_sqlite_stmt (s, S_AGENT_INS);
        sqlite3_bind_int64 (q, 1, job->job_id);
        sqlite3_bind_int64 (q, 2, nid);
        sqlite3_bind_text (q, 3, agent->probe_addr, -1, SQLITE_STATIC);
        sqlite3_bind_int64 (q, 4, agent->probe_port);
        sqlite3_bind_text (q, 5, nics_json, -1, SQLITE_STATIC);
        sqlite3_bind_int64 (q, 6, agent->registered_ns);
        if (sqlite3_step (q) != SQLITE_DONE) {
            fm_store_sqlite_dberr (s, err, "insert agent");
            goto error;
        }
        aid = sqlite3_last_insert_rowid (s->db);
    } else {
        fm_store_sqlite_dberr (s, err, "select agent");
        goto error;
    }
    if (commit (s, err) < 0) {
        goto error;
    }
    *job = cur;
    *agent_id = aid;
    *created = is_new;
    return 0;
error:
    rollback (s);
    return -1;
}

static int
agent_lookup (fm_store_t *st, int64_t job_id, const char *node, fm_error_t *err)
{
    sqlite_store_t *s = S (st);
    sqlite3_stmt *q = fm_store_sqlite_stmt (s, S_NODE_SEL);
    int64_t nid;
    int rc;

    sqlite3_bind_text (q, 1, node, -1, SQLITE_STATIC);
    rc = sqlite3_step (q);
    if (rc == SQLITE_ROW) {
        nid = sqlite3_column_int64 (q, 0);
        sqlite3_reset (q);
        q = fm_store_sqlite_stmt (s, S_AGENT_SEL);
        sqlite3_bind_int64 (q, 1, job_id);
        sqlite3_bind_int64 (q, 2, nid);
        rc = sqlite3_step (q);
        sqlite3_reset (q);
        if (rc == SQLITE_ROW) {
            return 0;
        }
    }
    if (rc == SQLITE_DONE) {
        errno = ENOENT;
        return fm_errprintf (
            err, "node %s is not registered for job %lld", node, (long long)job_id);
    }
    return fm_store_sqlite_dberr (s, err, "select agent");
}

static void bind_quant (sqlite3_stmt *q, int col, const fm_quant_t *x)
{
    if (x->present) {
        sqlite3_bind_int64 (q, col, x->p50);
        sqlite3_bind_int64 (q, col + 1, x->p90);
        sqlite3_bind_int64 (q, col + 2, x->p99);
        sqlite3_bind_int64 (q, col + 3, x->max);
    } else {
        for (int i = 0; i < 4; i++) {
            sqlite3_bind_null (q, col + i);
        }
    }
}

static int put_report (fm_store_t *st,
                       const fm_report_t *rep,
                       fm_store_put_result_t *res,
                       fm_error_t *err)
{
    sqlite_store_t *s = S (st);
    fm_store_put_result_t r = {0};
    int64_t nid;

    if (begin (s, err) < 0) {
        return -1;
    }
    if (node_id (s, rep->node, &nid, err) < 0) {
        goto error;
    }
    for (size_t i = 0; i < rep->nwindows; i++) {
        const fm_window_t *w = &rep->windows[i];
        sqlite3_stmt *q = fm_store_sqlite_stmt (s, S_WIN_INS);
        int64_t wid;

        sqlite3_bind_int64 (q, 1, rep->job_id);
        sqlite3_bind_int64 (q, 2, nid);
        sqlite3_bind_int64 (q, 3, w->seq);
        sqlite3_bind_int64 (q, 4, w->start_ns);
        sqlite3_bind_int64 (q, 5, w->end_ns);
        if (w->has_clock) {
            sqlite3_bind_int64 (q, 6, w->clock_offset_ns);
            sqlite3_bind_int64 (q, 7, w->clock_error_ns);
        }
        sqlite3_bind_int64 (q, 8, (int64_t)w->nlinks);
        sqlite3_bind_text (q, 9, w->health_json, -1, SQLITE_STATIC);
        if (w->has_clock && w->has_drift) {
            sqlite3_bind_double (q, 10, w->clock_drift_ppb);
        }
        if (sqlite3_step (q) != SQLITE_DONE) {
            fm_store_sqlite_dberr (s, err, "insert window");
            goto error;
        }
        if (sqlite3_changes (s->db) == 0) {
            r.duplicates++;
            continue;
        }
        wid = sqlite3_last_insert_rowid (s->db);
        for (size_t j = 0; j < w->nlinks; j++) {
            const fm_link_rec_t *l = &w->links[j];
            int64_t pid;

            if (node_id (s, l->peer, &pid, err) < 0) {
                goto error;
            }
            q = s->stmt[S_LINK_INS];
            sqlite3_reset (q);
            sqlite3_bind_int64 (q, 1, wid);
            sqlite3_bind_int64 (q, 2, pid);
            sqlite3_bind_int (q, 3, (int)l->dir);
            bind_quant (q, 4, &l->rtt);
            bind_quant (q, 8, &l->owd);
            sqlite3_bind_int64 (q, 12, l->sent);
            sqlite3_bind_int64 (q, 13, l->received);
            sqlite3_bind_int64 (q, 14, l->lost);
            sqlite3_bind_int64 (q, 15, l->reordered);
            if (sqlite3_step (q) != SQLITE_DONE) {
                fm_store_sqlite_dberr (s, err, "insert link");
                goto error;
            }
        }
        r.accepted++;
        r.records += w->nlinks;
    }
    if (rep->final) {
        sqlite3_stmt *q = fm_store_sqlite_stmt (s, S_AGENT_FINAL);
        sqlite3_bind_int64 (q, 1, rep->job_id);
        sqlite3_bind_int64 (q, 2, nid);
        if (sqlite3_step (q) != SQLITE_DONE) {
            fm_store_sqlite_dberr (s, err, "mark agent final");
            goto error;
        }
    }
    if (commit (s, err) < 0) {
        goto error;
    }
    *res = r;
    return 0;
error:
    rollback (s);
    return -1;
}

static int prune (fm_store_t *st, int64_t before_ns, int64_t *removed, fm_error_t *err)
{
    static const int steps[] = {
        S_PRUNE_LINKS, S_PRUNE_WINDOWS, S_PRUNE_AGENTS, S_PRUNE_JOBS};
    sqlite_store_t *s = S (st);
    int64_t n = 0;

    if (begin (s, err) < 0) {
        return -1;
    }
    for (size_t i = 0; i < sizeof (steps) / sizeof (steps[0]); i++) {
        sqlite3_stmt *q = fm_store_sqlite_stmt (s, steps[i]);
        sqlite3_bind_int64 (q, 1, before_ns);
        if (sqlite3_step (q) != SQLITE_DONE) {
            fm_store_sqlite_dberr (s, err, "prune");
            rollback (s);
            return -1;
        }
        if (steps[i] == S_PRUNE_WINDOWS) {
            n = sqlite3_changes (s->db);
        }
    }
    if (commit (s, err) < 0) {
        rollback (s);
        return -1;
    }
    *removed = n;
    return 0;
}

static int checkpoint (fm_store_t *st, fm_error_t *err)
{
    sqlite_store_t *s = S (st);

    if (sqlite3_wal_checkpoint_v2 (s->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL)
        != SQLITE_OK) {
        return fm_store_sqlite_dberr (s, err, "checkpoint");
    }
    return 0;
}

static int action_add (fm_store_t *st, fm_action_rec_t *rec, fm_error_t *err)
{
    sqlite_store_t *s = S (st);
    sqlite3_stmt *q = fm_store_sqlite_stmt (s, S_ACTION_INS);
    const char *text[] = {
        rec->kind, rec->node, rec->element, rec->reason, rec->explain, rec->result};
    const int col[] = {2, 3, 5, 6, 7, 8};

    sqlite3_bind_int64 (q, 1, rec->at_ns);
    for (size_t i = 0; i < sizeof (col) / sizeof (col[0]); i++) {
        sqlite3_bind_text (q, col[i], text[i], -1, SQLITE_STATIC);
    }
    sqlite3_bind_int64 (q, 4, rec->job_id);
    sqlite3_bind_int (q, 9, rec->dry_run);
    if (sqlite3_step (q) != SQLITE_DONE) {
        int e;
        fm_store_sqlite_dberr (s, err, "insert action");
        e = errno;
        sqlite3_reset (q);
        errno = e;
        return -1;
    }
    sqlite3_reset (q);
    rec->id = sqlite3_last_insert_rowid (s->db);
    return 0;
}

static int schema_version (fm_store_t *st)
{
    return S (st)->version;
}

static void sqlite_close (fm_store_t *st)
{
    sqlite_store_t *s = S (st);

    for (int i = 0; i < S_COUNT; i++) {
        sqlite3_finalize (s->stmt[i]);
    }
    cache_flush (s);
    sqlite3_close (s->db);
    free (s);
}

static const struct fm_store_ops sqlite_ops = {
    .name = "sqlite",
    .close = sqlite_close,
    .schema_version = schema_version,
    .reg = reg,
    .job_get = job_get,
    .agents = fm_store_sqlite_query_agents,
    .agent_lookup = agent_lookup,
    .put_report = put_report,
    .links = fm_store_sqlite_query_links,
    .nodes = fm_store_sqlite_query_nodes,
    .counts = fm_store_sqlite_query_counts,
    .job_counts = fm_store_sqlite_query_job_counts,
    .prune = prune,
    .checkpoint = checkpoint,
    .action_add = action_add,
    .actions = fm_store_sqlite_query_actions,
    .clock_series = fm_store_sqlite_query_clock_series,
};

static int exec_sql (sqlite_store_t *s, const char *text, fm_error_t *err)
{
    char *msg = NULL;

    if (sqlite3_exec (s->db, text, NULL, NULL, &msg) != SQLITE_OK) {
        fm_store_sqlite_dberr (s, NULL, "exec");
        fm_errprintf (err, "sqlite: %s", msg ? msg : sqlite3_errmsg (s->db));
        sqlite3_free (msg);
        return -1;
    }
    return 0;
}

static int user_version (sqlite_store_t *s, int *version, fm_error_t *err)
{
    sqlite3_stmt *q;

    if (sqlite3_prepare_v2 (s->db, "PRAGMA user_version", -1, &q, NULL) != SQLITE_OK
        || sqlite3_step (q) != SQLITE_ROW) {
        fm_store_sqlite_dberr (s, err, "user_version");
        sqlite3_finalize (q);
        return -1;
    }
    *version = sqlite3_column_int (q, 0);
    sqlite3_finalize (q);
    return 0;
}

static int migrate (sqlite_store_t *s, int target, fm_error_t *err)
{
    int v;

    if (user_version (s, &v, err) < 0) {
        return -1;
    }
    if (v > NMIGRATIONS) {
        errno = EPROTO;
        return fm_errprintf (err,
                             "store schema version %d is newer than this fabricd"
                             " (%d): refusing to touch it",
                             v,
                             NMIGRATIONS);
    }
    while (v < target) {
        char pragma[64];
        snprintf (pragma, sizeof (pragma), "PRAGMA user_version = %d", v + 1);
        if (exec_sql (s, "BEGIN IMMEDIATE", err) < 0) {
            return -1;
        }
        if (exec_sql (s, migrations[v], err) < 0 || exec_sql (s, pragma, err) < 0
            || exec_sql (s, "COMMIT", err) < 0) {
            int saved = errno;
            sqlite3_exec (s->db, "ROLLBACK", NULL, NULL, NULL);
            errno = saved;
            return -1;
        }
        v++;
    }
    s->version = v;
    return 0;
}

fm_store_t *fm_store_sqlite_open_version (const char *path,
                                          fm_store_sync_t sync,
                                          int version,
                                          fm_error_t *err)
{
    sqlite_store_t *s;
    char pragmas[256];

    if (!path || version < 1 || version > NMIGRATIONS) {
        errno = EINVAL;
        fm_errprintf (err, "store: bad path or schema version");
        return NULL;
    }
    if (!(s = calloc (1, sizeof (*s)))) {
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    s->base.ops = &sqlite_ops;
    if (sqlite3_open_v2 (path,
                         &s->db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                             | SQLITE_OPEN_NOMUTEX,
                         NULL)
        != SQLITE_OK) {
        if (!s->db) {
            errno = ENOMEM;
            fm_errprintf (err, "sqlite: cannot open %s", path);
        } else {
            fm_store_sqlite_dberr (s, err, path);
        }
        goto error;
    }
    sqlite3_busy_timeout (s->db, 5000);
    /* WAL: a committed transaction is in the log before COMMIT returns, so it
     * survives the process being killed; FULL adds an fsync per commit for power loss.
     */
    snprintf (pragmas,
              sizeof (pragmas),
              "PRAGMA journal_mode = WAL; PRAGMA synchronous = %s;"
              " PRAGMA foreign_keys = OFF; PRAGMA wal_autocheckpoint = %d;"
              " PRAGMA journal_size_limit = %d;",
              (sync & FM_STORE_SYNC_FULL) ? "FULL" : "NORMAL",
              (sync & FM_STORE_BACKGROUND_CHECKPOINT) ? 16384 : 1000,
              64 * 1024 * 1024);
    if (exec_sql (s, pragmas, err) < 0 || migrate (s, version, err) < 0) {
        goto error;
    }
    /* the statements need the latest schema: an older one is only migrated */
    for (int i = 0; i < S_COUNT && version == NMIGRATIONS; i++) {
        if (sqlite3_prepare_v3 (
                s->db, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->stmt[i], NULL)
            != SQLITE_OK) {
            fm_store_sqlite_dberr (s, err, sql[i]);
            goto error;
        }
    }
    return &s->base;
error : {
    int saved = errno;
    for (int i = 0; i < S_COUNT; i++) {
        sqlite3_finalize (s->stmt[i]);
    }
    sqlite3_close (s->db);
    free (s);
    errno = saved;
}
    return NULL;
}

fm_store_t *
fm_store_sqlite_open (const char *path, fm_store_sync_t sync, fm_error_t *err)
{
    return fm_store_sqlite_open_version (path, sync, NMIGRATIONS, err);
}
