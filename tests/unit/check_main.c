/* check_main.c: the main() of every unit suite: it builds the Check suite from what the suite's file declares (check_main.h), runs it, and exits non-zero if a test failed. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include <check.h>

#include "tests/unit/check_main.h"

/*
 * The suite file's declarations: CHECK_SUITE, and the sections CHECK_TCASE
 * and CHECK_TEST fill (the linker defines their bounds).
 */
extern const struct check_suite		 check_suite;
extern const struct check_tcase *const	 __start_check_tcases[];
extern const struct check_tcase *const	 __stop_check_tcases[];
extern const struct check_test *const	 __start_check_tests[];
extern const struct check_test *const	 __stop_check_tests[];

char	check_dir[64];

void
check_dir_setup(void)
{
	char	name[40];

	snprintf(name, sizeof name, "check_%s", check_suite.name);
	check_dir_make(check_dir, sizeof check_dir, name);
}

void
check_dir_teardown(void)
{
	check_dir_remove(check_dir);
}

static int
check_main_tcase_cmp(const void *a, const void *b)
{
	const struct check_tcase *const	*x = a, *const *y = b;

	return ((*x)->line - (*y)->line);
}

static int
check_main_test_cmp(const void *a, const void *b)
{
	const struct check_test *const	*x = a, *const *y = b;

	return ((*x)->line - (*y)->line);
}

/*
 * Build the suite: its test cases in the order they are declared in, each
 * with the tests written for it in the order they are written in; NULL if
 * memory runs out.
 */
static Suite *
check_main_suite(void)
{
	size_t			   ntc = __stop_check_tcases - __start_check_tcases;
	size_t			   nt = __stop_check_tests - __start_check_tests;
	const struct check_tcase **tcs;
	const struct check_test	 **ts;
	TCase			 **made;
	Suite			  *s = NULL;
	size_t			   i, j;

	tcs = calloc(ntc, sizeof *tcs);
	ts = calloc(nt, sizeof *ts);
	made = calloc(ntc, sizeof *made);
	if (tcs == NULL || ts == NULL || made == NULL)
		goto out;
	for (i = 0; i < ntc; i++)
		tcs[i] = __start_check_tcases[i];
	for (i = 0; i < nt; i++)
		ts[i] = __start_check_tests[i];
	qsort(tcs, ntc, sizeof *tcs, check_main_tcase_cmp);
	qsort(ts, nt, sizeof *ts, check_main_test_cmp);

	s = suite_create(check_suite.name);
	for (i = 0; i < ntc; i++) {
		made[i] = tcase_create(tcs[i]->name);
		if (check_suite.setup != NULL || check_suite.teardown != NULL)
			tcase_add_checked_fixture(made[i], check_suite.setup,
			    check_suite.teardown);
		if (tcs[i]->timeout > 0)
			tcase_set_timeout(made[i], tcs[i]->timeout);
		suite_add_tcase(s, made[i]);
	}
	for (i = 0; i < nt; i++) {
		for (j = 0; j < ntc && tcs[j] != ts[i]->tcase; j++)
			continue;
		assert(j < ntc);
		tcase_add_test(made[j], *ts[i]->test);
	}
out:
	free(made);
	free(ts);
	free(tcs);
	return (s);
}

int
main(int argc, char **argv)
{
	SRunner	*sr;
	Suite	*s;
	int	 failed;

	if (check_suite.begin != NULL && (failed = check_suite.begin(argc,
	    argv)) != 0)
		return (failed);
	if ((s = check_main_suite()) == NULL) {
		fprintf(stderr, "%s: cannot build the suite\n",
		    check_suite.name);
		return (EXIT_FAILURE);
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}
