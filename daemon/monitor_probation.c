/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "monitor_private.h"

static bool node_idle (const fm_node_info_t *ni)
{
    return (ni->state & FM_NODE_IDLE)
           && !(ni->state
                & (FM_NODE_DOWN | FM_NODE_DRAIN | FM_NODE_FAIL | FM_NODE_NO_RESPOND
                   | FM_NODE_RESERVED | FM_NODE_MAINT | FM_NODE_COMPLETING));
}

static bool node_failing (const fm_monitor_t *m, const char *name)
{
    int id = fm_topo_node_find (m->topo, name);
    const fm_elem_status_t *e =
        id >= 0 ? fm_score_find (m->score, FM_ELEM_NODE, id) : NULL;

    return e && e->state != FM_STATE_HEALTHY;
}

static int command (fm_monitor_t *m, char *const argv[], char **out, fm_error_t *err)
{
    return fm_actions_scontrol_command (&m->cmd_opts, argv, out, err);
}

static void
validate_record (fm_monitor_t *m, int64_t now, const char *result, const char *fmt, ...)
    __attribute__ ((format (printf, 4, 5)));

static void
validate_record (fm_monitor_t *m, int64_t now, const char *result, const char *fmt, ...)
{
    fm_action_rec_t rec = {.at_ns = now};
    va_list ap;

    snprintf (rec.kind, sizeof (rec.kind), "validate");
    snprintf (rec.node, sizeof (rec.node), "%s", m->prob.node);
    snprintf (rec.element, sizeof (rec.element), "node:%s", m->prob.node);
    snprintf (rec.result, sizeof (rec.result), "%s", result);
    va_start (ap, fmt);
    vsnprintf (rec.reason, sizeof (rec.reason), fmt, ap);
    va_end (ap);
    if (m->prob.job_id) {
        snprintf (rec.explain,
                  sizeof (rec.explain),
                  "validation job %" PRId64 " on %s with %s%s%s in reservation %s",
                  m->prob.job_id,
                  m->prob.node,
                  m->prob.peer,
                  m->prob.peer2[0] ? " and " : "",
                  m->prob.peer2,
                  m->prob.resv);
    }
    fm_notice ("validate %s: %s: %s", m->prob.node, result, rec.reason);
    fm_monitor_actions_record (m, &rec);
}

/* End a probation: the job and the reservation go; a failed node is drained
 * again with the reason.
 */
void fm_monitor_probation_end (fm_monitor_t *m, const char *drain_reason, int64_t now)
{
    fm_error_t err;
    char id[32], name[128];

    if (m->prob.job_id) {
        snprintf (id, sizeof (id), "%" PRId64, m->prob.job_id);
        char *argv[] = {"scancel", id, NULL};
        if (command (m, argv, NULL, &err) < 0) {
            fm_warn ("validate %s: scancel %s: %s", m->prob.node, id, err.text);
        }
    }
    if (drain_reason) {
        if (fm_actions_drain (m->act, m->prob.node, drain_reason, &err) < 0) {
            fm_warn ("validate %s: cannot drain it again: %s", m->prob.node, err.text);
        }
        fm_monitor_actions_backoff_set (
            m, m->prob.node, now + m->conf.validate_backoff_ns);
    }
    if (m->prob.resv[0]) {
        snprintf (name, sizeof (name), "ReservationName=%s", m->prob.resv);
        char *argv[] = {"scontrol", "delete", name, NULL};
        if (command (m, argv, NULL, &err) < 0) {
            fm_warn ("validate %s: delete reservation %s: %s",
                     m->prob.node,
                     m->prob.resv,
                     err.text);
        }
    }
    m->prob = (probation_t){0};
}

