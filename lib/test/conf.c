/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "conf.h"

static const char *const stores[] = {"sqlite", "memory", NULL};

static const fm_conf_item_t items[] = {
    {"listen_port", FM_CONF_INT, "8470", 1, 65535, NULL, "HTTP port"},
    {"offset", FM_CONF_INT, "0", 0, 0, NULL, "unbounded integer"},
    {"threshold", FM_CONF_DOUBLE, "0.5", 0, 1, NULL, "score threshold"},
    {"drain", FM_CONF_BOOL, "no", 0, 0, NULL, "drain bad nodes"},
    {"name", FM_CONF_STRING, "fabric", 0, 8, NULL, "short name"},
    {"url", FM_CONF_STRING, NULL, 0, 0, NULL, "daemon URL"},
    {"store", FM_CONF_ENUM, "sqlite", 0, 0, stores, "storage backend"},
    {"window", FM_CONF_DURATION, "5s", 1e9, 3600e9, NULL, "report window"},
    {"max_body", FM_CONF_SIZE, "64k", 1024, 1073741824.0, NULL, "body cap"},
    {.key = NULL},
};

struct ctx {
    fm_conf_t *conf;
    char dir[64];
};

static int setup (void **state)
{
    static struct ctx c;
    fm_error_t err;

    if (!(c.conf = fm_conf_create (items, &err))) {
        return -1;
    }
    strcpy (c.dir, "/tmp/fm-conf-XXXXXX");
    if (!mkdtemp (c.dir)) {
        return -1;
    }
    *state = &c;
    return 0;
}

static int teardown (void **state)
{
    struct ctx *c = *state;
    char cmd[128];

    fm_conf_destroy (c->conf);
    snprintf (cmd, sizeof (cmd), "rm -rf '%s'", c->dir);
    return system (cmd) == 0 ? 0 : -1;
}

static void test_defaults (void **state)
{
    struct ctx *c = *state;

    assert_int_equal (fm_conf_int (c->conf, "listen_port"), 8470);
    assert_true (fm_conf_double (c->conf, "threshold") == 0.5);
    assert_false (fm_conf_bool (c->conf, "drain"));
    assert_string_equal (fm_conf_string (c->conf, "name"), "fabric");
    assert_null (fm_conf_string (c->conf, "url"));
    assert_int_equal (fm_conf_enum (c->conf, "store"), 0);
    assert_int_equal (fm_conf_duration (c->conf, "window"), 5000000000LL);
    assert_int_equal (fm_conf_size (c->conf, "max_body"), 65536);
}

static void test_bad_defaults (void **state)
{
    static const char *const none[] = {NULL};
    const struct {
        fm_conf_item_t table[3];
        const char *msg;
    } v[] = {
        {{{"port", FM_CONF_INT, "0", 1, 10, NULL, NULL}},
         "bad default: port: 0 is out of range [1, 10]"},
        {{{"port", FM_CONF_INT, "x", 1, 10, NULL, NULL}},
         "bad default: port: invalid value 'x' (expected an integer)"},
        {{{"s", FM_CONF_ENUM, "c", 0, 0, stores, NULL}},
         "bad default: s: invalid value 'c' (expected one of: sqlite, memory)"},
        {{{"s", FM_CONF_ENUM, NULL, 0, 0, none, NULL}}, "s: enum without choices"},
        {{{"s", FM_CONF_ENUM, NULL, 0, 0, NULL, NULL}}, "s: enum without choices"},
        {{{"a", FM_CONF_INT, NULL, 5, 1, NULL, NULL}},
         "a: invalid type or range in table"},
        {{{"a", FM_CONF_INT, NULL, 0, 0, NULL, NULL},
          {"a", FM_CONF_BOOL, NULL, 0, 0, NULL, NULL}},
         "duplicate key 'a' in table"},
        {{{"bad key", FM_CONF_INT, NULL, 0, 0, NULL, NULL}},
         "invalid key 'bad key' in table"},
        {{{"w", FM_CONF_DURATION, "1s", 2e9, 3e9, NULL, NULL}},
         "bad default: w: 1s is out of range [2s, 3s]"},
    };

    for (size_t i = 0; i < sizeof (v) / sizeof (v[0]); i++) {
        fm_error_t err = {""};
        errno = 0;
        assert_null (fm_conf_create (v[i].table, &err));
        assert_int_equal (errno, EINVAL);
        if (strcmp (err.text, v[i].msg) != 0) {
            fail_msg ("case %zu: got '%s', want '%s'", i, err.text, v[i].msg);
        }
    }
    errno = 0;
    assert_null (fm_conf_create (NULL, NULL));
    assert_int_equal (errno, EINVAL);
    fm_conf_destroy (NULL);
}

