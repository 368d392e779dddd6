/* wake.h: wake the loop from another thread, as uv_async_t does, without the spin its callback does while a sender is between its two steps. */
#ifndef NKID_WAKE_H
#define NKID_WAKE_H

#include <stdatomic.h>
#include <stdbool.h>

#include <uv.h>

/*
 * libuv's uv_async_send marks the handle busy, writes its eventfd, then
 * marks it sent; the loop, woken by the write, spins until the mark says
 * sent. On two CPUs the sender is often not running then (the loop took
 * its CPU, or the wakeup is still leaving the kernel): a quarter of an
 * idle nkid's samples under a stream of small calls were that spin. Here
 * a sender that finds no wakeup owed writes the eventfd, and the loop
 * reads it before it looks at what was sent: nobody waits for anybody.
 */
struct wake {
	uv_poll_t	 poll;
	int		 fd;		/* eventfd, nonblocking */
	atomic_bool	 owed;		/* a write is on its way or unread */
	void		(*cb)(void *);
	void		*arg;
	void		(*closed)(void *);
};

/*
 * Call cb(arg) on w's loop after wake_send: at least once after each
 * send, possibly once for several, and possibly with nothing new (cb
 * takes what there is). Loop thread; 0 or a libuv error.
 */
int	 wake_init(struct wake *w, uv_loop_t *loop, void (*cb)(void *),
	    void *arg);
/* Any thread, until wake_close. Thread-safe and async-signal-safe. */
void	 wake_send(struct wake *w);
/* Loop thread: stop; closed(arg) when w may be freed. */
void	 wake_close(struct wake *w, void (*closed)(void *));

#endif /* NKID_WAKE_H */
