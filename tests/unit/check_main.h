/* check_main.h: what every unit suite's main() does: run the suite, exit non-zero if a test failed. */
#ifndef NKID_TESTS_CHECK_MAIN_H
#define NKID_TESTS_CHECK_MAIN_H

#include <stdlib.h>

#include <check.h>

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
