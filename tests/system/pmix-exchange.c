/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Copyright (C) 2026 The fabric-monitor authors */

/* pmix-exchange - every rank publishes a value derived from its rank and host,
 * fences with data collection, and reads the value of the next rank.  Run by
 * the system tests under `srun --mpi=pmix` to show that PMIx really carries
 * data between the minicluster's nodes.  Prints one line per rank:
 *   rank R/N on HOST got "VALUE" from rank P
 * and exits non-zero when anything fails or the value is not the expected one.
 */

#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pmix.h>

#define KEY "fm.exchange"

static int fail (const char *what, pmix_status_t rc)
{
    fprintf (stderr, "pmix-exchange: %s: %s\n", what, PMIx_Error_string (rc));
    return 1;
}

static void expected_value (char *buf, size_t size, pmix_rank_t rank, const char *host)
{
    snprintf (buf, size, "rank-%u@%s:%u", (unsigned)rank, host, (unsigned)rank * 7919u);
}

int main (void)
{
    pmix_proc_t me;
    pmix_proc_t wild;
    pmix_proc_t peer;
    pmix_value_t val;
    pmix_value_t *got = NULL;
    pmix_info_t collect;
    bool yes = true;
    char host[256];
    char mine[512];
    pmix_status_t rc;
    uint32_t size;
    int status = 1;

    if (gethostname (host, sizeof (host)) < 0) {
        perror ("pmix-exchange: gethostname");
        return 1;
    }
    host[sizeof (host) - 1] = '\0';
    if ((rc = PMIx_Init (&me, NULL, 0)) != PMIX_SUCCESS) {
        return fail ("PMIx_Init", rc);
    }

    PMIX_PROC_CONSTRUCT (&wild);
    PMIX_LOAD_PROCID (&wild, me.nspace, PMIX_RANK_WILDCARD);
    if ((rc = PMIx_Get (&wild, PMIX_JOB_SIZE, NULL, 0, &got)) != PMIX_SUCCESS) {
        fail ("PMIx_Get job size", rc);
        goto out;
    }
    size = got->data.uint32;
    PMIX_VALUE_RELEASE (got);
    got = NULL;

    /* The value carries the host name, so a peer reading it shows which node
     * the data came from, not only that some data arrived.
     */
    expected_value (mine, sizeof (mine), me.rank, host);
    PMIX_VALUE_CONSTRUCT (&val);
    val.type = PMIX_STRING;
    val.data.string = mine;
    if ((rc = PMIx_Put (PMIX_GLOBAL, KEY, &val)) != PMIX_SUCCESS) {
        fail ("PMIx_Put", rc);
        goto out;
    }
    if ((rc = PMIx_Commit ()) != PMIX_SUCCESS) {
        fail ("PMIx_Commit", rc);
        goto out;
    }
    PMIX_INFO_CONSTRUCT (&collect);
    PMIX_INFO_LOAD (&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    rc = PMIx_Fence (&wild, 1, &collect, 1);
    PMIX_INFO_DESTRUCT (&collect);
    if (rc != PMIX_SUCCESS) {
        fail ("PMIx_Fence", rc);
        goto out;
    }

    PMIX_PROC_CONSTRUCT (&peer);
    PMIX_LOAD_PROCID (&peer, me.nspace, (me.rank + 1) % size);
    if ((rc = PMIx_Get (&peer, KEY, NULL, 0, &got)) != PMIX_SUCCESS) {
        fail ("PMIx_Get peer value", rc);
        goto out;
    }
    if (got->type != PMIX_STRING || !got->data.string
        || strncmp (got->data.string, "rank-", 5) != 0) {
        fprintf (stderr,
                 "pmix-exchange: rank %u: malformed value from rank %u\n",
                 (unsigned)me.rank,
                 (unsigned)peer.rank);
        goto out;
    }
    {
        /* the peer's value must name the peer's rank and its rank-derived number */
        char want_prefix[64];
        char want_suffix[64];
        const char *v = got->data.string;
        size_t vl = strlen (v);
        size_t sl;

        snprintf (want_prefix, sizeof (want_prefix), "rank-%u@", (unsigned)peer.rank);
        snprintf (
            want_suffix, sizeof (want_suffix), ":%u", (unsigned)peer.rank * 7919u);
        sl = strlen (want_suffix);
        if (strncmp (v, want_prefix, strlen (want_prefix)) != 0 || vl < sl
            || strcmp (v + vl - sl, want_suffix) != 0) {
            fprintf (stderr,
                     "pmix-exchange: rank %u: got \"%s\" from rank %u\n",
                     (unsigned)me.rank,
                     v,
                     (unsigned)peer.rank);
            goto out;
        }
    }
    printf ("rank %u/%u on %s got \"%s\" from rank %u\n",
            (unsigned)me.rank,
            (unsigned)size,
            host,
            got->data.string,
            (unsigned)peer.rank);
    fflush (stdout);
    status = 0;
out:
    if (got) {
        PMIX_VALUE_RELEASE (got);
    }
    if ((rc = PMIx_Finalize (NULL, 0)) != PMIX_SUCCESS) {
        fail ("PMIx_Finalize", rc);
        status = 1;
    }
    return status;
}
