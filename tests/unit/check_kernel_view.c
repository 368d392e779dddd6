/* check_kernel_view.c: whose cache entries a call sees (access.cache_visibility) and the kernels a uid proved it holds (kernel_view.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "cache/cache.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kernel.h"
#include "daemon/rpc_cache.h"
#include "tests/unit/check_main.h"

CHECK_SUITE("kernel_view", NULL, NULL, NULL);
CHECK_TCASE(core, 0);
CHECK_TCASE(limits, 60);

static void
view_key(unsigned i, char *key)
{
	char	s[32];

	snprintf(s, sizeof s, "view-%u", i);
	cache_digest_hex(s, strlen(s), key);
}

static void
view_daemon(struct daemon *d, const char *visibility)
{
	char	json[128], err[256];

	memset(d, 0, sizeof *d);
	snprintf(json, sizeof json, "{\"access\": {\"cache_visibility\": "
	    "\"%s\"}}", visibility);
	ck_assert_msg(config_load_string(&d->cfg, "t", json, strlen(json),
	    NULL, err, sizeof err) == 0, "%s", err);
}

/* Shared: everyone sees all; owner: an administrator all, anyone else
 * its uid's; a reload to shared shows all again at the next call. */
CHECK_TEST(core, test_kernel_viewer_by_mode_and_admin)
{
	struct daemon	d;
	struct rpc_call	c;

	view_daemon(&d, "shared");
	memset(&c, 0, sizeof c);
	c.d = &d;
	c.id.uid = 1000;
	ck_assert_int_eq(kernel_viewer(&c), CACHE_VIEW_ALL);
	config_release(&d.cfg);

	view_daemon(&d, "owner");
	ck_assert_int_eq(kernel_viewer(&c), 1000);
	c.id.uid = 0;
	ck_assert_int_eq(kernel_viewer(&c), 0);
	c.id.admin = 1;
	ck_assert_int_eq(kernel_viewer(&c), CACHE_VIEW_ALL);
	config_release(&d.cfg);
}
END_TEST

/* A grant is a uid's and a key's; what is not a key is never granted;
 * clearing forgets them all. */
CHECK_TEST(core, test_kernel_grants)
{
	struct daemon	d;
	char		k1[CACHE_KEY_LEN + 1], k2[CACHE_KEY_LEN + 1];

	view_daemon(&d, "owner");
	view_key(1, k1);
	view_key(2, k2);
	ck_assert(!kernel_granted(&d, 1000, k1));
	kernel_grant(&d, 1000, k1);
	kernel_grant(&d, 1000, k1);
	ck_assert(kernel_granted(&d, 1000, k1));
	ck_assert(!kernel_granted(&d, 1001, k1));
	ck_assert(!kernel_granted(&d, 1000, k2));
	kernel_grant(&d, 1000, "not a key");
	ck_assert(!kernel_granted(&d, 1000, "not a key"));
	kernel_grant(&d, 1000, NULL);
	kernel_grants_clear(&d);
	ck_assert(!kernel_granted(&d, 1000, k1));
	kernel_grants_free(d.grants);
	config_release(&d.cfg);
}
END_TEST

/* The table is bounded: past its bound it starts again from empty (a
 * later request proves a key again), never grows without end. */
CHECK_TEST(limits, test_kernel_grants_bounded)
{
	struct daemon	d;
	char		k[CACHE_KEY_LEN + 1], first[CACHE_KEY_LEN + 1];
	unsigned	i, n = 0;

	view_daemon(&d, "owner");
	view_key(0, first);
	for (i = 0; i < 70000; i++) {
		view_key(i, k);
		kernel_grant(&d, 7, k);
	}
	/* The first went with the clearing at 65,536; the last are in. */
	ck_assert(!kernel_granted(&d, 7, first));
	ck_assert(kernel_granted(&d, 7, k));
	for (i = 0; i < 70000; i++) {
		view_key(i, k);
		n += kernel_granted(&d, 7, k);
	}
	ck_assert_uint_eq(n, 70000 - 65536);
	kernel_grants_free(d.grants);
	config_release(&d.cfg);
}
END_TEST
