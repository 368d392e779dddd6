/* wake.c: wake the loop from another thread with an eventfd the loop polls; see wake.h. */
#include <sys/eventfd.h>

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "daemon/wake.h"

static void
wake_poll_cb(uv_poll_t *p, int status, int events)
{
	struct wake	*w = p->data;
	uint64_t	 n;

	/* Read first: a send after this read writes again (owed is
	 * cleared below), one before it is what cb takes now. */
	while (read(w->fd, &n, sizeof n) == -1 && errno == EINTR)
		;
	atomic_store(&w->owed, false);
	w->cb(w->arg);
}

int
wake_init(struct wake *w, uv_loop_t *loop, void (*cb)(void *), void *arg)
{
	int	error;

	w->cb = cb;
	w->arg = arg;
	w->closed = NULL;
	atomic_init(&w->owed, false);
	if ((w->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1)
		return (uv_translate_sys_error(errno));
	if ((error = uv_poll_init(loop, &w->poll, w->fd)) != 0) {
		close(w->fd);
		return (error);
	}
	w->poll.data = w;
	return (uv_poll_start(&w->poll, UV_READABLE, wake_poll_cb));
}

void
wake_send(struct wake *w)
{
	uint64_t	one = 1;
	int		saved = errno;

	if (atomic_exchange(&w->owed, true))
		return;
	/* EAGAIN only at a count of 2^64 - 2: the loop is woken anyway. */
	while (write(w->fd, &one, sizeof one) == -1 && errno == EINTR)
		;
	errno = saved;
}

static void
wake_closed_cb(uv_handle_t *h)
{
	struct wake	*w = h->data;

	close(w->fd);
	w->fd = -1;
	if (w->closed != NULL)
		w->closed(w->arg);
}

void
wake_close(struct wake *w, void (*closed)(void *))
{
	w->closed = closed;
	uv_close((uv_handle_t *)&w->poll, wake_closed_cb);
}
