/* kernel.c: check a request's KernelRef and turn it into a request of the kernel cache. */
#include <stdio.h>
#include <string.h>

#include "cache/cache.h"
#include "daemon/backend.h"
#include "daemon/daemon.h"
#include "daemon/kcache.h"
#include "daemon/kernel.h"

const char *
kernel_ref_name(const Nkid__V1__KernelRef *ref)
{
	if (ref != NULL && ref->kernel != NULL && ref->kernel->name != NULL &&
	    ref->kernel->name[0] != '\0' &&
	    backend_name_valid(ref->kernel->name))
		return (ref->kernel->name);
	return ("kernel");
}

int
kernel_request_init(struct daemon *d, const char *method,
    const Nkid__V1__KernelRef *ref, struct kcache_request *rq,
    grpc_status_code *code, char *msg, size_t len)
{
	struct backend		*b = d->backend;
	const Nkid__V1__Kernel	*k;
	char			 digest[CACHE_KEY_LEN + 1];

	memset(rq, 0, sizeof *rq);
	if (ref == NULL) {
		*code = GRPC_STATUS_INVALID_ARGUMENT;
		snprintf(msg, len, "%s request names no kernel (ref is empty)",
		    method);
		return (-1);
	}
	k = ref->kernel;
	/* What is stored and listed must be able to travel in a reply. */
	if ((k != NULL && !backend_name_valid(k->name)) ||
	    !backend_name_valid(ref->target) ||
	    !backend_name_valid(ref->options)) {
		*code = GRPC_STATUS_INVALID_ARGUMENT;
		snprintf(msg, len, "%s request: the kernel's %s is not valid "
		    "UTF-8", method, k != NULL && !backend_name_valid(k->name) ?
		    "name" : !backend_name_valid(ref->target) ? "target" :
		    "options");
		return (-1);
	}
	rq->name = kernel_ref_name(ref);
	rq->neff_key = ref->neff_key;
	rq->target = ref->target;
	rq->options = ref->options;
	rq->retry_failed = ref->retry_failed;
	if (ref->neff_key[0] != '\0' && (k == NULL || k->ir.len == 0))
		return (0);	/* key only: the cache has it or not */
	if (k == NULL) {
		*code = GRPC_STATUS_INVALID_ARGUMENT;
		snprintf(msg, len, "%s request names no kernel: neither a "
		    "kernel nor a neff key", method);
		return (-1);
	}
	if (strcmp(k->format, backend_format(b)) != 0) {
		*code = GRPC_STATUS_INVALID_ARGUMENT;
		snprintf(msg, len, "kernel '%s': format '%s' is not supported "
		    "by backend '%s' (it takes '%s')", kernel_ref_name(ref),
		    k->format, backend_name(b), backend_format(b));
		return (-1);
	}
	if (k->ir.len == 0) {
		*code = GRPC_STATUS_INVALID_ARGUMENT;
		snprintf(msg, len, "kernel '%s': the IR is empty",
		    kernel_ref_name(ref));
		return (-1);
	}
	if (k->ir.len > d->cfg.max_ir_bytes) {
		*code = GRPC_STATUS_RESOURCE_EXHAUSTED;
		snprintf(msg, len, "kernel '%s': IR of %zu bytes exceeds the "
		    "limit of %llu bytes (limits.max_ir_bytes)",
		    kernel_ref_name(ref), k->ir.len,
		    (unsigned long long)d->cfg.max_ir_bytes);
		return (-1);
	}
	rq->format = k->format;
	rq->ir = k->ir.data;
	rq->ir_len = k->ir.len;
	/* The key comes from the IR itself, never from the client. */
	cache_digest_hex(rq->ir, rq->ir_len, digest);
	backend_cache_key(b, rq->format, digest, rq->target, rq->options,
	    rq->key);
	return (0);
}