static void probation_start (
    fm_monitor_t *m, const char *node, const char *peer, const char *peer2, int64_t now)
{
    const fm_policy_params_t *pp = &m->conf.policy;
    int64_t w = m->conf.window_ns;
    int64_t run_s =
        ((pp->resume_windows + m->conf.score.persist_windows + 8) * w) / FM_NSEC_PER_SEC
        + 30;
    char nodes[256], resv_arg[160], dur[32], wrap[512], tlimit[32], *out = NULL;
    fm_error_t err;
    struct passwd *pw = getpwuid (geteuid ());
    char users[80];

    m->prob = (probation_t){.active = true};
    snprintf (m->prob.node, sizeof (m->prob.node), "%s", node);
    snprintf (m->prob.peer, sizeof (m->prob.peer), "%s", peer);
    snprintf (m->prob.peer2, sizeof (m->prob.peer2), "%s", peer2 ? peer2 : "");
    snprintf (m->prob.resv, sizeof (m->prob.resv), "fm-validate-%s", node);
    m->prob.started_ns = now;
    snprintf (nodes,
              sizeof (nodes),
              "Nodes=%s,%s%s%s",
              node,
              peer,
              peer2 ? "," : "",
              peer2 ? peer2 : "");
    snprintf (resv_arg, sizeof (resv_arg), "ReservationName=%s", m->prob.resv);
    snprintf (dur, sizeof (dur), "Duration=%lld", (long long)(run_s / 60 + 2));
    snprintf (users, sizeof (users), "Users=%s", pw ? pw->pw_name : "root");
    char *create[] = {"scontrol",
                      "create",
                      "reservation",
                      resv_arg,
                      nodes,
                      "StartTime=now",
                      dur,
                      users,
                      "Flags=MAINT,IGNORE_JOBS",
                      NULL};
    if (command (m, create, NULL, &err) < 0) {
        m->prob.resv[0] = '\0';
        validate_record (m, now, "error", "cannot reserve %s: %s", node, err.text);
        fm_monitor_actions_backoff_set (m, node, now + m->conf.validate_backoff_ns);
        m->prob = (probation_t){0};
        return;
    }
    /* judged on what the validation job shows, not on the evidence that
     * drained it (nobody observed the node since)
     */
    fm_score_forget (m->score, FM_ELEM_NODE, fm_topo_node_find (m->topo, node));
    if (fm_actions_resume (m->act, node, &err) < 0) {
        validate_record (m, now, "error", "cannot resume %s: %s", node, err.text);
        fm_monitor_actions_backoff_set (m, node, now + m->conf.validate_backoff_ns);
        fm_monitor_probation_end (m, NULL, now);
        return;
    }
    snprintf (resv_arg, sizeof (resv_arg), "--reservation=%s", m->prob.resv);
    snprintf (nodes,
              sizeof (nodes),
              "--nodelist=%s,%s%s%s",
              node,
              peer,
              peer2 ? "," : "",
              peer2 ? peer2 : "");
    char nnodes[16];
    snprintf (nnodes, sizeof (nnodes), "--nodes=%d", peer2 ? 3 : 2);
    /* The check's program and fabricd's URL come from the plugin's task
     * environment; the names were checked by shell_safe() in the caller.
     */
    if (m->conf.validate_check) {
        snprintf (wrap,
                  sizeof (wrap),
                  "srun --mpi=pmix --ntasks-per-node=1 --quiet"
                  " \"${FABRIC_MONITOR_CHECK:-fabric-check}\" --full"
                  " --reference %s%s%s --time-limit 30s; exec sleep %lld",
                  peer,
                  peer2 ? "," : "",
                  peer2 ? peer2 : "",
                  (long long)run_s);
    } else {
        snprintf (wrap, sizeof (wrap), "exec sleep %lld", (long long)run_s);
    }
    snprintf (tlimit, sizeof (tlimit), "--time=%lld", (long long)(run_s / 60 + 2));
    char *sbatch[] = {"sbatch",
                      "--parsable",
                      resv_arg,
                      nnodes,
                      nodes,
                      tlimit,
                      "--job-name=fm-validate",
                      "--fabric-monitor=observe,rate=" VALIDATE_RATE,
                      "--output=/dev/null",
                      "--no-requeue",
                      "--wrap",
                      wrap,
                      NULL};
    if (command (m, sbatch, &out, &err) < 0 || !out
        || (m->prob.job_id = strtoll (out, NULL, 10)) <= 0) {
        char reason[256];
        snprintf (reason,
                  sizeof (reason),
                  "fabric: validation: cannot submit the validation job: %.150s",
                  out ? out : err.text);
        validate_record (
            m, now, "error", "%s", reason + strlen (FM_POLICY_REASON_PREFIX " "));
        m->prob.job_id = 0;
        free (out);
        fm_monitor_probation_end (m, reason, now);
        return;
    }
    free (out);
    m->prob.deadline_ns = now + (run_s + 60) * FM_NSEC_PER_SEC;
    validate_record (m,
                     now,
                     "started",
                     "unobserved since its drain: validating with %s%s%s before it"
                     " is resumed for good",
                     peer,
                     peer2 ? " and " : "",
                     peer2 ? peer2 : "");
}

