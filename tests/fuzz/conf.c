/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "conf.h"
#include "dconf.h"
#include "idlist.h"
#include "fuzz.h"

/* Config text (lib/conf.c) against two tables: fabricd's own and one with every
 * value type and bound. Oracles from conf.h: a failed load changes nothing,
 * names the file, and sets errno; a successful one dumps to a text that loads
 * back to the same values (the dump of the reload is identical).
 * A first line "!key=value" is set with fm_conf_set_locked() (the command line)
 * before the rest loads as the file: a locked value must survive the load.
 */

static const char *const colours[] = {"red", "green", "blue", NULL};

static const fm_conf_item_t every_type[] = {
    {"count", FM_CONF_INT, "3", -5, 1000, NULL, "bounded int"},
    {"any_int", FM_CONF_INT, NULL, 0, 0, NULL, "unbounded int"},
    {"ratio", FM_CONF_DOUBLE, "0.5", 0, 1, NULL, "bounded double"},
    {"any_double", FM_CONF_DOUBLE, NULL, 0, 0, NULL, "unbounded double"},
    {"flag", FM_CONF_BOOL, "no", 0, 0, NULL, "bool"},
    {"name", FM_CONF_STRING, "x", 0, 16, NULL, "short string"},
    {"text", FM_CONF_STRING, NULL, 0, 0, NULL, "any string"},
    {"colour", FM_CONF_ENUM, "green", 0, 0, colours, "enum"},
    {"interval", FM_CONF_DURATION, "5s", 1e6, 3600e9, NULL, "duration"},
    {"any_duration", FM_CONF_DURATION, NULL, 0, 0, NULL, "unbounded duration"},
    {"buffer", FM_CONF_SIZE, "64k", 1024, 1024.0 * 1024 * 1024 * 1024, NULL, "size"},
    {.key = NULL},
};

static char *dump (const fm_conf_t *conf)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream (&buf, &len);

    if (!fp) {
        abort ();
    }
    fuzz_check (fm_conf_dump (conf, fp) == 0);
    if (fclose (fp) != 0) {
        abort ();
    }
    return buf;
}

/* The value of key as text, through the typed getter; NULL when unset. */
static char *
value_of (const fm_conf_t *conf, const fm_conf_item_t *table, const char *key)
{
    const fm_conf_item_t *it = table;
    char buf[64];
    const char *s;

    while (it->key && strcmp (it->key, key) != 0) {
        it++;
    }
    fuzz_check (it->key != NULL);
    switch (it->type) {
    case FM_CONF_INT:
        snprintf (buf, sizeof (buf), "%lld", (long long)fm_conf_int (conf, key));
        break;
    case FM_CONF_DOUBLE:
        snprintf (buf, sizeof (buf), "%.17g", fm_conf_double (conf, key));
        break;
    case FM_CONF_BOOL:
        snprintf (buf, sizeof (buf), "%d", fm_conf_bool (conf, key));
        break;
    case FM_CONF_ENUM:
        snprintf (buf, sizeof (buf), "%d", fm_conf_enum (conf, key));
        break;
    case FM_CONF_DURATION:
        snprintf (buf, sizeof (buf), "%lld", (long long)fm_conf_duration (conf, key));
        break;
    case FM_CONF_SIZE:
        snprintf (buf, sizeof (buf), "%lld", (long long)fm_conf_size (conf, key));
        break;
    default:
        s = fm_conf_string (conf, key);
        return s ? strdup (s) : NULL;
    }
    return strdup (buf);
}

static bool same_value (const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp (a, b) == 0);
}

static void one (const fm_conf_item_t *table, const char *locked, const char *text)
{
    fm_error_t err = {""};
    fm_conf_t *conf = fm_conf_create (table, &err);
    char *before, *after, *key = NULL, *pinned = NULL;

    fuzz_check (conf != NULL);
    if (locked && (key = strdup (locked))) {
        char *eq = strchr (key, '=');
        if (eq) {
            *eq = '\0';
        }
        if (!eq || fm_conf_set_locked (conf, key, eq + 1, &err) < 0) {
            free (key);
            key = NULL;
        } else {
            pinned = value_of (conf, table, key);
        }
    }
    before = dump (conf);
    errno = 0;
    if (fm_conf_load_string (conf, "fuzz.conf", text, &err) < 0) {
        fuzz_check (errno != 0);
        fuzz_check (memchr (err.text, '\0', sizeof (err.text)) != NULL);
        fuzz_check (strncmp (err.text, "fuzz.conf", 9) == 0);
        after = dump (conf);
        fuzz_check (strcmp (before, after) == 0);
    } else {
        fm_conf_t *again = fm_conf_create (table, &err);
        char *redump;

        after = dump (conf);
        fuzz_check (again != NULL);
        if (key) {
            char *now = value_of (conf, table, key);
            fuzz_check (same_value (now, pinned));
            free (now);
        }
        if (fm_conf_load_string (again, "dump", after, &err) < 0) {
            fprintf (stderr, "the dump does not load: %s\n%s", err.text, after);
            abort ();
        }
        redump = dump (again);
        fuzz_check (strcmp (after, redump) == 0);
        free (redump);
        fm_conf_destroy (again);
        if (table == fm_dconf_table) {
            const char *uids = fm_conf_string (conf, "report_uids");
            fm_idlist_t l;
            if (uids && fm_idlist_parse (uids, false, &l, &err) == 0) {
                for (size_t i = 0; i < l.n; i++) {
                    fuzz_check (fm_idlist_has (&l, l.ids[i]));
                }
            }
        }
    }
    free (before);
    free (after);
    free (key);
    free (pinned);
    fm_conf_destroy (conf);
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    char *text = fuzz_strndup (data, size);
    char *locked = NULL, *file = text;

    if (text[0] == '!') {
        char *nl = strchr (text, '\n');
        locked = text + 1;
        file = nl ? nl + 1 : text + strlen (text);
        if (nl) {
            *nl = '\0';
        }
    }
    one (fm_dconf_table, locked, file);
    one (every_type, locked, file);
    free (text);
    return 0;
}
