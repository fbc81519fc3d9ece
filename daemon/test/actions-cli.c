/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
/* The actions interface from the command line, for t3101-actions.t:
 *   actions-cli [-k KIND] [-c SLURM_CONF] [-n] COMMAND ARGS
 * Mutating commands print the result ("done", "already", "foreign"); any
 * failure prints "error: ERRNO-NAME: message" on stdout and exits 1.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actions.h"
#include "log.h"

static void usage (void)
{
    fprintf (stderr,
             "usage: actions-cli [-k libslurm|scontrol|auto] [-c SLURM_CONF] [-n] CMD\n"
             "  node NODE | nodes | drain NODE REASON | resume NODE |\n"
             "  weight NODE N | signal JOB SIG [batch] | requeue JOB | job JOB |\n"
             "  jobs NODE\n");
    exit (2);
}

static void print_node (const fm_node_info_t *n)
{
    static const char *const names[] = {"idle",
                                        "alloc",
                                        "mixed",
                                        "down",
                                        "drain",
                                        "fail",
                                        "completing",
                                        "no_respond",
                                        "maint",
                                        "reserved",
                                        "future",
                                        "unknown"};
    char st[160] = "";

    for (size_t i = 0; i < sizeof (names) / sizeof (names[0]); i++) {
        if (n->state & (1u << i)) {
            if (st[0]) {
                strcat (st, ",");
            }
            strcat (st, names[i]);
        }
    }
    printf ("%s state=%s weight=%" PRId64 " reason=%s\n",
            n->name,
            st,
            n->weight,
            n->reason);
}

static void print_job (const fm_job_info_t *j)
{
    printf ("%" PRId64 " state=%s completing=%d nodes=%s batch_host=%s requeue=%d "
            "restarts=%d\n",
            j->job_id,
            j->state_name,
            j->completing,
            j->nodes,
            j->batch_host,
            j->requeue,
            j->restarts);
}

static int64_t num (const char *s)
{
    char *end;
    long long v = strtoll (s, &end, 10);

    if (end == s || *end) {
        usage ();
    }
    return v;
}

int main (int argc, char *argv[])
{
    fm_actions_opts_t opts = {0};
    const char *kind = "auto";
    fm_error_t err = {{0}};
    fm_actions_t *a;
    int c, rc = -1;

    fm_log_init ("actions-cli", FM_LOG_STDERR, LOG_INFO);
    while ((c = getopt (argc, argv, "k:c:n")) != -1) {
        switch (c) {
        case 'k':
            kind = optarg;
            break;
        case 'c':
            opts.slurm_conf = optarg;
            break;
        case 'n':
            opts.dry_run = true;
            break;
        default:
            usage ();
        }
    }
    argc -= optind;
    argv += optind;
    if (argc < 1) {
        usage ();
    }
    if (!(a = fm_actions_create (kind, &opts, &err))) {
        printf ("error: %s: %s\n", strerrorname_np (errno), err.text);
        return 1;
    }
    const char *cmd = argv[0];
    if (!strcmp (cmd, "node") && argc == 2) {
        fm_node_info_t n;
        if ((rc = fm_actions_node_info (a, argv[1], &n, &err)) == 0) {
            print_node (&n);
        }
    } else if (!strcmp (cmd, "nodes") && argc == 1) {
        fm_node_info_t *v;
        size_t n;
        if ((rc = fm_actions_nodes_list (a, &v, &n, &err)) == 0) {
            for (size_t i = 0; i < n; i++) {
                print_node (&v[i]);
            }
            free (v);
        }
    } else if (!strcmp (cmd, "drain") && argc == 3) {
        rc = fm_actions_drain (a, argv[1], argv[2], &err);
    } else if (!strcmp (cmd, "resume") && argc == 2) {
        rc = fm_actions_resume (a, argv[1], &err);
    } else if (!strcmp (cmd, "weight") && argc == 3) {
        rc = fm_actions_set_weight (a, argv[1], num (argv[2]), &err);
    } else if (!strcmp (cmd, "signal") && (argc == 3 || argc == 4)) {
        bool batch = argc == 4 && !strcmp (argv[3], "batch");
        rc = fm_actions_signal_job (a, num (argv[1]), (int)num (argv[2]), batch, &err);
    } else if (!strcmp (cmd, "requeue") && argc == 2) {
        rc = fm_actions_requeue (a, num (argv[1]), &err);
    } else if (!strcmp (cmd, "job") && argc == 2) {
        fm_job_info_t j;
        if ((rc = fm_actions_job_info (a, num (argv[1]), &j, &err)) == 0) {
            print_job (&j);
            fm_actions_job_info_clear (&j);
        }
    } else if (!strcmp (cmd, "jobs") && argc == 2) {
        fm_job_info_t *v;
        size_t n;
        if ((rc = fm_actions_jobs_on_node (a, argv[1], &v, &n, &err)) == 0) {
            for (size_t i = 0; i < n; i++) {
                print_job (&v[i]);
            }
            fm_actions_job_info_free (v, n);
        }
    } else {
        usage ();
    }
    if (rc < 0) {
        printf ("error: %s: %s\n", strerrorname_np (errno), err.text);
    } else if (strcmp (cmd, "node") && strcmp (cmd, "nodes") && strcmp (cmd, "job")
               && strcmp (cmd, "jobs")) {
        printf ("%s\n", fm_actions_result_name (rc));
    }
    fm_actions_destroy (a);
    return rc < 0 ? 1 : 0;
}
