/* check_access.c: the access policy on SO_PEERCRED credentials. */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "daemon/access.h"
#include "daemon/config.h"
#include "tests/unit/check_main.h"

#define SELF	1000
#define SOCKGID	500

static struct config	cfg;
static char		why[256];

static void
setup(void)
{
	const char	*j = "{\"access\": {\"allow_uids\": [2000], "
			    "\"allow_gids\": [600], "
			    "\"max_connections_per_uid\": 2}}";
	char		 err[256];

	ck_assert_int_eq(config_load_string(&cfg, "t", j, strlen(j), NULL, err,
	    sizeof err), 0);
}

static void
teardown(void)
{
	config_release(&cfg);
}

CHECK_SUITE("access", setup, teardown, NULL);
CHECK_TCASE(core, 0);
CHECK_TCASE(limits, 0);
CHECK_TCASE(errors, 0);

static int
check(uint32_t uid, uint32_t gid, const gid_t *groups, size_t n,
    unsigned conns)
{
	struct access_peer	p = { uid, gid, 99, groups, n };

	why[0] = '\0';
	return (access_peer_check(&cfg, SELF, SOCKGID, &p, conns, why,
	    sizeof why));
}

CHECK_TEST(core, test_access_default_allowed)
{
	ck_assert_int_eq(check(0, 0, NULL, 0, 0), ACCESS_ALLOW);
	ck_assert_int_eq(check(SELF, 7, NULL, 0, 0), ACCESS_ALLOW);
	ck_assert_int_eq(check(3000, SOCKGID, NULL, 0, 0), ACCESS_ALLOW);
}
END_TEST

CHECK_TEST(core, test_access_config_allowed)
{
	gid_t	groups[2] = { 10, 600 };

	ck_assert_int_eq(check(2000, 7, NULL, 0, 0), ACCESS_ALLOW);
	ck_assert_int_eq(check(3000, 600, NULL, 0, 0), ACCESS_ALLOW);
	/* Supplementary groups count (SO_PEERGROUPS). */
	ck_assert_int_eq(check(3000, 7, groups, 2, 0), ACCESS_ALLOW);
	groups[1] = SOCKGID;
	ck_assert_int_eq(check(3000, 7, groups, 2, 0), ACCESS_ALLOW);
}
END_TEST

CHECK_TEST(limits, test_access_cap_per_uid)
{
	ck_assert_int_eq(check(2000, 7, NULL, 0, 1), ACCESS_ALLOW);
	ck_assert_int_eq(check(2000, 7, NULL, 0, 2), ACCESS_ECAP);
	ck_assert_ptr_nonnull(strstr(why, "uid 2000 already has 2 connections"));
	/* The cap holds for root too. */
	ck_assert_int_eq(check(0, 0, NULL, 0, 2), ACCESS_ECAP);
}
END_TEST

CHECK_TEST(errors, test_access_nobody_refused)
{
	gid_t	groups[1] = { 65534 };

	ck_assert_int_eq(check(65534, 65534, groups, 1, 0), ACCESS_EPOLICY);
	ck_assert_ptr_nonnull(strstr(why, "uid 65534 (gid 65534) is not "
	    "allowed"));
}
END_TEST
