/* ctl_cancel.c: `nkictl cancel ID`: cancel a queued or running job, or end a lease (its owner or root). */
#include <stdio.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "ctl.h"

static int
ctl_cancel_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__CancelRequest	 req = NKID__V1__CANCEL_REQUEST__INIT;
	Nkid__V1__CancelReply	*reply;
	unsigned long long	 id;
	cJSON			*o;
	int			 rc;

	if (ctl_parse_uint(a->argv[0], 1, (unsigned long long)-1 >> 1,
	    &id) < 0)
		return (ctl_usage_fail(ctx, "bad job id '%s'", a->argv[0]));
	req.job_id = id;
	rc = ctl_call(ctx, "Cancel", &req.base,
	    &nkid__v1__cancel_reply__descriptor, (ProtobufCMessage **)&reply);
	if (rc != CTL_EXIT_OK)
		return (rc);
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
	return (rc);
}

const struct ctl_cmd ctl_cancel_cmd = {
	.name = "cancel",
	.usage = "ID",
	.help = "cancel a queued or running job, or end a lease",
	.args = { 1, 1, "ID (a job id, see 'nkictl jobs')" },
	.exec = ctl_cancel_exec,
};
