/* check_main.h: what every unit suite's main() does (build the suite from its test cases, run it, exit non-zero if a test failed) and the private directory a test works in. */
#ifndef NKID_TESTS_CHECK_MAIN_H
#define NKID_TESTS_CHECK_MAIN_H

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <check.h>

/*
 * Add to suite s a test case named name (core, limits, errors, recovery, ...)
 * with the checked fixture setup and teardown (both NULL for none), a timeout
 * in seconds (0 keeps check's default) and the tests that follow, up to a
 * NULL.  The test case is owned by s; it is returned for further settings.
 */
static inline TCase * __attribute__((__sentinel__))
check_tcase_add(Suite *s, const char *name, SFun setup, SFun teardown,
    double timeout, ...)
{
	TCase		*tc = tcase_create(name);
	const TTest	*t;
	va_list		 ap;

	if (setup != NULL || teardown != NULL)
		tcase_add_checked_fixture(tc, setup, teardown);
	if (timeout > 0)
		tcase_set_timeout(tc, timeout);
	va_start(ap, timeout);
	while ((t = va_arg(ap, const TTest *)) != NULL)
		tcase_add_test(tc, t);
	va_end(ap);
	suite_add_tcase(s, tc);
	return (tc);
}

/*
 * Make a fresh private directory /tmp/<name>.XXXXXX for a test, its path in
 * dir (len bytes); check_dir_remove() removes it and all it holds.
 */
static inline void
check_dir_make(char *dir, size_t len, const char *name)
{
	snprintf(dir, len, "/tmp/%s.XXXXXX", name);
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static inline void
check_dir_remove(const char *dir)
{
	char	cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Run suite s (owned: freed here) and return main()'s exit status. */
static inline int
check_main(Suite *s)
{
	SRunner	*sr = srunner_create(s);
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}

#endif /* NKID_TESTS_CHECK_MAIN_H */
