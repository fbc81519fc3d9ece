/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hostlist.h"

/* Join the expansion with spaces, to compare against one expected string. */
static char *joined (const fm_hostlist_t *hl)
{
    static char buf[8192];
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < fm_hostlist_count (hl); i++) {
        used += (size_t)snprintf (buf + used,
                                  sizeof (buf) - used,
                                  "%s%s",
                                  i ? " " : "",
                                  fm_hostlist_nth (hl, i));
    }
    return buf;
}

static const struct {
    const char *expr;
    const char *hosts;
} expand_ok[] = {
    {"", ""},
    {"fmn1", "fmn1"},
    {"node", "node"},
    {"n[1-3]", "n1 n2 n3"},
    {"n[08-11]", "n08 n09 n10 n11"},
    {"n[001-003]", "n001 n002 n003"},
    {"n[8-11]", "n8 n9 n10 n11"},
    {"n[01-100]", NULL}, /* checked separately: 100 names */
    {"n[5]", "n5"},
    {"n[05]", "n05"},
    {"n[1-2,5,07-08]", "n1 n2 n5 n07 n08"},
    {"fmn[1-4]", "fmn1 fmn2 fmn3 fmn4"},
    {"node[01-04,07]", "node01 node02 node03 node04 node07"},
    {"rack[1-2]-gpu[01-02]", "rack1-gpu01 rack1-gpu02 rack2-gpu01 rack2-gpu02"},
    {"a[1-2]b[1-2]c[1-2]", "a1b1c1 a1b1c2 a1b2c1 a1b2c2 a2b1c1 a2b1c2 a2b2c1 a2b2c2"},
    {"a,b[1-2],c", "a b1 b2 c"},
    {"x[1,2],y[3,4]", "x1 x2 y3 y4"},
    {"n1,n1,n[1-2]", "n1 n1 n1 n2"},
    {"[1-3]", "1 2 3"},
    {"[1-2]x", "1x 2x"},
    {"n[3-3]", "n3"},
    {"n[0-1]", "n0 n1"},
    {"a.b-c_d[1-2].e", "a.b-c_d1.e a.b-c_d2.e"},
};

static void test_expand_vectors (void **state)
{
    for (size_t i = 0; i < sizeof (expand_ok) / sizeof (expand_ok[0]); i++) {
        fm_error_t err = {""};
        fm_hostlist_t *hl = fm_hostlist_expand (expand_ok[i].expr, 0, &err);

        if (!hl) {
            fail_msg ("'%s' rejected: %s", expand_ok[i].expr, err.text);
        }
        if (expand_ok[i].hosts && strcmp (joined (hl), expand_ok[i].hosts) != 0) {
            fail_msg ("'%s' gave '%s', want '%s'",
                      expand_ok[i].expr,
                      joined (hl),
                      expand_ok[i].hosts);
        }
        fm_hostlist_destroy (hl);
    }
}

static void test_expand_width_grows (void **state)
{
    fm_hostlist_t *hl = fm_hostlist_expand ("n[01-100]", 0, NULL);

    assert_non_null (hl);
    assert_int_equal (fm_hostlist_count (hl), 100);
    assert_string_equal (fm_hostlist_nth (hl, 0), "n01");
    assert_string_equal (fm_hostlist_nth (hl, 98), "n99");
    assert_string_equal (fm_hostlist_nth (hl, 99), "n100");
    fm_hostlist_destroy (hl);
}

