/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health.h"
#include "log.h"

/* GPU to NIC locality from hwloc, in the terms of `nvidia-smi topo -m` and
 * NCCL: PIX (at most one PCIe switch between them), PXB (several switches,
 * no host bridge), PHB (through a PCIe host bridge), NODE (between host
 * bridges of one NUMA node), SYS (across the SMP interconnect). Reported once:
 * the topology does not change during a job.
 */

typedef enum { PATH_PIX, PATH_PXB, PATH_PHB, PATH_NODE, PATH_SYS } path_t;

static const char *const path_names[] = {"PIX", "PXB", "PHB", "NODE", "SYS"};

#define TOPO_GPUS_MAX 64
#define TOPO_NICS_MAX 64

typedef struct {
    hwloc_topology_t topo;
    bool reported;
} topo_t;

static void topo_fini (void *arg)
{
    topo_t *s = arg;
    int saved = errno;

    if (s) {
        hwloc_topology_destroy (s->topo);
        free (s);
    }
    errno = saved;
}

static void *topo_init (const fm_health_conf_t *conf, fm_error_t *err)
{
    static const char *const skip[] = {
        "opencl", "gl", "cuda", "nvml", "rsmi", "levelzero", "pci"};
    const char *xml = conf ? conf->topology_xml : NULL;
    topo_t *s = calloc (1, sizeof (*s));

    if (!s) {
        errno = ENOMEM;
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    if (hwloc_topology_init (&s->topo) < 0) {
        free (s);
        errno = ENOMEM;
        fm_errprintf (err, "hwloc_topology_init failed");
        return NULL;
    }
    /* PCI and the OS's device names are all this needs, and the linux
     * component reads both from sysfs: the libpciaccess one ("pci") is
     * left out too (it leaks what it allocates once unloaded). The GPU runtime
     * components (OpenCL, CUDA, NVML, RSMI, Level Zero) would start GPU
     * runtimes inside the agent, and gl talks to X servers.
     */
#if HWLOC_API_VERSION >= 0x00020100
    for (size_t i = 0; i < sizeof (skip) / sizeof (skip[0]); i++) {
        (void)hwloc_topology_set_components (
            s->topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, skip[i]);
    }
#endif
    /* Bridges are what tells PIX from PXB from PHB. */
    if (hwloc_topology_set_io_types_filter (s->topo, HWLOC_TYPE_FILTER_KEEP_ALL) < 0
        || (xml && hwloc_topology_set_xml (s->topo, xml) < 0)
        || hwloc_topology_load (s->topo) < 0) {
        int saved = errno ? errno : EINVAL;

        fm_errprintf (err,
                      "hwloc: %s%s%s",
                      xml ? xml : "this machine",
                      xml ? ": " : "",
                      strerror (saved));
        hwloc_topology_destroy (s->topo);
        free (s);
        errno = saved == ENOMEM ? ENOMEM : ENOENT;
        return NULL;
    }
    return s;
}

static bool is_gpu (hwloc_obj_t o)
{
    unsigned int cls = o->attr->pcidev.class_id;
    unsigned int vendor = o->attr->pcidev.vendor_id;

    /* BMC VGA (ASPEED, Matrox) is display class too: only GPU vendors count. */
    return (vendor == 0x10de || vendor == 0x1002)
           && ((cls >> 8) == 0x03 || cls == 0x1200);
}

static bool is_nic (hwloc_obj_t o)
{
    return (o->attr->pcidev.class_id >> 8) == 0x02;
}

/* The name of a NIC: its RDMA device (mlx5_0), else its netdev, else the
 * PCI address. *rdma tells whether it has an RDMA device.
 */
static void nic_name (hwloc_obj_t o, char *buf, size_t len, bool *rdma)
{
    const char *net = NULL;

    *rdma = false;
    for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) {
        if (c->type != HWLOC_OBJ_OS_DEVICE || !c->name) {
            continue;
        }
        if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && !*rdma) {
            snprintf (buf, len, "%s", c->name);
            *rdma = true;
        } else if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && !net) {
            net = c->name;
        }
    }
    if (!*rdma) {
        if (net) {
            snprintf (buf, len, "%s", net);
        } else {
            snprintf (buf,
                      len,
                      "%04x:%02x:%02x.%x",
                      o->attr->pcidev.domain,
                      o->attr->pcidev.bus,
                      o->attr->pcidev.dev,
                      o->attr->pcidev.func);
        }
    }
}