/* Wilson score interval of lost/sent at z. */
static void loss_bounds (int64_t lost, int64_t sent, double z, double *lo, double *hi)
{
    double n = (double)sent, p = n > 0 ? (double)lost / n : 0;
    double c = 1 + z * z / n;
    double mid = p + z * z / (2 * n);
    double half = z * sqrt (p * (1 - p) / n + z * z / (4 * n * n));

    *lo = (mid - half) / c;
    *hi = (mid + half) / c;
}

/* Node names go into a shell command line (the validation job's script). */
static bool shell_safe (const char *name)
{
    if (!name[0]) {
        return false;
    }
    for (const char *c = name; *c; c++) {
        if (!(isalnum ((unsigned char)*c) || *c == '-' || *c == '_' || *c == '.')) {
            return false;
        }
    }
    return true;
}

/* The validation job's fabric-check verdict on its node: 1 passed, 0 not,
 * -1 no result yet. Posted by the job's owner, fabricd's own user.
 */
static int check_result (fm_monitor_t *m)
{
    fm_ident_t self = {.uid = geteuid (), .gid = getegid ()};
    json_t *a = fm_checks_json (m->d->checks, m->prob.job_id, &self, true, -1);
    json_t *r, *n;
    size_t i, k;
    int rc = -1;

    json_array_foreach (a, i, r) {
        json_array_foreach (json_object_get (r, "nodes"), k, n) {
            const char *name = json_string_value (json_object_get (n, "name"));
            if (rc < 0 && name && strcmp (name, m->prob.node) == 0) {
                rc = json_is_true (json_object_get (n, "passed"));
            }
        }
    }
    json_decref (a);
    return rc;
}

