/* kernel.c: resolve a KernelRef through the compiled-kernel table, compiling on the thread pool. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "daemon/backend.h"
#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/kcache.h"
#include "daemon/kernel.h"
#include "daemon/log.h"
#include "daemon/xmalloc.h"

struct kernel_compile {
	uv_work_t		 work;
	struct rpc_call		*c;
	kernel_resolve_cb	 cb;
	struct backend		*backend;
	const void		*ir;
	size_t			 ir_len;
	char			 key[KCACHE_KEY_LEN + 1];
	char			*name;
	int			 error;
	int			 stage;		/* 0 compile, 1 load */
	void			*image;
	size_t			 image_len;
	struct backend_program	*prog;
	double			 ms;
	char			 diag[BACKEND_DIAG_LEN];
};

const char *
kernel_ref_name(const Nkid__V1__KernelRef *ref)
{
	if (ref != NULL && ref->kernel != NULL && ref->kernel->name != NULL &&
	    ref->kernel->name[0] != '\0')
		return (ref->kernel->name);
	return ("kernel");
}

static void
kernel_compile_work_cb(uv_work_t *w)
{
	struct kernel_compile	*kc = w->data;
	struct backend		*b = kc->backend;
	uint64_t		 t0 = uv_hrtime();

	kc->error = b->ops->compile(b->state, kc->ir, kc->ir_len, &kc->image,
	    &kc->image_len, kc->diag);
	if (kc->error == 0) {
		kc->stage = 1;
		kc->error = b->ops->load(b->state, kc->image, kc->image_len,
		    &kc->prog, kc->diag);
	}
	kc->ms = (double)(uv_hrtime() - t0) / 1e6;
}

static void
kernel_compile_fail(struct rpc_call *c, struct kernel_compile *kc)
{
	switch (kc->error) {
	case BACKEND_EINVAL:
	case BACKEND_EPARSE:
	case BACKEND_EARG:
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT,
		    "cannot compile '%s': %s", kc->name, kc->diag);
		break;
	case BACKEND_ELIMIT:
	case BACKEND_ENOMEM:
		rpc_fail(c, GRPC_STATUS_RESOURCE_EXHAUSTED,
		    "cannot compile '%s': %s", kc->name, kc->diag);
		break;
	case BACKEND_ECANCELED:
		rpc_fail(c, GRPC_STATUS_CANCELLED,
		    "compile of '%s' cancelled", kc->name);
		break;
	default:
		rpc_fail(c, GRPC_STATUS_INTERNAL, "cannot %s '%s': %s",
		    kc->stage == 0 ? "compile" : "load", kc->name, kc->diag);
		break;
	}
}

static void
kernel_compile_after_cb(uv_work_t *w, int status)
{
	struct kernel_compile	*kc = w->data;
	struct rpc_call		*c = kc->c;
	struct daemon		*d = c->d;
	struct kcache_entry	*e;

	if (status != 0 && kc->error == 0) {
		kc->error = BACKEND_ECANCELED;
		snprintf(kc->diag, sizeof kc->diag, "%s", uv_strerror(status));
	}
	if (kc->error != 0) {
		kcache_failure_count(d->kcache);
		if (kc->prog != NULL)
			kc->backend->ops->unload(kc->backend->state, kc->prog);
		free(kc->image);
		kernel_compile_fail(c, kc);
		goto out;
	}
	log_debug("compiled '%s' in %.3f ms: %s (%zu bytes)", kc->name, kc->ms,
	    kc->key, kc->image_len);
	e = kcache_put(d->kcache, kc->key, kc->name, kc->image, kc->image_len,
	    kc->prog, kc->ms);
	if (__atomic_load_n(&c->cancelled, __ATOMIC_ACQUIRE)) {
		kcache_entry_unref(d->kcache, e);
		rpc_fail(c, GRPC_STATUS_CANCELLED,
		    "cancelled while compiling '%s'", kc->name);
		goto out;
	}
	kc->cb(c, e, 0, kc->ms);
out:
	free(kc->name);
	free(kc);
}

void
kernel_resolve(struct rpc_call *c, const Nkid__V1__KernelRef *ref,
    kernel_resolve_cb cb)
{
	struct daemon		*d = c->d;
	struct backend		*b = d->backend;
	const Nkid__V1__Kernel	*k;
	struct kcache_key_input	 in;
	struct kcache_entry	*e;
	struct kernel_compile	*kc;
	char			 key[KCACHE_KEY_LEN + 1];
	int			 error;

	assert(cb != NULL);
	if (ref == NULL) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT,
		    "%s request names no kernel (ref is empty)", c->m->name);
		return;
	}
	k = ref->kernel;
	if (ref->neff_key[0] != '\0') {
		if ((e = kcache_get(d->kcache, ref->neff_key)) != NULL) {
			cb(c, e, 1, 0);
			return;
		}
		if (k == NULL || k->ir.len == 0) {
			rpc_fail(c, GRPC_STATUS_NOT_FOUND,
			    "neff key '%s' is not in the cache; send the kernel "
			    "IR", ref->neff_key);
			return;
		}
	}
	if (k == NULL) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT,
		    "%s request names no kernel: neither a kernel nor a neff key",
		    c->m->name);
		return;
	}
	if (strcmp(k->format, b->ops->format) != 0) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT,
		    "kernel '%s': format '%s' is not supported by backend '%s' "
		    "(it takes '%s')", kernel_ref_name(ref), k->format,
		    b->ops->name, b->ops->format);
		return;
	}
	if (k->ir.len == 0) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT,
		    "kernel '%s': the IR is empty", kernel_ref_name(ref));
		return;
	}
	if (k->ir.len > d->cfg.max_ir_bytes) {
		rpc_fail(c, GRPC_STATUS_RESOURCE_EXHAUSTED,
		    "kernel '%s': IR of %zu bytes exceeds the limit of %llu "
		    "bytes (limits.max_ir_bytes)", kernel_ref_name(ref),
		    k->ir.len, (unsigned long long)d->cfg.max_ir_bytes);
		return;
	}
	memset(&in, 0, sizeof in);
	in.format = k->format;
	in.ir = k->ir.data;
	in.ir_len = k->ir.len;
	in.target = ref->target;
	in.options = ref->options;
	in.backend = b->ops->name;
	in.compiler_version = b->ops->compiler_version(b->state);
	kcache_key_compute(&in, key);
	if ((e = kcache_get(d->kcache, key)) != NULL) {
		cb(c, e, 1, 0);
		return;
	}

	kc = xcalloc(1, sizeof *kc);
	kc->work.data = kc;
	kc->c = c;
	kc->cb = cb;
	kc->backend = b;
	kc->ir = k->ir.data;
	kc->ir_len = k->ir.len;
	memcpy(kc->key, key, sizeof key);
	kc->name = xstrdup(kernel_ref_name(ref));
	if ((error = uv_queue_work(d->loop, &kc->work, kernel_compile_work_cb,
	    kernel_compile_after_cb)) != 0) {
		free(kc->name);
		free(kc);
		rpc_fail(c, GRPC_STATUS_INTERNAL, "cannot queue compile: %s",
		    uv_strerror(error));
	}
}