static void test_load_values (void **state)
{
    struct ctx *c = *state;
    fm_error_t err = {""};
    const char *text = "# a comment\n"
                       "\n"
                       "   \t\n"
                       "listen_port = 9000\n"
                       "  offset=-12   # trailing comment\n"
                       "threshold\t=\t0.25\n"
                       "drain = ON\n"
                       "name = \"a \\\"q\\\" \\\\\"  # quoted\n"
                       "url = http://x:1/a b\n"
                       "store = memory\n"
                       "window = 1.5m\n"
                       "max_body = 10M";

    assert_int_equal (fm_conf_load_string (c->conf, "t.conf", text, &err), 0);
    assert_int_equal (fm_conf_int (c->conf, "listen_port"), 9000);
    assert_int_equal (fm_conf_int (c->conf, "offset"), -12);
    assert_true (fm_conf_double (c->conf, "threshold") == 0.25);
    assert_true (fm_conf_bool (c->conf, "drain"));
    assert_string_equal (fm_conf_string (c->conf, "name"), "a \"q\" \\");
    assert_string_equal (fm_conf_string (c->conf, "url"), "http://x:1/a b");
    assert_int_equal (fm_conf_enum (c->conf, "store"), 1);
    assert_string_equal (fm_conf_enum_name (c->conf, "store"), "memory");
    assert_int_equal (fm_conf_duration (c->conf, "window"), 90000000000LL);
    assert_int_equal (fm_conf_size (c->conf, "max_body"), 10485760);
}

static const struct {
    const char *s;
    bool v;
} bools[] = {
    {"yes", true},
    {"no", false},
    {"true", true},
    {"false", false},
    {"on", true},
    {"off", false},
    {"1", true},
    {"0", false},
    {"YES", true},
    {"False", false},
};

static void test_bool_spellings (void **state)
{
    struct ctx *c = *state;
    fm_error_t err;

    for (size_t i = 0; i < sizeof (bools) / sizeof (bools[0]); i++) {
        assert_int_equal (fm_conf_set (c->conf, "drain", bools[i].s, &err), 0);
        assert_int_equal (fm_conf_bool (c->conf, "drain"), bools[i].v);
    }
    assert_int_equal (fm_conf_set (c->conf, "drain", "maybe", &err), -1);
    assert_string_equal (err.text,
                         "drain: invalid value 'maybe' (expected yes/no, true/false, "
                         "on/off or 1/0)");
}

static const struct {
    const char *s;
    int64_t v;
} sizes[] = {
    {"1024", 1024},
    {"64k", 65536},
    {"64K", 65536},
    {"10M", 10485760},
    {"1G", 1073741824},
};

static void test_sizes (void **state)
{
    struct ctx *c = *state;
    fm_error_t err;
    const char *bad[] = {"1.5k", "10m", "k", "-1k", "1kk", "1 k", "0x10", ""};

    for (size_t i = 0; i < sizeof (sizes) / sizeof (sizes[0]); i++) {
        assert_int_equal (fm_conf_set (c->conf, "max_body", sizes[i].s, &err), 0);
        assert_int_equal (fm_conf_size (c->conf, "max_body"), sizes[i].v);
    }
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        errno = 0;
        if (fm_conf_set (c->conf, "max_body", bad[i], &err) != -1) {
            fail_msg ("size '%s' accepted", bad[i]);
        }
        assert_int_equal (errno, EINVAL);
    }
    assert_int_equal (fm_conf_set (c->conf, "max_body", "2G", &err), -1);
    assert_int_equal (errno, ERANGE);
    assert_string_equal (err.text, "max_body: 2G is out of range [1k, 1G]");
    assert_int_equal (fm_conf_set (c->conf, "max_body", "99999999999T", &err), -1);
    assert_int_equal (errno, ERANGE);
    assert_string_equal (err.text, "max_body: 99999999999T is out of range");
    /* the failed sets changed nothing */
    assert_int_equal (fm_conf_size (c->conf, "max_body"), 1073741824);
}

