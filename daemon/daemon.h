/* daemon.h: the state of one nkid, owned by the loop thread. */
#ifndef NKID_DAEMON_H
#define NKID_DAEMON_H

#include <stdint.h>

#include <uv.h>

#include "daemon/config.h"
#include "daemon/metrics_hist.h"

/* Upper bound of the method table (checked in dispatch.c). */
#define DAEMON_MAX_METHODS	32

struct backend;
struct kcache;
struct metrics_http;
struct fastpath;
struct kcache_remote;
struct sched;
struct server;

struct daemon_method_counter {
	uint64_t		calls;
	uint64_t		errors;
	struct metrics_hist	duration;	/* start to status sent */
};

struct daemon {
	uv_loop_t			*loop;
	struct config			 cfg;		/* the running config */
	struct config_override		 ov;
	uint64_t			 start_ns;	/* uv_hrtime at start */

	struct backend			*backend;
	struct sched			*sched;
	struct kcache			*kcache;
	struct kcache_remote		*remote;	/* NULL: off */
	struct server			*server;	/* NULL in unit tests */
	struct metrics_http		*metrics;	/* NULL: no listener */
	struct fastpath			*fastpath;	/* NULL: off, tests */
	/* Kernels each uid proved it holds the IR of (kernel_view.c);
	 * NULL: none yet. */
	struct kernel_grants		*grants;

	uint64_t			 connections;
	uint64_t			 refused;
	uint64_t			 active_connections;
	struct daemon_method_counter	 methods[DAEMON_MAX_METHODS];
	uint64_t			 jobs_rejected;
	uint64_t			 next_job_id;
	int				 stopping;
};

/*
 * Set up d around an already loaded config (taken over: d releases it):
 * open the configured backend, probe its cores, create the compiled-kernel
 * table, open the remote tier (remote.mode), create the per-core workers. loop must outlive d. On failure returns
 * -1 with a message in err and leaves nothing to release.
 */
int	daemon_init(struct daemon *d, uv_loop_t *loop, struct config *cfg,
	    char *err, size_t errlen);
/*
 * Stop the workers (after the jobs in flight end), free the kernel table,
 * close the backend, release the config. Runs the loop until the workers'
 * handles are closed; no call may be pending.
 */
void	daemon_release(struct daemon *d);
/* Seconds since daemon_init. */
double	daemon_uptime(const struct daemon *d);

#endif /* NKID_DAEMON_H */
