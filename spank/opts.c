/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"

#define ARG_MAX_LEN 64

static const char *mode_names[] = {
    [FM_MODE_OFF] = "off",
    [FM_MODE_OBSERVE] = "observe",
    [FM_MODE_PROTECT] = "protect",
};

const char *fm_opts_mode_name (fm_mode_t mode)
{
    return (unsigned)mode <= FM_MODE_PROTECT ? mode_names[mode] : "?";
}

static int mode_parse (const char *s, fm_mode_t *mode)
{
    for (int i = 0; i <= FM_MODE_PROTECT; i++) {
        if (strcmp (s, mode_names[i]) == 0) {
            *mode = (fm_mode_t)i;
            return 0;
        }
    }
    return -1;
}

int fm_opts_request_parse (const char *arg, fm_request_t *req, fm_error_t *err)
{
    char buf[ARG_MAX_LEN + 1], *save = NULL, *tok;
    fm_request_t r = {.mode = FM_MODE_OBSERVE};
    bool have_mode = false, have_rate = false;

    if (!arg || arg[0] == '\0') {
        *req = r;
        return 0;
    }
    if (strlen (arg) > ARG_MAX_LEN) {
        errno = EINVAL;
        return fm_errprintf (err, "--fabric-monitor: argument too long");
    }
    snprintf (buf, sizeof (buf), "%s", arg);
    for (tok = strtok_r (buf, ",", &save); tok; tok = strtok_r (NULL, ",", &save)) {
        if (strncmp (tok, "rate=", 5) == 0) {
            char *end;
            double v;
            errno = 0;
            v = strtod (tok + 5, &end);
            if (have_rate || errno != 0 || end == tok + 5 || *end != '\0'
                || !(v > 0 && v <= FM_SPANK_RATE_MAX)) {
                errno = EINVAL;
                return fm_errprintf (err,
                                     "--fabric-monitor: invalid rate '%s' "
                                     "(probes per second per peer, 0 < N <= 500)",
                                     tok + 5);
            }
            r.rate = v;
            have_rate = true;
        } else if (!have_mode && !have_rate && mode_parse (tok, &r.mode) == 0) {
            have_mode = true;
        } else if (!r.precheck && strcmp (tok, "precheck") == 0) {
            /* combines with observe or protect, in any place (precheck.c) */
            r.precheck = true;
        } else {
            errno = EINVAL;
            return fm_errprintf (err,
                                 "--fabric-monitor: invalid value '%s' "
                                 "(want observe, protect or off, optionally ,rate=N)",
                                 tok);
        }
    }
    if (r.precheck && r.mode == FM_MODE_OFF) {
        errno = EINVAL;
        return fm_errprintf (err, "--fabric-monitor: precheck needs observe or protect");
    }
    if (!have_mode && !have_rate && !r.precheck) {
        /* only commas */
        errno = EINVAL;
        return fm_errprintf (err, "--fabric-monitor: invalid value '%s'", arg);
    }
    *req = r;
    return 0;
}

static int set_str (char *dst,
                    size_t size,
                    const char *key,
                    const char *val,
                    bool absolute,
                    fm_error_t *err)
{
    if (val[0] == '\0' || strlen (val) >= size || (absolute && val[0] != '/')) {
        errno = EINVAL;
        return fm_errprintf (err,
                             "plugstack argument %s: %s",
                             key,
                             absolute ? "want an absolute path" : "empty or too long");
    }
    snprintf (dst, size, "%s", val);
    return 0;
}

int fm_opts_conf_parse (int ac, char **av, fm_spank_conf_t *conf, fm_error_t *err)
{
    fm_spank_conf_t c = {.def = FM_MODE_OFF};

    snprintf (c.daemon, sizeof (c.daemon), "%s", FM_SPANK_DEFAULT_DAEMON);
    snprintf (c.agent, sizeof (c.agent), "%s", FM_SPANK_DEFAULT_AGENT);
    snprintf (c.statedir, sizeof (c.statedir), "%s", FM_SPANK_DEFAULT_STATEDIR);
    snprintf (c.check, sizeof (c.check), "%s", FM_SPANK_DEFAULT_CHECK);
    for (int i = 0; i < ac; i++) {
        const char *a = av[i];
        if (strncmp (a, "daemon=", 7) == 0) {
            /* fabricd serves plain HTTP; requests carry MUNGE credentials */
            if (strncmp (a + 7, "http://", 7) != 0) {
                errno = EINVAL;
                return fm_errprintf (
                    err, "plugstack argument daemon: want http://HOST:PORT");
            }
            if (set_str (c.daemon, sizeof (c.daemon), "daemon", a + 7, false, err)
                < 0) {
                return -1;
            }
        } else if (strncmp (a, "agent=", 6) == 0) {
            if (set_str (c.agent, sizeof (c.agent), "agent", a + 6, true, err) < 0) {
                return -1;
            }
        } else if (strncmp (a, "munge_socket=", 13) == 0) {
            if (set_str (c.munge_socket,
                         sizeof (c.munge_socket),
                         "munge_socket",
                         a + 13,
                         true,
                         err)
                < 0) {
                return -1;
            }
        } else if (strncmp (a, "statedir=", 9) == 0) {
            if (set_str (
                    c.statedir, sizeof (c.statedir) - 64, "statedir", a + 9, true, err)
                < 0) {
                return -1;
            }
        } else if (strncmp (a, "health_root=", 12) == 0) {
            if (set_str (c.health_root,
                         sizeof (c.health_root),
                         "health_root",
                         a + 12,
                         true,
                         err)
                < 0) {
                return -1;
            }
        } else if (strncmp (a, "check=", 6) == 0) {
            if (set_str (c.check, sizeof (c.check), "check", a + 6, true, err) < 0) {
                return -1;
            }
        } else if (strncmp (a, "default=", 8) == 0) {
            if (mode_parse (a + 8, &c.def) < 0) {
                errno = EINVAL;
                return fm_errprintf (err,
                                     "plugstack argument default: want off, observe or "
                                     "protect");
            }
        } else if (strcmp (a, "failonerror") == 0) {
            c.failonerror = true;
        } else {
            errno = EINVAL;
            return fm_errprintf (err, "unknown plugstack argument '%s'", a);
        }
    }
    *conf = c;
    return 0;
}
