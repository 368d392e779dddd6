/* ctl.c: what every nkictl command shares: messages, numbers and seconds parsed, the connection to nkid and its calls, JSON and aligned output. */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "proto/wire.h"
#include "ctl.h"

/* Print "nkictl: [CMD: ]MSG" and keep the first error's code and
 * message for ctl_error_json. */
static void
ctl_verror(struct ctl_ctx *ctx, const char *code, int with_cmd,
    const char *fmt, va_list ap)
{
	char	*msg = NULL, *full = NULL;

	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	if (msg != NULL && with_cmd && ctx->cmd != NULL &&
	    *ctx->cmd->name != '\0') {
		if (asprintf(&full, "%s: %s", ctx->cmd->name, msg) < 0)
			full = NULL;
		free(msg);
		msg = full;
	}
	fprintf(ctx->err, "nkictl: %s\n", msg != NULL ? msg : "out of memory");
	if (ctx->err_code[0] == '\0' && msg != NULL) {
		snprintf(ctx->err_code, sizeof ctx->err_code, "%s", code);
		ctx->err_msg = msg;
		msg = NULL;
	}
	free(msg);
}

void
ctl_error(struct ctl_ctx *ctx, const char *code, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	ctl_verror(ctx, code, 0, fmt, ap);
	va_end(ap);
}

int
ctl_usage_fail(struct ctl_ctx *ctx, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	ctl_verror(ctx, CTL_CODE_USAGE, 1, fmt, ap);
	va_end(ap);
	ctl_cmd_usage(ctx->cmd, ctx->err);
	return (CTL_EXIT_USAGE);
}

void
ctl_errorf(struct ctl_ctx *ctx, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	ctl_verror(ctx, CTL_CODE_LOCAL, 0, fmt, ap);
	va_end(ap);
}

int
ctl_fail(struct ctl_ctx *ctx, const char *code, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	ctl_verror(ctx, code, 1, fmt, ap);
	va_end(ap);
	return (CTL_EXIT_FAIL);
}

void
ctl_error_json(struct ctl_ctx *ctx, int rc)
{
	cJSON	*o, *e;

	if (ctx->json && rc != CTL_EXIT_OK && !ctx->json_done &&
	    (o = cJSON_CreateObject()) != NULL) {
		e = cJSON_AddObjectToObject(o, "error");
		cJSON_AddStringToObject(e, "code", ctx->err_code[0] != '\0' ?
		    ctx->err_code : CTL_CODE_LOCAL);
		cJSON_AddStringToObject(e, "message", ctx->err_msg != NULL ?
		    ctx->err_msg : "failed");
		cJSON_AddNumberToObject(e, "exit", rc);
		ctl_json_print(ctx, o);
	}
	free(ctx->err_msg);
	ctx->err_msg = NULL;
	ctx->err_code[0] = '\0';
}

int
ctl_parse_uint(const char *s, unsigned long long min, unsigned long long max,
    unsigned long long *out)
{
	unsigned long long	 v;
	char			*end;

	if (s == NULL || *s < '0' || *s > '9')
		return (-1);
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return (-1);
	*out = v;
	return (0);
}

int
ctl_parse_seconds(const char *s, int zero_ok, double *out)
{
	double	 v;
	char	*end;

	if (s == NULL || *s == '\0')
		return (-1);
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !isfinite(v) || v < 0 ||
	    (v == 0 && !zero_ok) || v > CTL_TIMEOUT_MAX)
		return (-1);
	*out = v;
	return (0);
}

/* The cannot-connect message and its hint. */
static int
ctl_connect_fail(struct ctl_ctx *ctx, const struct ctl_rpc_status *st)
{
	ctl_error(ctx, CTL_CODE_UNAVAILABLE, "cannot connect to nkid at '%s': "
	    "%s", ctx->socket, st->msg);
	if (st->connect_errno == EACCES || st->connect_errno == EPERM)
		fprintf(ctx->err, "hint: may your user use it? see the "
		    "socket's owner and group: ls -l '%s'\n", ctx->socket);
	else
		fprintf(ctx->err, "hint: is nkid running? try: systemctl "
		    "status nkid\n");
	return (CTL_EXIT_CONNECT);
}

int
ctl_connect(struct ctl_ctx *ctx)
{
	struct ctl_rpc_status	st;

	if (ctx->rpc != NULL)
		return (CTL_EXIT_OK);
	if (ctl_rpc_open(ctx->socket, &ctx->rpc, &st) < 0)
		return (ctl_connect_fail(ctx, &st));
	return (CTL_EXIT_OK);
}

