/* ctl_version.c: `nkictl version`: nkictl's version and, if nkid answers, nkid's; never fails because nkid is down, it says so. */
#include <stdio.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "proto/wire.h"
#include "ctl.h"

/* Asking a daemon that may be down: a short default deadline. */
#define CTL_VERSION_TIMEOUT	5.0

static int
ctl_version_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__StatusRequest	 req = NKID__V1__STATUS_REQUEST__INIT;
	Nkid__V1__StatusReply	*reply = NULL;
	struct ctl_rpc_status	 st;
	char			 why[sizeof st.msg + 32] = "";
	cJSON			*o;
	int			 rc;

	if (ctl_rpc_open(ctx->socket, &ctx->rpc, &st) < 0 ||
	    ctl_rpc_call(ctx->rpc, "Status", &req.base,
	    &nkid__v1__status_reply__descriptor, ctx->timeout_s,
	    (ProtobufCMessage **)&reply, &st) < 0) {
		if (st.connect_errno != 0)
			snprintf(why, sizeof why, "%s", st.msg);
		else
			snprintf(why, sizeof why, "%s: %s",
			    wire_status_name(st.code), st.msg);
	}
	if (ctx->json) {
		if ((o = cJSON_CreateObject()) != NULL) {
			cJSON_AddStringToObject(o, "client", NKID_VERSION);
			if (reply != NULL)
				cJSON_AddStringToObject(o, "daemon",
				    reply->version);
			else
				cJSON_AddNullToObject(o, "daemon");
			cJSON_AddStringToObject(o, "socket", ctx->socket);
			if (reply == NULL)
				cJSON_AddStringToObject(o, "error", why);
		}
		rc = ctl_json_print(ctx, o);
	} else {
		fprintf(ctx->out, "nkictl %s\n", NKID_VERSION);
		if (reply != NULL)
			fprintf(ctx->out, "nkid   %s at '%s'\n", reply->version,
			    ctx->socket);
		else
			fprintf(ctx->out, "nkid   unknown: cannot ask nkid at "
			    "'%s': %s\n", ctx->socket, why);
		rc = CTL_EXIT_OK;
	}
	if (reply != NULL)
		protobuf_c_message_free_unpacked(&reply->base, NULL);
	return (rc);
}

const struct ctl_cmd ctl_version_cmd = {
	.name = "version",
	.usage = "",
	.help = "show nkictl's version and, if it answers, nkid's",
	.timeout_s = CTL_VERSION_TIMEOUT,
	.exec = ctl_version_exec,
};