/* Each bad file gives exactly this message and leaves every value alone. */
static const struct {
    const char *text;
    const char *msg;
    int err;
} load_bad[] = {
    {"bogus = 1\n", "f.conf:1: unknown key 'bogus'", EINVAL},
    {"listen_port = 1\n\nlisten_port = 2\n",
     "f.conf:3: duplicate key 'listen_port' (first set on line 1)",
     EINVAL},
    {"listen_port 80\n", "f.conf:1: missing '=' (expected key = value)", EINVAL},
    {" = 80\n", "f.conf:1: missing key before '='", EINVAL},
    {"listen_port = 70000\n",
     "f.conf:1: listen_port: 70000 is out of range [1, 65535]",
     ERANGE},
    {"listen_port = 0\n",
     "f.conf:1: listen_port: 0 is out of range [1, 65535]",
     ERANGE},
    {"listen_port = 80x\n",
     "f.conf:1: listen_port: invalid value '80x' (expected an integer)",
     EINVAL},
    {"listen_port =\n",
     "f.conf:1: listen_port: invalid value '' (expected an integer)",
     EINVAL},
    {"offset = 99999999999999999999\n",
     "f.conf:1: offset: 99999999999999999999 is out of range",
     ERANGE},
    {"threshold = 1.5\n", "f.conf:1: threshold: 1.5 is out of range [0, 1]", ERANGE},
    {"threshold = nan\n",
     "f.conf:1: threshold: invalid value 'nan' (expected a finite number)",
     EINVAL},
    {"threshold = 1e999\n", "f.conf:1: threshold: 1e999 is out of range", ERANGE},
    {"store = oracle\n",
     "f.conf:1: store: invalid value 'oracle' (expected one of: sqlite, memory)",
     EINVAL},
    {"store = SQLITE\n",
     "f.conf:1: store: invalid value 'SQLITE' (expected one of: sqlite, memory)",
     EINVAL},
    {"window = 0.5s\n", "f.conf:1: window: 0.5s is out of range [1s, 1h]", ERANGE},
    {"window = 2h\n", "f.conf:1: window: 2h is out of range [1s, 1h]", ERANGE},
    {"window = 5 s\n",
     "f.conf:1: window: invalid value '5 s' (expected a duration (such as 500ms, 5s, "
     "2m, "
     "1h))",
     EINVAL},
    {"name = \"toolongname\"\n", "f.conf:1: name: longer than 8 characters", ERANGE},
    {"name = \"abc\n", "f.conf:1: unterminated quoted string", EINVAL},
    {"name = \"a\\nb\"\n", "f.conf:1: invalid escape (only \\\" and \\\\)", EINVAL},
    {"name = \"a\" b\n", "f.conf:1: name: text after the closing quote", EINVAL},
    {"name = a\x01\n", "f.conf:1: name: control character in value", EINVAL},
    {"drain = yes\nlisten_port = 1\nstore = x\n",
     "f.conf:3: store: invalid value 'x' (expected one of: sqlite, memory)",
     EINVAL},
};

static void assert_untouched (fm_conf_t *conf)
{
    assert_int_equal (fm_conf_int (conf, "listen_port"), 8470);
    assert_int_equal (fm_conf_int (conf, "offset"), 0);
    assert_false (fm_conf_bool (conf, "drain"));
    assert_string_equal (fm_conf_string (conf, "name"), "fabric");
    assert_int_equal (fm_conf_enum (conf, "store"), 0);
    assert_string_equal (fm_conf_enum_name (conf, "store"), "sqlite");
}

static void test_load_errors (void **state)
{
    struct ctx *c = *state;

    for (size_t i = 0; i < sizeof (load_bad) / sizeof (load_bad[0]); i++) {
        fm_error_t err = {""};
        errno = 0;
        if (fm_conf_load_string (c->conf, "f.conf", load_bad[i].text, &err) != -1) {
            fail_msg ("case %zu accepted", i);
        }
        if (strcmp (err.text, load_bad[i].msg) != 0) {
            fail_msg ("case %zu: got '%s', want '%s'", i, err.text, load_bad[i].msg);
        }
        assert_int_equal (errno, load_bad[i].err);
        assert_untouched (c->conf);
    }
}

