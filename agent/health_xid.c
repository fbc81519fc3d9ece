/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <stddef.h>

#include "health.h"

/* The XID policy. Classes follow the "Resolution Bucket (Immediate Action)" of
 * NVIDIA's Xid catalog for Ampere and newer GPUs
 * (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html):
 * RESTART_APP/IGNORE -> application (the GPU is fine, the job is not),
 * RESET_GPU -> reset, RESTART_BM -> reboot. Two deliberate refinements:
 * XIDs that report a memory error the GPU contained or a recording event (63,
 * 92, 94) are warnings, because the memory is degrading even though no action
 * is due now; 68 is application class as in NVIDIA's k8s device plugin.
 * doc/health.md lists the table with its reasons.
 */
static const struct {
    unsigned int xid;
    fm_hclass_t cls;
    const char *action;
} policy[] = {
    {13, FM_HCLASS_APP, "RESTART_APP"},   /* graphics engine exception */
    {31, FM_HCLASS_APP, "RESTART_APP"},   /* GPU memory page fault (MMU) */
    {43, FM_HCLASS_APP, "IGNORE"},        /* GPU stopped processing: channel reset */
    {45, FM_HCLASS_APP, "IGNORE"},        /* preemptive cleanup after errors */
    {48, FM_HCLASS_RESET, "RESET_GPU"},   /* double-bit ECC error */
    {62, FM_HCLASS_RESET, "RESET_GPU"},   /* internal micro-controller halt */
    {63, FM_HCLASS_WARN, "IGNORE"},       /* row remap / page retirement recorded */
    {64, FM_HCLASS_RESET, "RESET_GPU"},   /* row remap / page retirement failed */
    {68, FM_HCLASS_APP, "RESTART_APP"},   /* NVDEC exception */
    {74, FM_HCLASS_RESET, "RESET_GPU"},   /* NVLink error */
    {79, FM_HCLASS_REBOOT, "RESTART_BM"}, /* GPU has fallen off the bus */
    {92, FM_HCLASS_WARN, "IGNORE"},       /* high single-bit ECC error rate */
    {94, FM_HCLASS_WARN, "RESTART_APP"},  /* contained ECC error */
    {95, FM_HCLASS_RESET, "RESET_GPU"},   /* uncontained ECC error */
    {109, FM_HCLASS_APP, "RESTART_APP"},  /* context switch timeout */
    {119, FM_HCLASS_RESET, "RESET_GPU"},  /* GSP RPC timeout */
    {120, FM_HCLASS_RESET, "RESET_GPU"},  /* GSP error */
    {140, FM_HCLASS_RESET, "RESET_GPU"},  /* unrecovered ECC error */
};

static int lookup (unsigned int xid)
{
    for (size_t i = 0; i < sizeof (policy) / sizeof (policy[0]); i++) {
        if (policy[i].xid == xid) {
            return (int)i;
        }
    }
    return -1;
}

fm_hclass_t fm_health_xid_class (unsigned int xid)
{
    int i = lookup (xid);

    return i < 0 ? FM_HCLASS_WARN : policy[i].cls;
}

const char *fm_health_xid_action (unsigned int xid)
{
    int i = lookup (xid);

    return i < 0 ? "UNKNOWN" : policy[i].action;
}
