/* dispatch_error.c: the one place where errors of the modules below the wire become a gRPC status and the words a user reads. */
#include <stdio.h>

#include "daemon/backend.h"
#include "daemon/dispatch.h"
#include "daemon/dispatch_error.h"
#include "daemon/kcache.h"
#include "daemon/sched.h"
#include "daemon/shm.h"
#include "daemon/tensor.h"

/*
 * t[-error] for a table t of n statuses indexed by minus a module's error
 * code; dflt for a code t has no status for (OK marks none).
 */
static grpc_status_code
dispatch_status_lookup(const grpc_status_code *t, size_t n, int error,
    grpc_status_code dflt)
{
	if (error > 0 || (size_t)-(long)error >= n ||
	    t[-error] == GRPC_STATUS_OK)
		return (dflt);
	return (t[-error]);
}

/* dispatch_status_lookup in t, an array. */
#define DISPATCH_STATUS(t, error, dflt) \
	dispatch_status_lookup((t), sizeof(t) / sizeof((t)[0]), (error), (dflt))

static const grpc_status_code dispatch_backend_statuses[] = {
	[-BACKEND_EARG] = GRPC_STATUS_INVALID_ARGUMENT,
	[-BACKEND_EINVAL] = GRPC_STATUS_INVALID_ARGUMENT,
	[-BACKEND_EPARSE] = GRPC_STATUS_INVALID_ARGUMENT,
	[-BACKEND_ECANCELED] = GRPC_STATUS_CANCELLED,
	[-BACKEND_ELIMIT] = GRPC_STATUS_RESOURCE_EXHAUSTED,
	[-BACKEND_ENOMEM] = GRPC_STATUS_RESOURCE_EXHAUSTED,
	[-BACKEND_EBUSY] = GRPC_STATUS_UNAVAILABLE,
};

grpc_status_code
dispatch_status_backend(int error)
{
	return (DISPATCH_STATUS(dispatch_backend_statuses, error,
	    GRPC_STATUS_INTERNAL));
}

static const grpc_status_code dispatch_tensor_statuses[] = {
	[-TENSOR_ELIMIT] = GRPC_STATUS_RESOURCE_EXHAUSTED,
	[-TENSOR_ENOENT] = GRPC_STATUS_NOT_FOUND,
	[-TENSOR_EPERM] = GRPC_STATUS_PERMISSION_DENIED,
	[-TENSOR_ESYS] = GRPC_STATUS_INTERNAL,
};

grpc_status_code
dispatch_status_tensor(int error)
{
	return (DISPATCH_STATUS(dispatch_tensor_statuses, error,
	    GRPC_STATUS_INVALID_ARGUMENT));
}

static const grpc_status_code dispatch_shm_statuses[] = {
	[-SHM_ENOENT] = GRPC_STATUS_NOT_FOUND,
	[-SHM_EPERM] = GRPC_STATUS_PERMISSION_DENIED,
	[-SHM_ELIMIT] = GRPC_STATUS_RESOURCE_EXHAUSTED,
	[-SHM_ESYS] = GRPC_STATUS_INTERNAL,
};

grpc_status_code
dispatch_status_shm(int error)
{
	return (DISPATCH_STATUS(dispatch_shm_statuses, error,
	    GRPC_STATUS_INVALID_ARGUMENT));
}

static const grpc_status_code dispatch_sched_statuses[] = {
	[-SCHED_ENOCORE] = GRPC_STATUS_INVALID_ARGUMENT,
	[-SCHED_ESTOPPED] = GRPC_STATUS_UNAVAILABLE,
};

grpc_status_code
dispatch_status_sched(int error)
{
	return (DISPATCH_STATUS(dispatch_sched_statuses, error,
	    GRPC_STATUS_RESOURCE_EXHAUSTED));
}

static const grpc_status_code dispatch_cache_export_statuses[] = {
	[-CACHE_ENOENT] = GRPC_STATUS_NOT_FOUND,
	[-CACHE_EINVAL] = GRPC_STATUS_INVALID_ARGUMENT,
	[-CACHE_ENOSPC] = GRPC_STATUS_RESOURCE_EXHAUSTED,
	/* the bundle is built in the cache's tmp/ */
	[-CACHE_EREADONLY] = GRPC_STATUS_FAILED_PRECONDITION,
};

grpc_status_code
dispatch_status_cache_export(int error)
{
	return (DISPATCH_STATUS(dispatch_cache_export_statuses, error,
	    GRPC_STATUS_INTERNAL));
}

