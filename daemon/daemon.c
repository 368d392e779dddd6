/* daemon.c: set up and tear down the state that the RPC handlers share. */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "daemon/backend.h"
#include "daemon/daemon.h"
#include "daemon/kcache.h"
#include "daemon/kcache_remote.h"
#include "daemon/kernel.h"
#include "daemon/outpool.h"
#include "daemon/log.h"
#include "daemon/sched.h"

int
daemon_init(struct daemon *d, uv_loop_t *loop, struct config *cfg, char *err,
    size_t errlen)
{
	struct kcache_tier	tier;
	char			berr[512];

	assert(d != NULL && loop != NULL && cfg != NULL);
	memset(d, 0, sizeof *d);
	d->loop = loop;
	d->start_ns = uv_hrtime();
	d->next_job_id = 1;
	if (backend_open(cfg, &d->backend, berr, sizeof berr) != 0) {
		snprintf(err, errlen, "cannot open backend '%s': %s",
		    cfg->backend, berr);
		config_release(cfg);
		return (-1);
	}
	if (d->backend->ncores == 0) {
		snprintf(err, errlen, "backend '%s' found no cores",
		    cfg->backend);
		backend_close(d->backend);
		config_release(cfg);
		return (-1);
	}
	d->cfg = *cfg;
	memset(cfg, 0, sizeof *cfg);
	d->kcache = kcache_open(loop, d->backend, &d->cfg);
	/* Waiting for another host's compile never outlasts a compile. */
	if (kcache_remote_open(&d->remote, loop, &d->cfg,
	    backend_name(d->backend), backend_compiler_version(d->backend),
	    d->cfg.neuron_compile_timeout_ms, &d->stopping, err,
	    errlen) != 0) {
		kcache_close(d->kcache);
		d->kcache = NULL;
		backend_close(d->backend);
		d->backend = NULL;
		config_release(&d->cfg);
		return (-1);
	}
	kcache_remote_tier(d->remote, &tier);
	kcache_tier_attach(d->kcache, &tier);
	sched_new(&d->sched, loop, d->backend->ncores);
	return (0);
}

void
daemon_release(struct daemon *d)
{
	if (d->sched != NULL) {
		sched_free(d->sched);
		d->sched = NULL;
		/* Let the loop run the close callback. */
		uv_run(d->loop, UV_RUN_NOWAIT);
	}
	kcache_close(d->kcache);
	kernel_grants_free(d->grants);
	d->grants = NULL;
	outpool_drain();
	d->kcache = NULL;
	kcache_remote_close(d->remote);
	d->remote = NULL;
	backend_close(d->backend);
	d->backend = NULL;
	config_release(&d->cfg);
}

double
daemon_uptime(const struct daemon *d)
{
	return ((double)(uv_hrtime() - d->start_ns) / 1e9);
}