static const struct {
    const char *expr;
    const char *msg;
} expand_bad[] = {
    {"n[1-3", "unbalanced '[' at position 2"},
    {"n[", "unbalanced '[' at position 2"},
    {"n[1-", "unbalanced '[' at position 2"},
    {"n[1,", "unbalanced '[' at position 2"},
    {"n[1,2", "unbalanced '[' at position 2"},
    {"n1-3]", "unbalanced ']' at position 5"},
    {"n]", "unbalanced ']' at position 2"},
    {"n[5-3]", "reversed range 5-3 at position 3"},
    {"a,n[1,09-08]", "reversed range 9-8 at position 7"},
    {"n[]", "empty range at position 3"},
    {"n[1,]", "empty range at position 5"},
    {"n[,1]", "empty range at position 3"},
    {"n[1-]", "empty range at position 5"},
    {"n[-1]", "empty range at position 3"},
    {"n[a-3]", "non-digit 'a' in range at position 3"},
    {"n[1-x]", "non-digit 'x' in range at position 5"},
    {"n[1x]", "non-digit 'x' in range at position 4"},
    {"n[1 ]", "non-digit 0x20 in range at position 4"},
    {"n[\x01]", "non-digit 0x01 in range at position 3"},
    {"n[\xc3\xa9]", "non-digit 0xc3 in range at position 3"},
    {"n[1-[2]]", "non-digit '[' in range at position 5"},
    {"n[1[2]]", "nested '[' at position 4"},
    {"a,,b", "empty host name at position 3"},
    {",a", "empty host name at position 1"},
    {"a,", "empty host name at position 3"},
    {"a b", "invalid character at position 2"},
    {"a\tb", "invalid character at position 2"},
    {"n[1234567890123456789]", "number too long at position 21"},
};

static void test_expand_errors (void **state)
{
    for (size_t i = 0; i < sizeof (expand_bad) / sizeof (expand_bad[0]); i++) {
        fm_error_t err = {""};

        errno = 0;
        if (fm_hostlist_expand (expand_bad[i].expr, 0, &err) != NULL) {
            fail_msg ("'%s' accepted", expand_bad[i].expr);
        }
        assert_int_equal (errno, EINVAL);
        if (strcmp (err.text, expand_bad[i].msg) != 0) {
            fail_msg ("'%s': got '%s', want '%s'",
                      expand_bad[i].expr,
                      err.text,
                      expand_bad[i].msg);
        }
        /* NULL err is allowed */
        assert_null (fm_hostlist_expand (expand_bad[i].expr, 0, NULL));
    }
    errno = 0;
    assert_null (fm_hostlist_expand (NULL, 0, NULL));
    assert_int_equal (errno, EINVAL);
}

static void test_expand_cap (void **state)
{
    fm_error_t err;
    fm_hostlist_t *hl;

    /* exactly at the cap is fine, one more is refused */
    hl = fm_hostlist_expand ("n[1-10]", 10, &err);
    assert_non_null (hl);
    assert_int_equal (fm_hostlist_count (hl), 10);
    fm_hostlist_destroy (hl);
    errno = 0;
    assert_null (fm_hostlist_expand ("n[1-11]", 10, &err));
    assert_int_equal (errno, EINVAL);
    assert_string_equal (err.text, "more than 10 hosts");
    /* across items and through the cartesian product */
    assert_null (fm_hostlist_expand ("a[1-5],b[1-6]", 10, &err));
    assert_string_equal (err.text, "more than 10 hosts");
    assert_null (fm_hostlist_expand ("a[1-4]b[1-3]", 10, &err));
    assert_string_equal (err.text, "more than 10 hosts");
    /* the default cap (1 << 20) refuses a huge range before allocating it */
    assert_null (fm_hostlist_expand ("n[0-999999999999]", 0, &err));
    assert_string_equal (err.text, "more than 1048576 hosts");
    assert_null (fm_hostlist_expand ("a[0-1023]b[0-1024]", 0, &err));
    assert_string_equal (err.text, "more than 1048576 hosts");
}

static void test_expand_long_name (void **state)
{
    char expr[300];
    fm_error_t err;
    fm_hostlist_t *hl;

    memset (expr, 'h', 254);
    strcpy (expr + 254, "[1-2]");
    /* 255 characters is the longest name */
    hl = fm_hostlist_expand (expr, 0, &err);
    assert_non_null (hl);
    assert_int_equal (strlen (fm_hostlist_nth (hl, 0)), 255);
    fm_hostlist_destroy (hl);
    strcpy (expr + 254, "[10-11]");
    errno = 0;
    assert_null (fm_hostlist_expand (expr, 0, &err));
    assert_int_equal (errno, EINVAL);
    assert_string_equal (err.text, "host name longer than 255 characters");
}

