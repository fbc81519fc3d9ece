/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <jansson.h>

#include "registration.h"
#include "report_parse.h"
#include "validate.h"
#include "fuzz.h"

/* POST /v1/reports and POST /v1/agents bodies (daemon/report_parse.c,
 * daemon/registration.c). The report validator has its own streaming JSON lexer, so
 * jansson serves as the oracle: a body the validator accepts must be JSON that jansson
 * parses too.
 */

/* Window times are checked against "now": a fixed one (2027-01-15T08:00:00Z,
 * as in daemon/test/report.c) keeps a reproducer independent of the day.
 */
#define NOW_NS 1800000000000000000LL

static bool terminated (const char *s, size_t size)
{
    return memchr (s, '\0', size) != NULL;
}

static void check_report (const uint8_t *data, size_t size, const fm_report_t *rep)
{
    size_t records = 0;
    json_t *o;

    fuzz_check (fm_validate_node_name (rep->node));
    fuzz_check (rep->job_id >= 1);
    fuzz_check (rep->nwindows >= 1);
    for (size_t i = 0; i < rep->nwindows; i++) {
        const fm_window_t *w = &rep->windows[i];
        json_t *h;

        fuzz_check (w->start_ns < w->end_ns);
        fuzz_check (w->health_json != NULL);
        h = json_loads (w->health_json, 0, NULL);
        fuzz_check (json_is_array (h));
        json_decref (h);
        for (size_t j = 0; j < w->nlinks; j++) {
            const fm_link_rec_t *l = &w->links[j];
            fuzz_check (fm_validate_node_name (l->peer));
            fuzz_check (l->dir == FM_DIR_OUT || l->dir == FM_DIR_IN);
            fuzz_check (l->lost <= l->sent && l->reordered <= l->received);
            fuzz_check (!l->rtt.present
                        || (l->rtt.p50 <= l->rtt.p90 && l->rtt.p90 <= l->rtt.p99
                            && l->rtt.p99 <= l->rtt.max));
        }
        records += w->nlinks;
    }
    fuzz_check (records == rep->nrecords);
    /* JSON_ALLOW_NUL: "\u0000" is valid JSON that the validator may keep. */
    o = json_loadb ((const char *)data, size, JSON_ALLOW_NUL, NULL);
    fuzz_check (json_is_object (o));
    json_decref (o);
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    fm_report_t rep;
    fm_invalid_t inv;
    json_t *root;

    if (fm_report_parse ((const char *)data, size, NOW_NS, &rep, &inv) == 0) {
        check_report (data, size, &rep);
        fm_report_parse_release (&rep);
    } else {
        fuzz_check (errno == EINVAL || errno == ENOMEM);
        fuzz_check (terminated (inv.field, sizeof (inv.field)));
        fuzz_check (terminated (inv.message, sizeof (inv.message)));
        fuzz_check (inv.message[0] != '\0');
        fuzz_check (!inv.syntax || inv.field[0] == '\0');
    }
    if ((root = json_loadb ((const char *)data, size, 0, NULL))) {
        fm_registration_t reg;
        if (fm_registration_parse (root, &reg, &inv) == 0) {
            fuzz_check (fm_validate_node_name (reg.node));
            fuzz_check (fm_validate_ip_literal (reg.probe_addr));
            fuzz_check (reg.probe_port >= 1 && reg.probe_port <= 65535);
            fuzz_check (reg.nics_json != NULL);
            fm_registration_release (&reg);
        } else {
            fuzz_check (inv.message[0] != '\0');
        }
        json_decref (root);
    }
    return 0;
}
