/* check_outpool.c: the pool of warm output buffers. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/outpool.h"
#include "tests/unit/check_main.h"

CHECK_SUITE("outpool", NULL, NULL, NULL);
CHECK_TCASE(core, 0);
CHECK_TCASE(limits, 0);

CHECK_TEST(core, test_outpool_reuses_a_fitting_buffer)
{
	void	*a, *b, *c;

	a = outpool_get(8u << 20);
	ck_assert_ptr_nonnull(a);
	memset(a, 0x5a, 8u << 20);		/* writable, all of it */
	outpool_put(a, 8u << 20);
	b = outpool_get(7u << 20);		/* fits, wastes < half */
	ck_assert_ptr_eq(b, a);
	ck_assert_int_eq(((uint8_t *)b)[100], 0x5a);	/* the same pages */
	outpool_put(b, 7u << 20);
	c = outpool_get(1u << 20);		/* would waste > half: new */
	ck_assert_ptr_ne(c, a);
	outpool_put(c, 1u << 20);
	outpool_drain();
}
END_TEST

CHECK_TEST(limits, test_outpool_keeps_at_most_its_limits)
{
	void	*p[OUTPOOL_KEEP + 2], *q;
	int	 i;

	for (i = 0; i < OUTPOOL_KEEP + 2; i++)
		ck_assert_ptr_nonnull(p[i] = outpool_get(2u << 20));
	for (i = 0; i < OUTPOOL_KEEP + 2; i++)
		outpool_put(p[i], 2u << 20);
	/* Only OUTPOOL_KEEP were kept: taking them all, the next is new. */
	for (i = 0; i < OUTPOOL_KEEP; i++)
		p[i] = outpool_get(2u << 20);
	q = outpool_get(2u << 20);
	for (i = 0; i < OUTPOOL_KEEP; i++)
		ck_assert_ptr_ne(q, p[i]);
	outpool_put(q, 2u << 20);
	for (i = 0; i < OUTPOOL_KEEP; i++)
		outpool_put(p[i], 2u << 20);
	outpool_drain();
	/* Larger than the byte budget: never kept. */
	q = outpool_get(OUTPOOL_KEEP_BYTES + (4u << 20));
	ck_assert_ptr_nonnull(q);
	outpool_put(q, OUTPOOL_KEEP_BYTES + (4u << 20));
	p[0] = outpool_get(OUTPOOL_KEEP_BYTES + (4u << 20));
	outpool_put(p[0], OUTPOOL_KEEP_BYTES + (4u << 20));
	outpool_drain();
}
END_TEST