static void test_find_nth (void **state)
{
    fm_hostlist_t *hl = fm_hostlist_expand ("b,a[1-3],b", 0, NULL);

    assert_non_null (hl);
    assert_int_equal (fm_hostlist_count (hl), 5);
    assert_int_equal (fm_hostlist_find (hl, "b"), 0);
    assert_int_equal (fm_hostlist_find (hl, "a2"), 2);
    assert_int_equal (fm_hostlist_find (hl, "a4"), -1);
    assert_int_equal (fm_hostlist_find (hl, "a"), -1);
    assert_int_equal (fm_hostlist_find (hl, NULL), -1);
    assert_string_equal (fm_hostlist_nth (hl, 4), "b");
    assert_null (fm_hostlist_nth (hl, 5));
    assert_null (fm_hostlist_nth (hl, (size_t)-1));
    fm_hostlist_destroy (hl);
    assert_int_equal (fm_hostlist_count (NULL), 0);
    assert_null (fm_hostlist_nth (NULL, 0));
    assert_int_equal (fm_hostlist_find (NULL, "a"), -1);
    fm_hostlist_destroy (NULL);
}

static const struct {
    const char *hosts; /* space-separated input */
    const char *expr;
} compress_vectors[] = {
    {"fmn1 fmn2 fmn3 fmn7", "fmn[1-3,7]"},
    {"n08 n09 n10 n11", "n[08-11]"},
    {"n8 n9 n10 n11", "n[8-11]"},
    {"n001 n002 n003", "n[001-003]"},
    {"n9 n010", "n[9,010]"},
    {"n09 n10", "n[09-10]"},
    {"n1", "n1"},
    {"n01", "n01"},
    {"login", "login"},
    {"login n1 n2 gw", "login,n[1-2],gw"},
    {"n1 n1", "n[1,1]"},
    {"n3 n2 n1", "n[3,2,1]"},
    {"a1 b1 a2", "a1,b1,a2"},
    {"rack1-gpu01 rack1-gpu02 rack2-gpu01", "rack1-gpu[01-02],rack2-gpu01"},
    {"1 2 3", "[1-3]"},
    {"x1y x2y", "x1y,x2y"},
    {"n1 n2 m3 m4", "n[1-2],m[3-4]"},
    {"n1234567890123456789 n1234567890123456790",
     "n1234567890123456789,n1234567890123456790"},
};

static size_t split (const char *s, char *buf, size_t len, const char **v, size_t max)
{
    size_t n = 0;

    snprintf (buf, len, "%s", s);
    for (char *tok = strtok (buf, " "); tok && n < max; tok = strtok (NULL, " ")) {
        v[n++] = tok;
    }
    return n;
}

static void test_compress_vectors (void **state)
{
    for (size_t i = 0; i < sizeof (compress_vectors) / sizeof (compress_vectors[0]);
         i++) {
        char buf[512];
        const char *v[32];
        size_t n = split (compress_vectors[i].hosts, buf, sizeof (buf), v, 32);
        char *expr = fm_hostlist_compress (v, n);
        fm_hostlist_t *hl;

        assert_non_null (expr);
        if (strcmp (expr, compress_vectors[i].expr) != 0) {
            fail_msg ("'%s' compressed to '%s', want '%s'",
                      compress_vectors[i].hosts,
                      expr,
                      compress_vectors[i].expr);
        }
        /* round trip: the expression expands to the same list */
        hl = fm_hostlist_expand (expr, 0, NULL);
        assert_non_null (hl);
        assert_string_equal (joined (hl), compress_vectors[i].hosts);
        fm_hostlist_destroy (hl);
        free (expr);
    }
}

static void test_round_trip_expand_compress (void **state)
{
    const char *exprs[] = {
        "n[08-11]",
        "rack[1-2]-gpu[01-02]",
        "a,b[1-2],c",
        "n[1-3,5,07-09,100]",
        "n[1-1000]",
        "n[0-2],m,n[3-4]",
        "n[001-003]",
        "x[9-12]y",
    };

    for (size_t i = 0; i < sizeof (exprs) / sizeof (exprs[0]); i++) {
        fm_hostlist_t *hl = fm_hostlist_expand (exprs[i], 0, NULL);
        size_t n = fm_hostlist_count (hl);
        const char **v = calloc (n + 1, sizeof (*v));
        char *expr;
        fm_hostlist_t *hl2;

        assert_non_null (hl);
        assert_non_null (v);
        for (size_t k = 0; k < n; k++) {
            v[k] = fm_hostlist_nth (hl, k);
        }
        expr = fm_hostlist_compress (v, n);
        assert_non_null (expr);
        hl2 = fm_hostlist_expand (expr, 0, NULL);
        assert_non_null (hl2);
        assert_int_equal (fm_hostlist_count (hl2), n);
        for (size_t k = 0; k < n; k++) {
            assert_string_equal (fm_hostlist_nth (hl2, k), v[k]);
        }
        fm_hostlist_destroy (hl2);
        fm_hostlist_destroy (hl);
        free (expr);
        free (v);
    }
}