static void test_line_cap (void **state)
{
    struct ctx *c = *state;
    size_t n = 4096;
    char *text = malloc (n + 64);
    fm_error_t err;

    assert_non_null (text);
    /* exactly 4096 bytes before the newline is allowed */
    memset (text, ' ', n);
    memcpy (text, "url = ", 6);
    memset (text + 6, 'u', n - 6);
    strcpy (text + n, "\nlisten_port = 2\n");
    assert_int_equal (fm_conf_load_string (c->conf, "f", text, &err), 0);
    assert_int_equal (strlen (fm_conf_string (c->conf, "url")), n - 6);
    /* one more byte is refused, and nothing after it applies */
    memset (text + 6, 'v', n - 5);
    strcpy (text + n + 1, "\nlisten_port = 3\n");
    errno = 0;
    assert_int_equal (fm_conf_load_string (c->conf, "f", text, &err), -1);
    assert_int_equal (errno, EINVAL);
    assert_string_equal (err.text, "f:1: line longer than 4096 bytes");
    assert_int_equal (fm_conf_int (c->conf, "listen_port"), 2);
    assert_int_equal (fm_conf_string (c->conf, "url")[0], 'u');
    free (text);
}

static void test_file_cap (void **state)
{
    struct ctx *c = *state;
    size_t n = 1024 * 1024 + 1;
    char *text = malloc (n + 1);
    char path[128];
    FILE *fp;
    fm_error_t err;

    assert_non_null (text);
    memset (text, '\n', n);
    text[n] = '\0';
    errno = 0;
    assert_int_equal (fm_conf_load_string (c->conf, "big", text, &err), -1);
    assert_int_equal (errno, EFBIG);
    assert_string_equal (err.text, "big: larger than 1048576 bytes");
    snprintf (path, sizeof (path), "%s/big.conf", c->dir);
    fp = fopen (path, "w");
    assert_non_null (fp);
    assert_int_equal (fwrite (text, 1, n, fp), n);
    fclose (fp);
    errno = 0;
    assert_int_equal (fm_conf_load_file (c->conf, path, &err), -1);
    assert_int_equal (errno, EFBIG);
    /* exactly the cap is fine */
    assert_int_equal (truncate (path, 1024 * 1024), 0);
    assert_int_equal (fm_conf_load_file (c->conf, path, &err), 0);
    text[n - 1] = '\0';
    assert_int_equal (fm_conf_load_string (c->conf, "big", text, &err), 0);
    free (text);
}

static void test_load_file (void **state)
{
    struct ctx *c = *state;
    char path[128];
    FILE *fp;
    fm_error_t err;

    snprintf (path, sizeof (path), "%s/a.conf", c->dir);
    fp = fopen (path, "w");
    assert_non_null (fp);
    fputs ("listen_port = 1234\nstore = memory\n", fp);
    fclose (fp);
    assert_int_equal (fm_conf_load_file (c->conf, path, &err), 0);
    assert_int_equal (fm_conf_int (c->conf, "listen_port"), 1234);
    assert_int_equal (fm_conf_enum (c->conf, "store"), 1);
    /* a second file overrides the first, the key may repeat across files */
    fp = fopen (path, "w");
    fputs ("listen_port = 99\nlisten_port = 98\n", fp);
    fclose (fp);
    assert_int_equal (fm_conf_load_file (c->conf, path, &err), -1);
    /* the path names the file in the message */
    char want[256];
    snprintf (want,
              sizeof (want),
              "%s:2: duplicate key 'listen_port' (first set on line 1)",
              path);
    assert_string_equal (err.text, want);
    assert_int_equal (fm_conf_int (c->conf, "listen_port"), 1234);
}

