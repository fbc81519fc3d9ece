/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health.h"
#include "log.h"

/* AMD GPUs through the AMD SMI library (ROCm 6), loaded at run time. The
 * types below are amdsmi.h's ABI for the calls made here.
 */

typedef int amdsmi_status_t;
typedef void *amdsmi_socket_handle;
typedef void *amdsmi_processor_handle;

#define AMDSMI_STATUS_SUCCESS 0
#define AMDSMI_STATUS_NOT_SUPPORTED 2
#define AMDSMI_INIT_AMD_GPUS (1ULL << 1)

/* ROCm 6.1 added deferred_count out of the reserved words, so an older
 * library leaves it 0 here.
 */
typedef struct {
    uint64_t correctable_count;
    uint64_t uncorrectable_count;
    uint64_t deferred_count;
    uint64_t reserved[5];
} amdsmi_error_count_t;

/* amdsmi_bdf_t: function:3, device:5, bus:8, domain:48 of one uint64_t */
typedef union {
    uint64_t as_uint;
} amdsmi_bdf_t;

#define SOCKETS_MAX 64
#define GPUS_MAX 64

typedef struct {
    amdsmi_status_t (*init) (uint64_t);
    amdsmi_status_t (*shut_down) (void);
    amdsmi_status_t (*sockets) (uint32_t *, amdsmi_socket_handle *);
    amdsmi_status_t (*processors) (amdsmi_socket_handle,
                                   uint32_t *,
                                   amdsmi_processor_handle *);
    amdsmi_status_t (*bdf) (amdsmi_processor_handle, amdsmi_bdf_t *);
    amdsmi_status_t (*ecc) (amdsmi_processor_handle, amdsmi_error_count_t *);
    amdsmi_status_t (*xgmi) (amdsmi_processor_handle, int *);
    amdsmi_status_t (*status_string) (amdsmi_status_t, const char **);
} amdsmi_api_t;

typedef struct {
    amdsmi_processor_handle h;
    char bus[FM_HEALTH_NAME_MAX];
} agpu_t;

typedef struct {
    void *dl;
    amdsmi_api_t api;
    bool initialised;
    agpu_t gpu[GPUS_MAX];
    unsigned int ngpu;
    fm_health_memo_t *memo;
} amdsmi_t;

static const char *errstr (amdsmi_t *s, amdsmi_status_t rc)
{
    const char *e = NULL;

    if (s->api.status_string
        && s->api.status_string (rc, &e) != AMDSMI_STATUS_SUCCESS) {
        e = NULL;
    }
    return e ? e : "AMD SMI error";
}

static void amdsmi_fini (void *arg)
{
    amdsmi_t *s = arg;
    int saved = errno;

    if (!s) {
        return;
    }
    if (s->initialised) {
        s->api.shut_down ();
    }
    if (s->dl) {
        dlclose (s->dl);
    }
    fm_health_memo_destroy (s->memo);
    free (s);
    errno = saved;
}