static void probation_fail (fm_monitor_t *m, int64_t now, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

/* fmt: the reason after "fabric: ", as Slurm shows it and explain records. */
static void probation_fail (fm_monitor_t *m, int64_t now, const char *fmt, ...)
{
    char reason[256];
    va_list ap;
    int n = snprintf (reason, sizeof (reason), "%s ", FM_POLICY_REASON_PREFIX);

    va_start (ap, fmt);
    vsnprintf (reason + n, sizeof (reason) - (size_t)n, fmt, ap);
    va_end (ap);
    validate_record (m, now, "failed", "%s", reason + n);
    fm_monitor_probation_end (m, reason, now);
}

/* A validation passes when the job shows resume_windows clean windows, loss
 * below fail_loss with confidence and (validate_check) a passing fabric-check;
 * it fails as soon as any of them shows the fault, or at the deadline.
 */
static void probation_judge (fm_monitor_t *m, int64_t now)
{
    const fm_policy_params_t *pp = &m->conf.policy;
    int id = fm_topo_node_find (m->topo, m->prob.node);
    const fm_elem_status_t *e =
        id >= 0 ? fm_score_find (m->score, FM_ELEM_NODE, id) : NULL;
    double thr = m->conf.score.fail_loss, lo = 0, hi = 1;
    int check = m->conf.validate_check ? -1 : 1; /* -1: no result yet */
    int clean = id >= 0 ? fm_score_node_clean (m->score, id) : 0;
    char peers[160];

    snprintf (peers,
              sizeof (peers),
              "%s%s%s",
              m->prob.peer,
              m->prob.peer2[0] ? " and " : "",
              m->prob.peer2);
    if (m->prob.sent >= VALIDATE_PROBES_MIN) {
        loss_bounds (m->prob.lost, m->prob.sent, VALIDATE_Z_FAIL, &lo, &hi);
        if (lo > thr) {
            probation_fail (m,
                            now,
                            "loss: validation failed: loss %.2f%% (%lld/%lld probes)"
                            " on its links with %s",
                            100.0 * (double)m->prob.lost / (double)m->prob.sent,
                            (long long)m->prob.lost,
                            (long long)m->prob.sent,
                            peers);
            return;
        }
        loss_bounds (m->prob.lost, m->prob.sent, VALIDATE_Z_PASS, &lo, &hi);
    }
    if (m->conf.validate_check) {
        check = check_result (m);
    }
    if (check == 0) {
        probation_fail (m,
                        now,
                        "check: validation failed: fabric-check of job %" PRId64
                        " found it slow or failing against %s",
                        m->prob.job_id,
                        peers);
    } else if (e && e->state >= FM_STATE_DEGRADED) {
        char ev[200];
        fm_score_text_evidence (m->topo, e, ev, sizeof (ev));
        probation_fail (
            m, now, "%s: validation failed: %s", fm_localize_class_name (e->cls), ev);
    } else if (clean >= pp->resume_windows && check == 1 && hi < thr) {
        validate_record (m,
                         now,
                         "passed",
                         "healthy for %d windows with %s, loss %lld/%lld probes%s:"
                         " resumed",
                         clean,
                         peers,
                         (long long)m->prob.lost,
                         (long long)m->prob.sent,
                         m->conf.validate_check ? ", fabric-check passed" : "");
        fm_monitor_probation_end (m, NULL, now);
    } else if (now >= m->prob.deadline_ns) {
        probation_fail (m,
                        now,
                        "validation: not shown healthy before the deadline: %d/%d clean"
                        " windows, %lld/%lld probes lost%s",
                        clean,
                        pp->resume_windows,
                        (long long)m->prob.lost,
                        (long long)m->prob.sent,
                        check < 0 ? ", no fabric-check result" : "");
    }
}

void fm_monitor_probation_step (fm_monitor_t *m, int64_t now, size_t waiting)
{
    const fm_policy_params_t *pp = &m->conf.policy;
    int64_t w = m->conf.window_ns;

    if (!m->act || pp->dry_run || !pp->auto_resume || !m->conf.auto_validate
        || !m->slurm_ok) {
        return;
    }
    if (m->prob.active) {
        probation_judge (m, now);
        return;
    }
    if (waiting) {
        return;
    }
    for (size_t i = 0; i < m->nslurm; i++) {
        const fm_node_info_t *ni = &m->slurm[i];
        int id = fm_topo_node_find (m->topo, ni->name);
        if (!(ni->state & FM_NODE_DRAIN)
            || (ni->state & (FM_NODE_ALLOC | FM_NODE_MIXED))
            || !fm_policy_reason_ours (ni->reason) || fm_monitor_is_manual (ni->reason)
            || id < 0 || now - m->seen_ns[id] < 3 * w
            || fm_monitor_actions_backed_off (m, ni->name, now)
            || !shell_safe (ni->name)) {
            continue;
        }
        /* up to two healthy idle peers, on the same leaf when there are */
        const char *peer = NULL, *peer2 = NULL;
        int leaf = fm_topo_node_leaf (m->topo, id);
        for (int pass = 0; pass < 2; pass++) {
            for (size_t k = 0; k < m->nslurm; k++) {
                const fm_node_info_t *p = &m->slurm[k];
                int pid = fm_topo_node_find (m->topo, p->name);
                bool same = pid >= 0 && fm_topo_node_leaf (m->topo, pid) == leaf;
                if (k == i || !node_idle (p) || node_failing (m, p->name)
                    || !shell_safe (p->name) || (pass == 0 && !same) || p->name == peer
                    || p->name == peer2) {
                    continue;
                }
                if (!peer) {
                    peer = p->name;
                } else if (!peer2) {
                    peer2 = p->name;
                }
            }
        }
        if (peer) {
            probation_start (m, ni->name, peer, peer2, now);
            return;
        }
    }
}
