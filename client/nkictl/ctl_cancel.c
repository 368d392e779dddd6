/*
 * ctl_cancel.c: `nkictl cancel ID`: cancel a queued or running job, or end
 * a lease (its owner or root).
 */
#include <stdio.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "ctl.h"

static int
ctl_cancel_exec(ctl_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		CTL_LONGOPTS_COMMON,
		{ NULL, 0, NULL, 0 },
	};
	Nkid__V1__CancelRequest req = NKID__V1__CANCEL_REQUEST__INIT;
	Nkid__V1__CancelReply *reply;
	unsigned long long id;
	cJSON *o;
	int c, rc;

	while ((c = ctl_opt_next(ctx, argc, argv, "", longopts, &rc)) != -1)
		if (c == CTL_OPT_DONE)
			return rc;
	if (optind + 1 != argc)
		return ctl_usage_fail(ctx, optind >= argc ? "no job id" :
		    "one job id only");
	if (ctl_parse_uint(argv[optind], 1, (unsigned long long)-1 >> 1,
	    &id) < 0)
		return ctl_usage_fail(ctx, "bad job id '%s'", argv[optind]);
	req.job_id = id;
	rc = ctl_call(ctx, "Cancel", &req.base,
	    &nkid__v1__cancel_reply__descriptor, (ProtobufCMessage **)&reply);
	if (rc != CTL_EXIT_OK)
		return rc;
	if (ctx->json) {
		o = cJSON_CreateObject();
		if (o != NULL) {
			cJSON_AddNumberToObject(o, "id", (double)id);
			cJSON_AddStringToObject(o, "state", reply->state);
		}
		rc = ctl_json_print(ctx, o);
	} else
		fprintf(ctx->out, "job %llu: %s\n", id, reply->state);
	protobuf_c_message_free_unpacked(&reply->base, NULL);
	return rc;
}

const ctl_cmd ctl_cancel_cmd = {
	.name = "cancel",
	.usage = "ID",
	.help = "cancel a queued or running job, or end a lease",
	.exec = ctl_cancel_exec,
};
