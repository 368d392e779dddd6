/* check_main.h: how a unit suite declares itself, its test cases and its tests for the one main() they share (check_main.c), and the private directory a test works in. */
#ifndef NKID_TESTS_CHECK_MAIN_H
#define NKID_TESTS_CHECK_MAIN_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <check.h>

/*
 * A suite file says what it holds, and check_main.c builds the Check suite
 * from it, in the order the file is written in:
 *
 *	CHECK_SUITE("cache", setup, teardown, NULL);
 *	CHECK_TCASE(core, 0);
 *	CHECK_TCASE(limits, 600);
 *
 *	CHECK_TEST(core, test_cache_pin_remove)
 *	{
 *		...
 *	}
 *	END_TEST
 *
 * A test is listed where it is written: none can be left out of the suite
 * (a START_TEST that no CHECK_TEST names is an unused variable: a warning).
 */

/* The suite of a test program; CHECK_SUITE defines it. */
struct check_suite {
	const char	*name;
	SFun		 setup;		/* each test's checked fixture, or NULL */
	SFun		 teardown;	/* likewise */
	/*
	 * NULL, or what the suite needs before it runs: given main()'s
	 * arguments, it returns 0 to go on or main()'s exit status.
	 */
	int		(*begin)(int, char **);
};

/* A test case (core, limits, errors, recovery, ...); CHECK_TCASE makes one. */
struct check_tcase {
	const char	*name;
	double		 timeout;	/* seconds; 0 keeps Check's default */
	int		 line;		/* where declared: the order they run in */
};

/* A test of a test case; CHECK_TEST makes one. */
struct check_test {
	const struct check_tcase *tcase;
	const TTest	**test;		/* what START_TEST defines */
	int		 line;		/* where written: the order they run in */
};

/*
 * Name the suite of this program, the checked fixture of its tests (setup
 * and teardown, both NULL for none) and its begin function (or NULL).
 */
#define CHECK_SUITE(name, setup, teardown, begin)			\
	const struct check_suite check_suite = {			\
	    (name), (setup), (teardown), (begin) }

/*
 * Declare test case tc of this suite and its timeout in seconds (0 keeps
 * Check's default).  Test cases run in the order they are declared in;
 * CHECK_TCASE_NAMED gives one a name that is not an identifier.
 */
#define CHECK_TCASE(tc, timeout)					\
	CHECK_TCASE_NAMED(tc, #tc, timeout)
#define CHECK_TCASE_NAMED(tc, name, timeout)				\
	static const struct check_tcase check_tcase_ ## tc = {		\
	    (name), (timeout), __LINE__ };				\
	static const struct check_tcase *const check_tcase_ ## tc ## _entry \
	    __attribute__((__used__, __section__("check_tcases"))) =	\
	    &check_tcase_ ## tc

/*
 * Start test fn of test case tc (declared above it by CHECK_TCASE): it
 * stands for START_TEST(fn) and lists the test in the suite.  The tests
 * of a test case run in the order they are written in.
 */
#define CHECK_TEST(tc, fn)						\
	static const TTest *fn;						\
	static const struct check_test fn ## _check = {			\
	    &check_tcase_ ## tc, &fn, __LINE__ };			\
	static const struct check_test *const fn ## _check_entry	\
	    __attribute__((__used__, __section__("check_tests"))) =	\
	    &fn ## _check;						\
	START_TEST(fn)

/* Seconds on the monotonic clock: to time what a test does. */
static inline double
check_now_s(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
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

/*
 * A fixture for a suite whose tests each want a fresh private directory and
 * nothing more: check_dir_setup() makes /tmp/check_<suite>.XXXXXX, its path
 * in check_dir; check_dir_teardown() removes it and all it holds.
 */
extern char	check_dir[64];

void	check_dir_setup(void);
void	check_dir_teardown(void);

#endif /* NKID_TESTS_CHECK_MAIN_H */
