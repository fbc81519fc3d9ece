/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_CHECK_PMIX_H
#define FM_CHECK_PMIX_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

/* The PMIx side of fabric-check: who we are, and moving strings between the
 * ranks of the step (Put, Commit, Fence with data collection, Get), as
 * Slurm's mpi/pmix plugin serves them under `srun --mpi=pmix`.
 */
typedef struct fm_check_pmix fm_check_pmix_t;

#define FM_CHECK_VALUE_MAX (1024 * 1024) /* one rank's published string */

/* PMIx_Init; NULL with errno and err (not started by a PMIx server, ...). */
fm_check_pmix_t *fm_check_pmix_init (uint32_t *rank, uint32_t *size, fm_error_t *err);

/* PMIx_Finalize; NULL-safe. */
void fm_check_pmix_fini (fm_check_pmix_t *px);

/* Publish value under key, fence with data collection, then read every
 * rank's value when all is true, or none (every rank must call it). *values
 * is a malloc'd array of size malloc'd strings (NULL when !all). Values from
 * peers over FM_CHECK_VALUE_MAX or not strings are an error (EPROTO).
 */
int fm_check_pmix_allgather (fm_check_pmix_t *px,
                             const char *key,
                             const char *value,
                             bool all,
                             char ***values,
                             fm_error_t *err);

/* A barrier: every rank finished the round (a collecting fence, see .c). */
int fm_check_pmix_barrier (fm_check_pmix_t *px, fm_error_t *err);

/* Free what fm_check_pmix_allgather returned; NULL-safe. */
void fm_check_pmix_values_free (char **values, uint32_t n);

#endif /* FM_CHECK_PMIX_H */