static void test_compress_compact (void **state)
{
    fm_hostlist_t *hl = fm_hostlist_expand ("n[1-1000]", 0, NULL);
    const char **v = calloc (1000, sizeof (*v));
    char *expr;

    assert_non_null (hl);
    assert_non_null (v);
    for (size_t k = 0; k < 1000; k++) {
        v[k] = fm_hostlist_nth (hl, k);
    }
    expr = fm_hostlist_compress (v, 1000);
    assert_string_equal (expr, "n[1-1000]");
    free (expr);
    free (v);
    fm_hostlist_destroy (hl);
}

/* Deterministic pseudo-random lists (own generator: same sequence on every libc). */
static uint32_t rng_state = 12345;

static uint32_t rng (uint32_t n)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return (rng_state >> 8) % n;
}

static void test_round_trip_random (void **state)
{
    static const char *prefixes[] = {"n", "rack1-n", "gpu", "x.y", ""};
    char names[64][32];
    const char *v[64];

    for (int iter = 0; iter < 2000; iter++) {
        size_t n = 1 + rng (64);
        char *expr;
        fm_hostlist_t *hl;
        fm_error_t err;

        for (size_t k = 0; k < n; k++) {
            const char *prefix = prefixes[rng (5)];
            int width = 1 + (int)rng (4);
            unsigned num = rng (3) == 0 ? rng (1200) : (unsigned)(k + rng (3));
            if (prefix[0] && rng (10) == 0) {
                snprintf (names[k], sizeof (names[k]), "%s", prefix); /* no number */
            } else {
                snprintf (names[k], sizeof (names[k]), "%s%0*u", prefix, width, num);
            }
            v[k] = names[k];
        }
        expr = fm_hostlist_compress (v, n);
        assert_non_null (expr);
        hl = fm_hostlist_expand (expr, 0, &err);
        if (!hl) {
            fail_msg ("'%s' does not expand: %s", expr, err.text);
        }
        assert_int_equal (fm_hostlist_count (hl), n);
        for (size_t k = 0; k < n; k++) {
            if (strcmp (fm_hostlist_nth (hl, k), v[k]) != 0) {
                fail_msg ("'%s'[%zu] is '%s', want '%s'",
                          expr,
                          k,
                          fm_hostlist_nth (hl, k),
                          v[k]);
            }
        }
        fm_hostlist_destroy (hl);
        free (expr);
    }
}

static void test_compress_errors (void **state)
{
    const char *bad[][1] = {{"a,b"}, {"a[1]"}, {"a]"}, {""}, {"a b"}, {NULL}};
    char *expr;

    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        errno = 0;
        assert_null (fm_hostlist_compress (bad[i], 1));
        assert_int_equal (errno, EINVAL);
    }
    errno = 0;
    assert_null (fm_hostlist_compress (NULL, 1));
    assert_int_equal (errno, EINVAL);
    expr = fm_hostlist_compress (NULL, 0);
    assert_non_null (expr);
    assert_string_equal (expr, "");
    free (expr);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_expand_vectors),
        cmocka_unit_test (test_expand_width_grows),
        cmocka_unit_test (test_expand_errors),
        cmocka_unit_test (test_expand_cap),
        cmocka_unit_test (test_expand_long_name),
        cmocka_unit_test (test_find_nth),
        cmocka_unit_test (test_compress_vectors),
        cmocka_unit_test (test_round_trip_expand_compress),
        cmocka_unit_test (test_compress_compact),
        cmocka_unit_test (test_round_trip_random),
        cmocka_unit_test (test_compress_errors),
    };
    setvbuf (stdout, NULL, _IOLBF, 0);
    return cmocka_run_group_tests_name ("hostlist", tests, NULL, NULL);
}