int
ctl_call_fail(struct ctl_ctx *ctx, const struct ctl_rpc_status *st)
{
	if (st->connect_errno != 0)
		return (ctl_connect_fail(ctx, st));
	return (ctl_fail(ctx, wire_status_name(st->code), "%s: %s",
	    wire_status_name(st->code), st->msg));
}

int
ctl_call(struct ctl_ctx *ctx, const char *method, const ProtobufCMessage *req,
    const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply)
{
	struct ctl_rpc_status	st;
	int			rc;

	if ((rc = ctl_connect(ctx)) != CTL_EXIT_OK)
		return (rc);
	if (ctl_rpc_call(ctx->rpc, method, req, reply_desc, ctx->timeout_s,
	    reply, &st) < 0)
		return (ctl_call_fail(ctx, &st));
	return (CTL_EXIT_OK);
}

int
ctl_call_print(struct ctl_ctx *ctx, const char *method,
    const ProtobufCMessage *req, const ProtobufCMessageDescriptor *reply_desc,
    cJSON *(*json)(struct ctl_ctx *, const ProtobufCMessage *),
    void (*human)(struct ctl_ctx *, const ProtobufCMessage *))
{
	ProtobufCMessage	*reply;
	int			 rc;

	if ((rc = ctl_call(ctx, method, req, reply_desc, &reply)) !=
	    CTL_EXIT_OK)
		return (rc);
	if (ctx->json)
		rc = ctl_json_print(ctx, json(ctx, reply));
	else
		human(ctx, reply);
	protobuf_c_message_free_unpacked(reply, NULL);
	return (rc);
}

int
ctl_json_print(struct ctl_ctx *ctx, cJSON *obj)
{
	char	*s;

	if (obj == NULL) {
		ctl_errorf(ctx, "%s: out of memory", ctx->cmd->name);
		return (CTL_EXIT_FAIL);
	}
	s = cJSON_PrintUnformatted(obj);
	cJSON_Delete(obj);
	if (s == NULL) {
		ctl_errorf(ctx, "%s: out of memory", ctx->cmd->name);
		return (CTL_EXIT_FAIL);
	}
	fputs(s, ctx->out);
	fputc('\n', ctx->out);
	cJSON_free(s);
	ctx->json_done = 1;
	return (CTL_EXIT_OK);
}

/* The scalar field f of m as a JSON value; NULL when out of memory. */
static cJSON *
ctl_json_field(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
	const char	*p = (const char *)m + f->offset;

	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING:
		return (cJSON_CreateString(*(char *const *)p));
	case PROTOBUF_C_TYPE_BOOL:
		return (cJSON_CreateBool(*(const protobuf_c_boolean *)p));
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		return (cJSON_CreateNumber(*(const int32_t *)p));
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		return (cJSON_CreateNumber(*(const uint32_t *)p));
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		return (cJSON_CreateNumber((double)*(const int64_t *)p));
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		return (cJSON_CreateNumber((double)*(const uint64_t *)p));
	case PROTOBUF_C_TYPE_FLOAT:
		return (cJSON_CreateNumber(*(const float *)p));
	case PROTOBUF_C_TYPE_DOUBLE:
		return (cJSON_CreateNumber(*(const double *)p));
	default:
		assert(!"a scalar field");
		return (NULL);
	}
}

void
ctl_json_fields(cJSON *o, const ProtobufCMessage *m, const char *const *names)
{
	const ProtobufCFieldDescriptor	*f;

	for (; o != NULL && *names != NULL; names++) {
		f = protobuf_c_message_descriptor_get_field_by_name(
		    m->descriptor, *names);
		assert(f != NULL && f->label != PROTOBUF_C_LABEL_REPEATED);
		cJSON_AddItemToObject(o, *names, ctl_json_field(m, f));
	}
}

void
ctl_text_print(FILE *f, const char *head, const char *text)
{
	if (text == NULL || *text == '\0')
		return;
	fputs(head, f);
	fputs(text, f);
	if (text[strlen(text) - 1] != '\n')
		fputc('\n', f);
}

void
ctl_kv(struct ctl_ctx *ctx, const char *key, const char *fmt, ...)
{
	va_list	ap;

	fprintf(ctx->out, "%-18s", key);
	va_start(ap, fmt);
	vfprintf(ctx->out, fmt, ap);
	va_end(ap);
	fputc('\n', ctx->out);
}
