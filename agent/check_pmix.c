/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <pmix.h>

#include "check_pmix.h"

struct fm_check_pmix {
    pmix_proc_t me;
    uint32_t size;
};

fm_check_pmix_t *fm_check_pmix_init (uint32_t *rank, uint32_t *size, fm_error_t *err)
{
    fm_check_pmix_t *px;
    pmix_proc_t wild;
    pmix_value_t *v = NULL;
    pmix_status_t rc;

    if (!(px = calloc (1, sizeof (*px)))) {
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    if ((rc = PMIx_Init (&px->me, NULL, 0)) != PMIX_SUCCESS) {
        free (px);
        errno = ENOTCONN;
        fm_errprintf (
            err, "PMIx_Init: %s (run me with srun --mpi=pmix)", PMIx_Error_string (rc));
        return NULL;
    }
    PMIX_PROC_CONSTRUCT (&wild);
    PMIX_LOAD_PROCID (&wild, px->me.nspace, PMIX_RANK_WILDCARD);
    rc = PMIx_Get (&wild, PMIX_JOB_SIZE, NULL, 0, &v);
    if (rc != PMIX_SUCCESS || v->type != PMIX_UINT32) {
        if (v) {
            PMIX_VALUE_RELEASE (v);
        }
        PMIx_Finalize (NULL, 0);
        free (px);
        errno = EPROTO;
        fm_errprintf (err, "PMIx_Get job size: %s", PMIx_Error_string (rc));
        return NULL;
    }
    px->size = v->data.uint32;
    PMIX_VALUE_RELEASE (v);
    *rank = px->me.rank;
    *size = px->size;
    return px;
}

void fm_check_pmix_fini (fm_check_pmix_t *px)
{
    int e = errno;

    if (px) {
        PMIx_Finalize (NULL, 0);
        free (px);
    }
    errno = e;
}

/* Always with data collection: under Slurm 22.05's mpi/pmix a fence without
 * it was seen to let a rank run ahead into the next round, so the barrier
 * between rounds is a collecting fence too.
 */
static int fence (fm_check_pmix_t *px, fm_error_t *err)
{
    pmix_proc_t wild;
    pmix_info_t info;
    bool yes = true;
    pmix_status_t rc;

    PMIX_PROC_CONSTRUCT (&wild);
    PMIX_LOAD_PROCID (&wild, px->me.nspace, PMIX_RANK_WILDCARD);
    PMIX_INFO_CONSTRUCT (&info);
    PMIX_INFO_LOAD (&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    rc = PMIx_Fence (&wild, 1, &info, 1);
    PMIX_INFO_DESTRUCT (&info);
    if (rc != PMIX_SUCCESS) {
        errno = EPROTO;
        return fm_errprintf (err, "PMIx_Fence: %s", PMIx_Error_string (rc));
    }
    return 0;
}

int fm_check_pmix_barrier (fm_check_pmix_t *px, fm_error_t *err)
{
    return fence (px, err);
}

void fm_check_pmix_values_free (char **values, uint32_t n)
{
    int e = errno;

    if (values) {
        for (uint32_t i = 0; i < n; i++) {
            free (values[i]);
        }
        free (values);
    }
    errno = e;
}

int fm_check_pmix_allgather (fm_check_pmix_t *px,
                             const char *key,
                             const char *value,
                             bool all,
                             char ***values,
                             fm_error_t *err)
{
    pmix_value_t val;
    pmix_status_t rc;
    char **out;

    PMIX_VALUE_CONSTRUCT (&val);
    val.type = PMIX_STRING;
    val.data.string = (char *)value;
    if ((rc = PMIx_Put (PMIX_GLOBAL, key, &val)) != PMIX_SUCCESS
        || (rc = PMIx_Commit ()) != PMIX_SUCCESS) {
        errno = EPROTO;
        return fm_errprintf (err, "PMIx_Put %s: %s", key, PMIx_Error_string (rc));
    }
    if (fence (px, err) < 0) {
        return -1;
    }
    *values = NULL;
    if (!all) {
        return 0;
    }
    if (!(out = calloc (px->size, sizeof (*out)))) {
        return fm_errprintf (err, "out of memory");
    }
    for (uint32_t r = 0; r < px->size; r++) {
        pmix_proc_t peer;
        pmix_value_t *v = NULL;

        PMIX_PROC_CONSTRUCT (&peer);
        PMIX_LOAD_PROCID (&peer, px->me.nspace, r);
        rc = PMIx_Get (&peer, key, NULL, 0, &v);
        if (rc != PMIX_SUCCESS || v->type != PMIX_STRING || !v->data.string
            || strnlen (v->data.string, FM_CHECK_VALUE_MAX + 1) > FM_CHECK_VALUE_MAX) {
            if (v) {
                PMIX_VALUE_RELEASE (v);
            }
            fm_check_pmix_values_free (out, px->size);
            errno = EPROTO;
            return fm_errprintf (err,
                                 "PMIx_Get %s of rank %u: %s",
                                 key,
                                 (unsigned)r,
                                 rc != PMIX_SUCCESS ? PMIx_Error_string (rc)
                                                    : "not a string or too long");
        }
        out[r] = strdup (v->data.string);
        PMIX_VALUE_RELEASE (v);
        if (!out[r]) {
            fm_check_pmix_values_free (out, px->size);
            return fm_errprintf (err, "out of memory");
        }
    }
    *values = out;
    return 0;
}
