/* rpc_status.c: Status, the daemon's identity, configuration summary, cores and counters. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nkid.pb-c.h"

#include "daemon/backend.h"
#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kcache.h"
#include "daemon/rpc_cache_stat.h"
#include "daemon/sched.h"
#include "daemon/xmalloc.h"

#ifndef NKID_VERSION
#define NKID_VERSION "unknown"
#endif

/* The backend's versions callback: one entry more in the reply. */
static void
rpc_status_version_add(void *arg, const char *key, const char *value)
{
	Nkid__V1__StatusReply				*r = arg;
	Nkid__V1__StatusReply__BackendVersionsEntry	*e;

	e = xmalloc(sizeof *e);
	nkid__v1__status_reply__backend_versions_entry__init(e);
	e->key = xstrdup(key);
	e->value = xstrdup(value);
	r->backend_versions = xreallocarray(r->backend_versions,
	    r->n_backend_versions + 1, sizeof *r->backend_versions);
	r->backend_versions[r->n_backend_versions++] = e;
}

static void
rpc_status(struct rpc_call *c)
{
	struct daemon			*d = c->d;
	Nkid__V1__StatusReply		 r = NKID__V1__STATUS_REPLY__INIT;
	Nkid__V1__Counters		 counters = NKID__V1__COUNTERS__INIT;
	Nkid__V1__CacheStatReply	 cache;
	Nkid__V1__RemoteStat		 remote;
	Nkid__V1__JobCounters		 jobs = NKID__V1__JOB_COUNTERS__INIT;
	Nkid__V1__Core			*cores = NULL, **corep = NULL;
	Nkid__V1__MethodCounter		*mc, **mcp;
	struct sched_core_info		 ci;
	struct sched_counters		 sc;
	size_t				 i, n, nm;

	r.version = (char *)NKID_VERSION;
	r.pid = (uint32_t)getpid();
	r.uptime_s = daemon_uptime(d);
	r.backend = (char *)backend_name(d->backend);
	r.socket = d->cfg.socket;
	r.config_path = d->cfg.path != NULL ? d->cfg.path : (char *)"";
	r.state_dir = d->cfg.state_dir;
	r.cache_dir = d->cfg.cache_dir;

	n = sched_core_count(d->sched);
	cores = xcalloc(n, sizeof *cores);
	corep = xcalloc(n, sizeof *corep);
	for (i = 0; i < n; i++) {
		nkid__v1__core__init(&cores[i]);
		sched_core_info(d->sched, (unsigned)i, &ci);
		cores[i].index = (uint32_t)i;
		cores[i].state = (char *)sched_core_state_name(ci.state);
		cores[i].job_id = ci.job_id;
		cores[i].holder_pid = ci.holder_pid;
		cores[i].holder_uid = ci.holder_uid;
		cores[i].busy_s = ci.busy_s;
		corep[i] = &cores[i];
	}
	r.n_cores = n;
	r.cores = corep;

	nm = dispatch_method_count();
	mc = xcalloc(nm, sizeof *mc);
	mcp = xcalloc(nm, sizeof *mcp);
	for (i = 0; i < nm; i++) {
		nkid__v1__method_counter__init(&mc[i]);
		mc[i].method = (char *)dispatch_method(i)->name;
		mc[i].calls = d->methods[i].calls;
		mc[i].errors = d->methods[i].errors;
		mcp[i] = &mc[i];
	}
	counters.connections = d->connections;
	counters.refused = d->refused;
	counters.active_connections = d->active_connections;
	counters.n_methods = nm;
	counters.methods = mcp;
	r.counters = &counters;

	rpc_cache_stat_fill(d, &cache, &remote);
	r.cache = &cache;

	sched_counters_get(d->sched, &sc);
	jobs.queued = sc.queued;
	jobs.running = sc.running;
	jobs.completed = sc.completed;
	jobs.cancelled = sc.cancelled;
	jobs.rejected = sc.rejected + d->jobs_rejected;
	r.jobs = &jobs;

	backend_versions(d->backend, rpc_status_version_add, &r);

	rpc_reply(c, &r.base);

	for (i = 0; i < r.n_backend_versions; i++)
		protobuf_c_message_free_unpacked(&r.backend_versions[i]->base,
		    NULL);
	free(r.backend_versions);
	free(mc);
	free(mcp);
	free(cores);
	free(corep);
}

const struct rpc_method rpc_status_method = {
	DISPATCH_METHOD_NAME("Status"), .kind = RPC_UNARY,
	.cap = CONFIG_CAP_CONTROL, .handler = rpc_status,
};