static void *amdsmi_init (const fm_health_conf_t *conf, fm_error_t *err)
{
    const char *lib =
        conf && conf->amdsmi_library ? conf->amdsmi_library : "libamd_smi.so";
    amdsmi_t *s = calloc (1, sizeof (*s));
    amdsmi_socket_handle sockets[SOCKETS_MAX];
    uint32_t nsock = SOCKETS_MAX;
    amdsmi_api_t *a;
    amdsmi_status_t rc;

    if (!s || !(s->memo = fm_health_memo_create ())) {
        free (s);
        errno = ENOMEM;
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    a = &s->api;
    const fm_health_sym_t syms[] = {
        {"amdsmi_init", (void **)&a->init, true},
        {"amdsmi_shut_down", (void **)&a->shut_down, true},
        {"amdsmi_get_socket_handles", (void **)&a->sockets, true},
        {"amdsmi_get_processor_handles", (void **)&a->processors, true},
        {"amdsmi_get_gpu_device_bdf", (void **)&a->bdf, false},
        {"amdsmi_get_gpu_total_ecc_count", (void **)&a->ecc, false},
        {"amdsmi_gpu_xgmi_error_status", (void **)&a->xgmi, false},
        {"amdsmi_status_code_to_string", (void **)&a->status_string, false},
        {NULL, NULL, false},
    };

    if (!(s->dl = fm_health_dlopen (lib, syms, err))) {
        int saved = errno;

        amdsmi_fini (s);
        errno = saved;
        return NULL;
    }
    if ((rc = a->init (AMDSMI_INIT_AMD_GPUS)) != AMDSMI_STATUS_SUCCESS) {
        fm_errprintf (err, "amdsmi_init: %s", errstr (s, rc));
        amdsmi_fini (s);
        errno = ENODEV;
        return NULL;
    }
    s->initialised = true;
    if ((rc = a->sockets (&nsock, sockets)) != AMDSMI_STATUS_SUCCESS) {
        fm_errprintf (err, "amdsmi_get_socket_handles: %s", errstr (s, rc));
        amdsmi_fini (s);
        errno = ENODEV;
        return NULL;
    }
    nsock = nsock > SOCKETS_MAX ? SOCKETS_MAX : nsock;
    for (uint32_t i = 0; i < nsock && s->ngpu < GPUS_MAX; i++) {
        amdsmi_processor_handle p[GPUS_MAX];
        uint32_t np = GPUS_MAX - s->ngpu;

        if ((rc = a->processors (sockets[i], &np, p)) != AMDSMI_STATUS_SUCCESS) {
            fm_warn ("health amdsmi: socket %u: %s", i, errstr (s, rc));
            continue;
        }
        np = np > GPUS_MAX - s->ngpu ? GPUS_MAX - s->ngpu : np;
        for (uint32_t j = 0; j < np; j++) {
            agpu_t *g = &s->gpu[s->ngpu];
            amdsmi_bdf_t bdf = {0};

            g->h = p[j];
            if (a->bdf && a->bdf (p[j], &bdf) == AMDSMI_STATUS_SUCCESS) {
                uint64_t b = bdf.as_uint;

                snprintf (g->bus,
                          sizeof (g->bus),
                          "%04x:%02x:%02x.%x",
                          (unsigned int)((b >> 16) & 0xffff),
                          (unsigned int)((b >> 8) & 0xff),
                          (unsigned int)((b >> 3) & 0x1f),
                          (unsigned int)(b & 0x7));
            } else {
                snprintf (g->bus, sizeof (g->bus), "amdgpu%u", s->ngpu);
            }
            s->ngpu++;
        }
    }
    if (s->ngpu == 0) {
        fm_errprintf (err, "no AMD GPU");
        amdsmi_fini (s);
        errno = ENODEV;
        return NULL;
    }
    return s;
}

static void query_failed (amdsmi_t *s, agpu_t *g, const char *what, amdsmi_status_t rc)
{
    char key[128];

    snprintf (key, sizeof (key), "%s/%s", g->bus, what);
    if (!fm_health_memo_note (s->memo, key)) {
        return;
    }
    if (rc == AMDSMI_STATUS_NOT_SUPPORTED) {
        fm_debug ("health amdsmi: %s: %s not supported", g->bus, what);
    } else {
        fm_warn ("health amdsmi: %s: %s: %s", g->bus, what, errstr (s, rc));
    }
}

static int counter (amdsmi_t *s,
                    agpu_t *g,
                    const char *name,
                    uint64_t raw,
                    fm_hclass_t bad,
                    fm_health_set_t *out)
{
    char key[128];
    int64_t v = raw > INT64_MAX ? INT64_MAX : (int64_t)raw;
    int64_t delta;

    snprintf (key, sizeof (key), "%s/%s", g->bus, name);
    if (fm_health_memo_delta (s->memo, key, v, &delta) < 0) {
        return -1;
    }
    return fm_health_add_counter (
        out, FM_HREC_GPU, g->bus, 0, name, delta, v, delta > 0 ? bad : FM_HCLASS_INFO);
}

static int sample_gpu (amdsmi_t *s, agpu_t *g, fm_health_set_t *out)
{
    amdsmi_status_t rc;

    if (fm_health_add_text (
            out, FM_HREC_GPU, g->bus, 0, "vendor", "amd", FM_HCLASS_INFO)
        < 0) {
        return -1;
    }
    if (s->api.ecc) {
        amdsmi_error_count_t ec;

        memset (&ec, 0, sizeof (ec));
        if ((rc = s->api.ecc (g->h, &ec)) != AMDSMI_STATUS_SUCCESS) {
            query_failed (s, g, "ECC counts", rc);
        } else if (counter (s,
                            g,
                            "ecc_correctable",
                            ec.correctable_count,
                            FM_HCLASS_INFO,
                            out)
                       < 0
                   || counter (s,
                               g,
                               "ecc_uncorrectable",
                               ec.uncorrectable_count,
                               FM_HCLASS_FAULT,
                               out)
                          < 0
                   || counter (
                          s, g, "ecc_deferred", ec.deferred_count, FM_HCLASS_WARN, out)
                          < 0) {
            return -1;
        }
    }
    if (s->api.xgmi) {
        int st = 0;

        /* The status stays set until someone resets it (amd-smi reset
         * --xgmierr); resetting is the admin's call, not the agent's.
         */
        if ((rc = s->api.xgmi (g->h, &st)) != AMDSMI_STATUS_SUCCESS) {
            query_failed (s, g, "XGMI error status", rc);
        } else if (fm_health_add_gauge (out,
                                        FM_HREC_GPU,
                                        g->bus,
                                        0,
                                        "xgmi_error_status",
                                        st,
                                        st ? FM_HCLASS_WARN : FM_HCLASS_INFO)
                   < 0) {
            return -1;
        }
    }
    return 0;
}

static int amdsmi_sample (void *arg, fm_health_set_t *out, fm_error_t *err)
{
    amdsmi_t *s = arg;
    size_t n0 = out->n;

    for (unsigned int i = 0; i < s->ngpu; i++) {
        if (sample_gpu (s, &s->gpu[i], out) < 0) {
            out->n = n0;
            return fm_errprintf (err, "out of memory");
        }
    }
    return 0;
}

const fm_health_collector_t fm_health_amdsmi = {
    .name = "amdsmi",
    .init = amdsmi_init,
    .sample = amdsmi_sample,
    .fini = amdsmi_fini,
};