static void test_load_file_errors (void **state)
{
    struct ctx *c = *state;
    char path[128];
    char want[256];
    fm_error_t err;

    snprintf (path, sizeof (path), "%s/missing.conf", c->dir);
    errno = 0;
    assert_int_equal (fm_conf_load_file (c->conf, path, &err), -1);
    assert_int_equal (errno, ENOENT);
    snprintf (want, sizeof (want), "%s: No such file or directory", path);
    assert_string_equal (err.text, want);
    /* a directory, a FIFO and a device are not config files */
    errno = 0;
    assert_int_equal (fm_conf_load_file (c->conf, c->dir, &err), -1);
    assert_int_equal (errno, EINVAL);
    snprintf (want, sizeof (want), "%s: not a regular file", c->dir);
    assert_string_equal (err.text, want);
    snprintf (path, sizeof (path), "%s/fifo", c->dir);
    assert_int_equal (mkfifo (path, 0600), 0);
    errno = 0;
    assert_int_equal (fm_conf_load_file (c->conf, path, &err), -1);
    assert_int_equal (errno, EINVAL);
    errno = 0;
    assert_int_equal (fm_conf_load_file (c->conf, "/dev/null", &err), -1);
    assert_int_equal (errno, EINVAL);
    errno = 0;
    assert_int_equal (fm_conf_load_file (c->conf, NULL, &err), -1);
    assert_int_equal (errno, EINVAL);
    errno = 0;
    assert_int_equal (fm_conf_load_file (NULL, "/x", &err), -1);
    assert_int_equal (errno, EINVAL);
    errno = 0;
    assert_int_equal (fm_conf_load_string (c->conf, "x", NULL, NULL), -1);
    assert_int_equal (errno, EINVAL);
}

static void test_nul_byte (void **state)
{
    struct ctx *c = *state;
    char path[128];
    char want[256];
    fm_error_t err;
    FILE *fp;

    snprintf (path, sizeof (path), "%s/nul.conf", c->dir);
    fp = fopen (path, "w");
    assert_non_null (fp);
    assert_int_equal (fwrite ("drain = yes\nname = a\0b\n", 1, 24, fp), 24);
    fclose (fp);
    errno = 0;
    assert_int_equal (fm_conf_load_file (c->conf, path, &err), -1);
    assert_int_equal (errno, EINVAL);
    snprintf (want, sizeof (want), "%s:2: NUL byte in line", path);
    assert_string_equal (err.text, want);
    assert_untouched (c->conf);
}

static void test_dump_write_error (void **state)
{
    struct ctx *c = *state;
    FILE *fp = fopen ("/dev/full", "w");

    assert_non_null (fp);
    errno = 0;
    assert_int_equal (fm_conf_dump (c->conf, fp), -1);
    assert_int_equal (errno, ENOSPC);
    fclose (fp);
}

static void test_locked (void **state)
{
    struct ctx *c = *state;
    fm_error_t err;

    assert_int_equal (fm_conf_set_locked (c->conf, "listen_port", "1111", &err), 0);
    assert_int_equal (fm_conf_load_string (
                          c->conf, "f", "listen_port = 2222\nstore = memory\n", &err),
                      0);
    /* the command line wins, the rest of the file applies */
    assert_int_equal (fm_conf_int (c->conf, "listen_port"), 1111);
    assert_int_equal (fm_conf_enum (c->conf, "store"), 1);
    /* plain set does not override a locked value either */
    assert_int_equal (fm_conf_set (c->conf, "listen_port", "3333", &err), 0);
    assert_int_equal (fm_conf_int (c->conf, "listen_port"), 1111);
    /* a later locked set does */
    assert_int_equal (fm_conf_set_locked (c->conf, "listen_port", "4444", &err), 0);
    assert_int_equal (fm_conf_int (c->conf, "listen_port"), 4444);
    /* a bad value in the file is still an error for a locked key */
    assert_int_equal (fm_conf_load_string (c->conf, "f", "listen_port = x\n", &err),
                      -1);
    assert_int_equal (fm_conf_int (c->conf, "listen_port"), 4444);
}

static void test_set_errors (void **state)
{
    struct ctx *c = *state;
    fm_error_t err;

    errno = 0;
    assert_int_equal (fm_conf_set (c->conf, "nope", "1", &err), -1);
    assert_int_equal (errno, EINVAL);
    assert_string_equal (err.text, "unknown key 'nope'");
    errno = 0;
    assert_int_equal (fm_conf_set_locked (c->conf, "listen_port", "-1", &err), -1);
    assert_int_equal (errno, ERANGE);
    assert_string_equal (err.text, "listen_port: -1 is out of range [1, 65535]");
    /* a failed locked set does not lock */
    assert_int_equal (fm_conf_set (c->conf, "listen_port", "5", &err), 0);
    assert_int_equal (fm_conf_int (c->conf, "listen_port"), 5);
    errno = 0;
    assert_int_equal (fm_conf_set (c->conf, "listen_port", " 5", &err), -1);
    assert_int_equal (errno, EINVAL);
    assert_int_equal (fm_conf_set (c->conf, "name", "a\nb", &err), -1);
    assert_string_equal (err.text, "name: control character in value");
    assert_int_equal (fm_conf_set (NULL, "name", "a", NULL), -1);
    assert_int_equal (fm_conf_set (c->conf, NULL, "a", NULL), -1);
    assert_int_equal (fm_conf_set (c->conf, "name", NULL, NULL), -1);
}

