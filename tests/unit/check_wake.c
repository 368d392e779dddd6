/* check_wake.c: waking the loop from other threads (daemon/wake.c). */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include <uv.h>

#include "daemon/wake.h"
#include "tests/unit/check_main.h"

CHECK_SUITE("wake", NULL, NULL, NULL);
CHECK_TCASE(core, 30);

enum { SENDERS = 4, PER_SENDER = 20000 };

struct wake_test {
	uv_loop_t	 loop;
	struct wake	 w;
	pthread_mutex_t	 mu;
	unsigned	 queued;	/* under mu: sent, not yet taken */
	unsigned	 taken;		/* by the loop */
	unsigned	 calls;		/* of the callback */
	int		 closed;	/* wake_close's callbacks */
};

/* Take what was sent. */
static void
wake_test_cb(void *arg)
{
	struct wake_test	*t = arg;

	t->calls++;
	pthread_mutex_lock(&t->mu);
	t->taken += t->queued;
	t->queued = 0;
	pthread_mutex_unlock(&t->mu);
}

static void
wake_test_closed(void *arg)
{
	struct wake_test	*t = arg;

	t->closed++;
}

static void *
wake_test_sender(void *arg)
{
	struct wake_test	*t = arg;
	unsigned		 i;

	for (i = 0; i < PER_SENDER; i++) {
		pthread_mutex_lock(&t->mu);
		t->queued++;
		pthread_mutex_unlock(&t->mu);
		wake_send(&t->w);
	}
	return (NULL);
}

/* Every send is seen: the loop, woken only by the sends, takes all of
 * four threads' sends, in fewer callbacks than sends (coalesced); closed,
 * it leaves nothing open. */
CHECK_TEST(core, test_wake_every_send_is_seen)
{
	struct wake_test	t = { 0 };
	pthread_t		th[SENDERS];
	int			i;

	ck_assert_int_eq(uv_loop_init(&t.loop), 0);
	pthread_mutex_init(&t.mu, NULL);
	ck_assert_int_eq(wake_init(&t.w, &t.loop, wake_test_cb, &t), 0);
	for (i = 0; i < SENDERS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL,
		    wake_test_sender, &t), 0);
	while (t.taken < SENDERS * PER_SENDER)
		uv_run(&t.loop, UV_RUN_ONCE);	/* blocks until a send */
	for (i = 0; i < SENDERS; i++)
		pthread_join(th[i], NULL);
	ck_assert_uint_eq(t.taken, SENDERS * PER_SENDER);
	ck_assert_uint_ge(t.calls, 1);
	ck_assert_uint_lt(t.calls, SENDERS * PER_SENDER);
	wake_close(&t.w, wake_test_closed);
	ck_assert_int_eq(uv_run(&t.loop, UV_RUN_DEFAULT), 0);
	ck_assert_int_eq(t.closed, 1);
	ck_assert_int_eq(t.w.fd, -1);
	ck_assert_int_eq(uv_loop_close(&t.loop), 0);
	pthread_mutex_destroy(&t.mu);
}
END_TEST

static void
wake_test_count(void *arg)
{
	struct wake_test	*t = arg;

	t->calls++;
}

/* A send before the loop runs calls back once; many sends before it,
 * once; none, never; wake_close calls its callback with the argument. */
CHECK_TEST(core, test_wake_coalesces_and_closes)
{
	struct wake_test	t = { 0 };
	int			i;

	ck_assert_int_eq(uv_loop_init(&t.loop), 0);
	ck_assert_int_eq(wake_init(&t.w, &t.loop, wake_test_count, &t), 0);
	uv_run(&t.loop, UV_RUN_NOWAIT);
	ck_assert_uint_eq(t.calls, 0);
	wake_send(&t.w);
	uv_run(&t.loop, UV_RUN_NOWAIT);
	ck_assert_uint_eq(t.calls, 1);
	for (i = 0; i < 100; i++)
		wake_send(&t.w);
	uv_run(&t.loop, UV_RUN_NOWAIT);
	ck_assert_uint_eq(t.calls, 2);
	uv_run(&t.loop, UV_RUN_NOWAIT);
	ck_assert_uint_eq(t.calls, 2);
	wake_close(&t.w, wake_test_closed);
	ck_assert_int_eq(uv_run(&t.loop, UV_RUN_DEFAULT), 0);
	ck_assert_int_eq(t.closed, 1);
	ck_assert_int_eq(t.w.fd, -1);
	ck_assert_int_eq(uv_loop_close(&t.loop), 0);
}
END_TEST