static const grpc_status_code dispatch_cache_import_statuses[] = {
	[-CACHE_EBUNDLE] = GRPC_STATUS_INVALID_ARGUMENT,
	[-CACHE_ENOSPC] = GRPC_STATUS_RESOURCE_EXHAUSTED,
	[-CACHE_EFULL] = GRPC_STATUS_RESOURCE_EXHAUSTED,
	[-CACHE_EREADONLY] = GRPC_STATUS_FAILED_PRECONDITION,
};

grpc_status_code
dispatch_status_cache_import(int error)
{
	return (DISPATCH_STATUS(dispatch_cache_import_statuses, error,
	    GRPC_STATUS_INTERNAL));
}

grpc_status_code
dispatch_kcache_error(const struct kcache_result *r, char *msg, size_t len)
{
	switch (r->error) {
	case KCACHE_ENOENT:
		snprintf(msg, len, "neff key '%.80s' is not in the cache; send "
		    "the kernel IR", r->key);
		return (GRPC_STATUS_NOT_FOUND);
	case KCACHE_EFAILED:
		snprintf(msg, len, "cannot compile '%s': %s (a failure cached "
		    "for key %.16s; to compile again: --retry-failed in "
		    "nkictl, retry_failed=True in Python)", r->name, r->diag,
		    r->key);
		return (GRPC_STATUS_FAILED_PRECONDITION);
	case KCACHE_ELOAD:
		if (r->backend_error == BACKEND_EINVAL ||
		    r->backend_error == BACKEND_EPARSE ||
		    r->backend_error == BACKEND_EARG) {
			/* Compiled, but the device will not take it. */
			snprintf(msg, len, "cannot load '%s': %s", r->name,
			    r->diag);
			return (GRPC_STATUS_FAILED_PRECONDITION);
		}
		break;
	default:
		break;
	}
	if (r->backend_error == BACKEND_ECANCELED) {
		snprintf(msg, len, "compile of '%s' cancelled", r->name);
		return (GRPC_STATUS_CANCELLED);
	}
	snprintf(msg, len, "cannot %s '%s': %s", r->error == KCACHE_ELOAD ||
	    r->backend_error == BACKEND_EBUSY ? "load" : "compile", r->name,
	    r->diag);
	return (dispatch_status_backend(r->backend_error));
}

void
dispatch_fail_kcache(struct rpc_call *c, const struct kcache_result *r)
{
	char			msg[BACKEND_DIAG_LEN + 256];
	grpc_status_code	code;

	code = dispatch_kcache_error(r, msg, sizeof msg);
	rpc_fail(c, code, "%s", msg);
}

void
dispatch_fail_exec(struct rpc_call *c, const struct sched_job *sj,
    const char *verb, const char *name, int error, const char *diag)
{
	if (error != BACKEND_ECANCELED) {
		rpc_fail(c, dispatch_status_backend(error), "cannot %s '%s': %s",
		    verb, name, diag);
		return;
	}
	if (sj != NULL && sj->stop_reason == SCHED_CANCELLED)
		rpc_fail(c, GRPC_STATUS_CANCELLED, "%s of '%s' cancelled while "
		    "running: job %llu was cancelled (nkictl cancel)", verb,
		    name, (unsigned long long)sj->id);
	else
		rpc_fail(c, GRPC_STATUS_CANCELLED, "%s of '%s' cancelled: the "
		    "client went away or its deadline passed", verb, name);
}

void
dispatch_fail_unrun(struct rpc_call *c, const struct sched_job *sj,
    int outcome, const char *verb, const char *name)
{
	double	waited = (double)(sj->finished_ns - sj->queued_ns) / 1e9;

	switch (outcome) {
	case SCHED_EXPIRED:
		rpc_fail(c, GRPC_STATUS_DEADLINE_EXCEEDED, "cannot %s '%s': "
		    "its deadline passed after %.3f s in the queue of core %u, "
		    "before it started (job %llu never ran)", verb, name,
		    waited, sj->core, (unsigned long long)sj->id);
		break;
	case SCHED_CANCELLED:
		rpc_fail(c, GRPC_STATUS_CANCELLED, "%s of '%s' cancelled: job "
		    "%llu was cancelled before it started", verb, name,
		    (unsigned long long)sj->id);
		break;
	case SCHED_STOPPED:
		rpc_fail(c, GRPC_STATUS_UNAVAILABLE, "cannot %s '%s': nkid is "
		    "stopping (job %llu never ran)", verb, name,
		    (unsigned long long)sj->id);
		break;
	default:
		rpc_fail(c, GRPC_STATUS_CANCELLED, "%s of '%s' cancelled: the "
		    "client went away (job %llu never ran)", verb, name,
		    (unsigned long long)sj->id);
		break;
	}
}
