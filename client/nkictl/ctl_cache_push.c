/* ctl_cache_push.c: `nkictl cache push [KEY...]`: nkid pushes entries of its cache (the named ones, or all it serves) to the fleet's remote tier. */
#include <stdio.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "ctl.h"
#include "ctl_cache.h"

/* The figures of the reply in --json, before the missing keys. */
static const char *const ctl_cache_push_keys[] = {
	"pushed", "failed", "bytes", NULL
};

static int
ctl_cache_push_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__CachePushRequest	 req =
	    NKID__V1__CACHE_PUSH_REQUEST__INIT;
	Nkid__V1__CachePushReply	*r;
	struct ctl_cache_where		 w = { 0, NULL };
	char				**keys = NULL, b[32];
	cJSON				*o, *m;
	size_t				 i, n = (size_t)a->argc;
	int				 rc;

	/* Keys or prefixes, any case, as cache ls prints them. */
	if (n > 0 && (rc = ctl_cache_keys_resolve(ctx, &w, a->argv, n,
	    &keys)) != CTL_EXIT_OK) {
		ctl_cache_keys_free(keys, n);
		return (rc);
	}
	req.keys = keys;
	req.n_keys = n;
	rc = ctl_call(ctx, "CachePush", &req.base,
	    &nkid__v1__cache_push_reply__descriptor, (ProtobufCMessage **)&r);
	ctl_cache_keys_free(keys, n);
	if (rc != 0)
		return (rc);
	if (ctx->json) {
		o = cJSON_CreateObject();
		ctl_json_fields(o, &r->base, ctl_cache_push_keys);
		m = cJSON_AddArrayToObject(o, "missing");
		for (i = 0; m != NULL && i < r->n_missing; i++)
			cJSON_AddItemToArray(m,
			    cJSON_CreateString(r->missing[i]));
		rc = ctl_json_print(ctx, o);
	} else {
		fprintf(ctx->out, "pushed %u entr%s (%s), %u failed\n",
		    r->pushed, r->pushed == 1 ? "y" : "ies",
		    ctl_fmt_bytes(r->bytes, b, sizeof b), r->failed);
		for (i = 0; i < r->n_missing; i++)
			ctl_errorf(ctx, "cache push: no entry '%s'",
			    r->missing[i]);
		if (r->failed > 0)
			ctl_errorf(ctx, "cache push: %u entr%s not pushed "
			    "(nkid's log says why)", r->failed,
			    r->failed == 1 ? "y" : "ies");
	}
	if (rc == CTL_EXIT_OK && (r->n_missing > 0 || r->failed > 0))
		rc = CTL_EXIT_FAIL;
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return (rc);
}

const struct ctl_cmd ctl_cache_push_cmd = {
	.name = "cache push",
	.usage = "[KEY...]",
	.help = "push entries of nkid's cache (the named keys, or all) to "
	    "the fleet's remote tier",
	.about =
	    "KEY is a key or a prefix of one, any case, as 'cache ls'\n"
	    "prints it (16 digits or more).\n",
	.args = { 0, -1, NULL },
	.timeout_s = CTL_TIMEOUT_KERNEL,
	.exec = ctl_cache_push_exec,
};