static void dump_load_compare (fm_conf_t *conf)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream (&buf, &len);
    fm_conf_t *copy;
    fm_error_t err;

    assert_non_null (fp);
    assert_int_equal (fm_conf_dump (conf, fp), 0);
    fclose (fp);
    copy = fm_conf_create (items, &err);
    assert_non_null (copy);
    /* start the copy from different values, so the load must set them all */
    assert_int_equal (fm_conf_set (copy, "url", "other", &err), 0);
    if (fm_conf_load_string (copy, "dump", buf, &err) < 0) {
        fail_msg ("dump does not load: %s\n%s", err.text, buf);
    }
    assert_int_equal (fm_conf_int (copy, "listen_port"),
                      fm_conf_int (conf, "listen_port"));
    assert_int_equal (fm_conf_int (copy, "offset"), fm_conf_int (conf, "offset"));
    assert_true (fm_conf_double (copy, "threshold")
                 == fm_conf_double (conf, "threshold"));
    assert_int_equal (fm_conf_bool (copy, "drain"), fm_conf_bool (conf, "drain"));
    assert_string_equal (fm_conf_string (copy, "name"), fm_conf_string (conf, "name"));
    if (fm_conf_string (conf, "url")) {
        assert_string_equal (fm_conf_string (copy, "url"),
                             fm_conf_string (conf, "url"));
    } else {
        /* unset stays unset only on a fresh config: the dump comments it out */
        assert_string_equal (fm_conf_string (copy, "url"), "other");
        assert_non_null (strstr (buf, "\n#url =\n"));
    }
    assert_int_equal (fm_conf_enum (copy, "store"), fm_conf_enum (conf, "store"));
    assert_int_equal (fm_conf_duration (copy, "window"),
                      fm_conf_duration (conf, "window"));
    assert_int_equal (fm_conf_size (copy, "max_body"), fm_conf_size (conf, "max_body"));
    fm_conf_destroy (copy);
    free (buf);
}

static void test_dump_round_trip (void **state)
{
    struct ctx *c = *state;
    fm_error_t err;
    const char *text = "listen_port = 65535\n"
                       "offset = -9223372036854775808\n"
                       "threshold = 0.1\n"
                       "drain = yes\n"
                       "name = \"q\\\"\\\\ #x\"\n"
                       "url = \" sp\tace \"\n"
                       "store = memory\n"
                       "window = 1234567891ns\n"
                       "max_body = 1025\n";

    dump_load_compare (c->conf);
    assert_int_equal (fm_conf_load_string (c->conf, "t", text, &err), 0);
    assert_string_equal (fm_conf_string (c->conf, "url"), " sp\tace ");
    dump_load_compare (c->conf);
    assert_int_equal (fm_conf_set (c->conf, "window", "2m", &err), 0);
    assert_int_equal (fm_conf_set (c->conf, "max_body", "3M", &err), 0);
    dump_load_compare (c->conf);
    errno = 0;
    assert_int_equal (fm_conf_dump (NULL, stdout), -1);
    assert_int_equal (errno, EINVAL);
}

static void test_dump_format (void **state)
{
    struct ctx *c = *state;
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream (&buf, &len);

    assert_int_equal (fm_conf_dump (c->conf, fp), 0);
    fclose (fp);
    assert_string_equal (buf,
                         "# HTTP port\nlisten_port = 8470\n"
                         "# unbounded integer\noffset = 0\n"
                         "# score threshold\nthreshold = 0.5\n"
                         "# drain bad nodes\ndrain = no\n"
                         "# short name\nname = \"fabric\"\n"
                         "# daemon URL\n#url =\n"
                         "# storage backend\nstore = sqlite\n"
                         "# report window\nwindow = 5s\n"
                         "# body cap\nmax_body = 64k\n");
    free (buf);
}

