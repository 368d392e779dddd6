/* ctl_cache_pull.c: `nkictl cache pull MANIFEST`: nkid pulls every kernel of a manifest (named by the digest of its IR) from the fleet's remote tier into its cache, before a deployment. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "cache/cache.h"
#include "ctl.h"
#include "ctl_manifest.h"

/* Kernels per CachePull call (a request stays well inside the control
 * cap: about 200 bytes each). */
#define CTL_CACHE_PULL_BATCH	1000

/* The counts so far; results is the --json array (NULL: text). */
struct ctl_cache_pull {
	const struct ctl_manifest	*m;
	unsigned			 pulled;
	unsigned			 present;
	unsigned			 missing;
	unsigned			 failed;
	uint64_t			 bytes;
	cJSON				*results;
};

/* Count and report the results of the items from first on. */
static void
ctl_cache_pull_batch_cb(struct ctl_ctx *ctx, const ProtobufCMessage *reply,
    size_t first, size_t count, void *arg)
{
	const Nkid__V1__CachePullReply	*r = (const void *)reply;
	const Nkid__V1__CachePullResult	*res;
	struct ctl_cache_pull		*p = arg;
	const struct ctl_manifest	*m = p->m;
	cJSON				*x;
	size_t				 j;

	p->pulled += r->pulled;
	p->present += r->present;
	p->missing += r->missing;
	p->failed += r->failed;
	p->bytes += r->bytes;
	for (j = 0; j < r->n_results; j++) {
		res = r->results[j];
		if (p->results != NULL) {
			x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "path",
			    m->items[first + j].path);
			cJSON_AddStringToObject(x, "neff_key", res->neff_key);
			cJSON_AddStringToObject(x, "state", res->state);
			cJSON_AddStringToObject(x, "message", res->message);
			cJSON_AddItemToArray(p->results, x);
		} else if (strcmp(res->state, "pulled") != 0 &&
		    strcmp(res->state, "present") != 0)
			ctl_errorf(ctx, "cache pull: '%s': %s%s%s",
			    m->items[first + j].path, res->state,
			    res->message[0] != '\0' ? ": " : "", res->message);
	}
}

static int
ctl_cache_pull_run(struct ctl_ctx *ctx, struct ctl_cache_pull *p)
{
	Nkid__V1__CachePullRequest	  req =
	    NKID__V1__CACHE_PULL_REQUEST__INIT;
	Nkid__V1__CachePullItem		 *items, **itemp;
	Nkid__V1__KernelRef		  ref;
	const struct ctl_manifest	 *m = p->m;
	char				(*digests)[CACHE_KEY_LEN + 1];
	size_t				  i;
	int				  rc;

	items = calloc(m->n + 1, sizeof *items);
	itemp = calloc(m->n + 1, sizeof *itemp);
	digests = calloc(m->n + 1, sizeof *digests);
	if (items == NULL || itemp == NULL || digests == NULL)
		abort();
	for (i = 0; i < m->n; i++) {
		ctl_manifest_ref(m, i, &ref);
		nkid__v1__cache_pull_item__init(&items[i]);
		cache_digest_hex(ref.kernel->ir.data, ref.kernel->ir.len,
		    digests[i]);
		items[i].name = ref.kernel->name;
		items[i].ir_digest = digests[i];
		items[i].format = ref.kernel->format;
		items[i].target = ref.target;
		items[i].options = ref.options;
		itemp[i] = &items[i];
	}
	rc = ctl_manifest_send(ctx, "CachePull", &req.base,
	    &nkid__v1__cache_pull_reply__descriptor, (ProtobufCMessage **)itemp,
	    m->n, CTL_CACHE_PULL_BATCH, ctl_cache_pull_batch_cb, p);
	free(items);
	free(itemp);
	free(digests);
	return (rc);
}

static int
ctl_cache_pull_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	struct ctl_manifest	 m;
	struct ctl_cache_pull	 p;
	cJSON			*o = NULL;
	char			 err[1024], b[32];
	int			 rc;

	if (ctl_manifest_read(a->argv[0], &m, err, sizeof err) < 0) {
		ctl_errorf(ctx, "cache pull: %s", err);
		return (CTL_EXIT_FAIL);
	}
	memset(&p, 0, sizeof p);
	p.m = &m;
	if (ctx->json) {
		o = cJSON_CreateObject();
		p.results = cJSON_AddArrayToObject(o, "results");
	}
	if ((rc = ctl_cache_pull_run(ctx, &p)) != CTL_EXIT_OK)
		goto out;
	if (o != NULL) {
		cJSON_AddNumberToObject(o, "pulled", p.pulled);
		cJSON_AddNumberToObject(o, "present", p.present);
		cJSON_AddNumberToObject(o, "missing", p.missing);
		cJSON_AddNumberToObject(o, "failed", p.failed);
		cJSON_AddNumberToObject(o, "bytes", (double)p.bytes);
		rc = ctl_json_print(ctx, o);
		o = NULL;
	} else
		fprintf(ctx->out, "pull: %zu kernels: %u pulled (%s), "
		    "%u already here, %u missing, %u failed\n", m.n, p.pulled,
		    ctl_fmt_bytes(p.bytes, b, sizeof b), p.present, p.missing,
		    p.failed);
	if (rc == CTL_EXIT_OK && (p.missing > 0 || p.failed > 0))
		rc = CTL_EXIT_FAIL;
out:
	cJSON_Delete(o);
	ctl_manifest_release(&m);
	return (rc);
}

const struct ctl_cmd ctl_cache_pull_cmd = {
	.name = "cache pull",
	.usage = "MANIFEST",
	.help = "pull every kernel of MANIFEST from the fleet's remote tier "
	    "into nkid's cache",
	.args = { 1, 1, "MANIFEST" },
	.timeout_s = CTL_TIMEOUT_KERNEL,
	.exec = ctl_cache_pull_exec,
};