static int bridges_between (hwloc_obj_t o, hwloc_obj_t ancestor)
{
    int n = 0;

    for (hwloc_obj_t p = o->parent; p && p != ancestor; p = p->parent) {
        n += p->type == HWLOC_OBJ_BRIDGE;
    }
    return n;
}

/* hwloc_get_common_ancestor_obj() compares depths, which I/O objects do not
 * have; walk the parents instead.
 */
static hwloc_obj_t common_ancestor (hwloc_obj_t a, hwloc_obj_t b)
{
    for (hwloc_obj_t x = a; x; x = x->parent) {
        for (hwloc_obj_t y = b; y; y = y->parent) {
            if (x == y) {
                return x;
            }
        }
    }
    return NULL;
}

static path_t path_type (hwloc_topology_t t, hwloc_obj_t a, hwloc_obj_t b)
{
    hwloc_obj_t anc = common_ancestor (a, b);
    hwloc_obj_t na, nb;

    if (!anc) {
        return PATH_SYS;
    }

    if (anc->type == HWLOC_OBJ_BRIDGE) {
        if (anc->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
            return PATH_PHB;
        }
        /* anc is a switch's upstream port: one downstream port on each side
         * is one switch.
         */
        return bridges_between (a, anc) <= 1 && bridges_between (b, anc) <= 1
                   ? PATH_PIX
                   : PATH_PXB;
    }
    if (anc->type == HWLOC_OBJ_PCI_DEVICE) {
        return PATH_PIX;
    }
    na = hwloc_get_non_io_ancestor_obj (t, a);
    nb = hwloc_get_non_io_ancestor_obj (t, b);
    if (na && nb && na->nodeset && nb->nodeset && !hwloc_bitmap_iszero (na->nodeset)
        && hwloc_bitmap_isequal (na->nodeset, nb->nodeset)) {
        return PATH_NODE;
    }
    return PATH_SYS;
}

static int topo_sample (void *arg, fm_health_set_t *out, fm_error_t *err)
{
    topo_t *s = arg;
    hwloc_obj_t gpus[TOPO_GPUS_MAX], nics[TOPO_NICS_MAX];
    char names[TOPO_NICS_MAX][FM_HEALTH_NAME_MAX];
    bool rdma[TOPO_NICS_MAX];
    size_t ng = 0, nn = 0, nrdma = 0;
    size_t n0 = out->n;

    if (s->reported) {
        return 0;
    }
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_pcidev (s->topo, o));) {
        if (is_gpu (o) && ng < TOPO_GPUS_MAX) {
            gpus[ng++] = o;
        } else if (is_nic (o) && nn < TOPO_NICS_MAX) {
            nic_name (o, names[nn], sizeof (names[nn]), &rdma[nn]);
            nrdma += rdma[nn];
            nics[nn++] = o;
        }
    }
    for (size_t g = 0; g < ng; g++) {
        char bus[FM_HEALTH_NAME_MAX];
        path_t best = PATH_SYS;
        path_t p[TOPO_NICS_MAX];

        snprintf (bus,
                  sizeof (bus),
                  "%04x:%02x:%02x.%x",
                  gpus[g]->attr->pcidev.domain,
                  gpus[g]->attr->pcidev.bus,
                  gpus[g]->attr->pcidev.dev,
                  gpus[g]->attr->pcidev.func);
        /* With RDMA NICs present, GPUDirect traffic only uses those. */
        for (size_t n = 0; n < nn; n++) {
            p[n] = path_type (s->topo, gpus[g], nics[n]);
            if ((!nrdma || rdma[n]) && p[n] < best) {
                best = p[n];
            }
        }
        for (size_t n = 0; n < nn; n++) {
            if ((nrdma && !rdma[n]) || p[n] != best) {
                continue;
            }
            fm_info (
                "health topo: GPU %s - NIC %s: %s", bus, names[n], path_names[best]);
            if (fm_health_add_text (out,
                                    FM_HREC_TOPO,
                                    bus,
                                    0,
                                    names[n],
                                    path_names[best],
                                    FM_HCLASS_INFO)
                < 0) {
                out->n = n0;
                return fm_errprintf (err, "out of memory");
            }
        }
    }
    if (ng == 0) {
        fm_info ("health topo: no GPU in the topology (%zu NICs)", nn);
    }
    s->reported = true;
    return 0;
}

const fm_health_collector_t fm_health_topo = {
    .name = "topo",
    .init = topo_init,
    .sample = topo_sample,
    .fini = topo_fini,
};