static uint32_t rng_state = 4242;

static uint32_t rng (uint32_t n)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return (rng_state >> 8) % n;
}

/* Garbage, and near-misses of valid lines: never a crash, and a failed load
 * leaves every value as it was.
 */
static void test_random_text_atomic (void **state)
{
    struct ctx *c = *state;
    static const char *pieces[] = {
        "listen_port", "store", "name",  "window", "max_body", "drain",     "=",
        " = ",         "\"",    "\\",    "#",      "\n",       "\n",        " ",
        "\t",          "5",     "70000", "memory", "1.5s",     "64k",       "yes",
        "x",           "[",     "-",     "\xff",   "offset",   "threshold", "0.3",
    };
    char text[512];
    int loaded = 0, refused = 0;

    for (int iter = 0; iter < 5000; iter++) {
        size_t len = 0;
        size_t npieces = 1 + rng (24);
        fm_error_t err;
        int rc;

        for (size_t k = 0; k < npieces; k++) {
            const char *piece = pieces[rng (sizeof (pieces) / sizeof (pieces[0]))];
            size_t pl = strlen (piece);
            if (len + pl >= sizeof (text)) {
                break;
            }
            memcpy (text + len, piece, pl);
            len += pl;
        }
        text[len] = '\0';
        rc = fm_conf_load_string (c->conf, "r", text, &err);
        if (rc < 0) {
            refused++;
            /* the message always names the source */
            assert_memory_equal (err.text, "r:", 2);
            assert_untouched (c->conf);
        } else {
            loaded++;
            /* start the next round from the defaults again */
            fm_conf_destroy (c->conf);
            c->conf = fm_conf_create (items, &err);
            assert_non_null (c->conf);
        }
    }
    print_message ("# random texts: %d loaded, %d refused\n", loaded, refused);
    /* both outcomes were exercised */
    assert_true (loaded > 100 && refused > 100);
}

/* Run a getter misuse in a child: our bug, so it asserts (or, under NDEBUG,
 * returns the zero value instead of reading out of bounds).
 */
static void expect_getter_bug (fm_conf_t *conf, int which)
{
    pid_t pid;
    int status;

    fflush (stdout);
    fflush (stderr);
    if ((pid = fork ()) == 0) {
        int64_t v = 0;
        /* keep the expected assertion message out of the test log */
        if (!freopen ("/dev/null", "w", stderr)) {
            _exit (2);
        }
        switch (which) {
        case 0:
            v = fm_conf_int (conf, "no_such_key");
            break;
        case 1:
            v = fm_conf_int (conf, "name");
            break;
        case 2:
            v = fm_conf_string (conf, "listen_port") != NULL;
            break;
        case 3:
            v = fm_conf_bool (conf, NULL);
            break;
        }
        _exit (v == 0 ? 0 : 1);
    }
    assert_true (pid > 0);
    assert_int_equal (waitpid (pid, &status, 0), pid);
#ifdef NDEBUG
    assert_true (WIFEXITED (status));
    assert_int_equal (WEXITSTATUS (status), 0);
#else
    assert_true (WIFSIGNALED (status));
    assert_int_equal (WTERMSIG (status), SIGABRT);
#endif
}

static void test_getter_misuse (void **state)
{
    struct ctx *c = *state;

    for (int i = 0; i < 4; i++) {
        expect_getter_bug (c->conf, i);
    }
}

int main (void)
{
#define T(f) cmocka_unit_test_setup_teardown (f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T (test_defaults),
        T (test_bad_defaults),
        T (test_load_values),
        T (test_bool_spellings),
        T (test_sizes),
        T (test_load_errors),
        T (test_line_cap),
        T (test_file_cap),
        T (test_load_file),
        T (test_load_file_errors),
        T (test_nul_byte),
        T (test_dump_write_error),
        T (test_locked),
        T (test_set_errors),
        T (test_dump_round_trip),
        T (test_dump_format),
        T (test_random_text_atomic),
        T (test_getter_misuse),
    };
#undef T
    setvbuf (stdout, NULL, _IOLBF, 0);
    return cmocka_run_group_tests_name ("conf", tests, NULL, NULL);
}
