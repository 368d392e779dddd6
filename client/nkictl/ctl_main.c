/*
 * ctl_main.c: nkictl's driver: global options, dispatch through the command
 * table, and the helpers every command shares (options, messages, calls).
 */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "proto/wire.h"
#include "ctl.h"

static void
ctl_main_usage(FILE *f)
{
	fprintf(f,
	    "usage: nkictl [-s SOCKET] [--json] [--timeout S] COMMAND [ARG...]\n"
	    "\n"
	    "options:\n"
	    "  -s, --socket SOCKET  nkid's socket (default: $" CTL_SOCKET_ENV
	    ", else " CTL_DEFAULT_SOCKET ")\n"
	    "      --json           print one JSON object\n"
	    "      --timeout S      deadline of each call, in seconds "
	    "(default %g; %g to compile or run)\n"
	    "  -h, --help           print this help\n"
	    "      --version        print nkictl's version\n"
	    "\n"
	    "commands:\n", CTL_TIMEOUT_DEFAULT, CTL_TIMEOUT_KERNEL);
	ctl_cmd_list(ctl_cmd_table, ctl_cmd_count, NULL, f);
	fprintf(f, "\n"
	    "exit status: 0 ok, 1 the call failed, 2 usage, 3 cannot connect "
	    "to nkid\n");
}

int
ctl_main(int argc, char **argv, FILE *out, FILE *err)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'J' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	ctl_ctx ctx;
	const char *env;
	double timeout = 0;
	int c, used, first, rc;

	memset(&ctx, 0, sizeof(ctx));
	ctx.out = out;
	ctx.err = err;

	/* '+': stop at the command; its options are its own. */
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:s:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (*optarg == '\0') {
				fprintf(err, "nkictl: empty socket path\n");
				return CTL_EXIT_USAGE;
			}
			ctx.socket = optarg;
			break;
		case 'J':
			ctx.json = 1;
			break;
		case 'T':
			if (ctl_parse_seconds(optarg, &timeout) < 0) {
				fprintf(err, "nkictl: bad timeout '%s': want "
				    "seconds, more than 0\n", optarg);
				return CTL_EXIT_USAGE;
			}
			break;
		case 'h':
			ctl_main_usage(out);
			return CTL_EXIT_OK;
		case 'V':
			fprintf(out, "nkictl %s\n", NKID_VERSION);
			return CTL_EXIT_OK;
		case ':':
			fprintf(err, "nkictl: option '%s' needs a value\n",
			    argv[optind - 1]);
			return CTL_EXIT_USAGE;
		default:
			if (optopt != 0)
				fprintf(err, "nkictl: unknown option '-%c'\n",
				    optopt);
			else
				fprintf(err, "nkictl: unknown option '%s'\n",
				    argv[optind - 1]);
			fprintf(err, "try 'nkictl help'\n");
			return CTL_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		ctl_main_usage(err);
		return CTL_EXIT_USAGE;
	}
	ctx.cmd = ctl_cmd_find(ctl_cmd_table, ctl_cmd_count, argc - optind,
	    argv + optind, &used);
	if (ctx.cmd == NULL) {
		if (ctl_cmd_is_group(ctl_cmd_table, ctl_cmd_count,
		    argv[optind])) {
			fprintf(err, "nkictl: '%s' needs a subcommand:\n",
			    argv[optind]);
			ctl_cmd_list(ctl_cmd_table, ctl_cmd_count, argv[optind],
			    err);
		} else {
			fprintf(err, "nkictl: unknown command '%s'; try "
			    "'nkictl help'\n", argv[optind]);
		}
		return CTL_EXIT_USAGE;
	}
	if (ctx.socket == NULL) {
		env = getenv(CTL_SOCKET_ENV);
		ctx.socket = env != NULL && *env != '\0' ? env :
		    CTL_DEFAULT_SOCKET;
	}
	ctx.timeout_s = timeout > 0 ? timeout : ctx.cmd->timeout_s > 0 ?
	    ctx.cmd->timeout_s : CTL_TIMEOUT_DEFAULT;

	first = optind + used - 1;
	optind = 0;            /* the command's ctl_opt_next starts afresh */
	rc = ctx.cmd->exec(&ctx, argc - first, argv + first);
	ctl_rpc_close(ctx.rpc);
	if (fflush(out) != 0 || ferror(out)) {
		fprintf(err, "nkictl: cannot write the output: %s\n",
		    strerror(errno));
		if (rc == CTL_EXIT_OK)
			rc = CTL_EXIT_FAIL;
	}
	return rc;
}

/* ------------------------------------------------------------ helpers */

int
ctl_opt_next(ctl_ctx *ctx, int argc, char **argv, const char *shortopts,
    const struct option *longopts, int *rc)
{
	char opts[64];
	int c;

	assert(strlen(shortopts) + 4 < sizeof(opts));
	if (shortopts[0] == '+')
		snprintf(opts, sizeof(opts), "+:h%s", shortopts + 1);
	else
		snprintf(opts, sizeof(opts), ":h%s", shortopts);
	opterr = 0;
	for (;;) {
		c = getopt_long(argc, argv, opts, longopts, NULL);
		switch (c) {
		case CTL_OPT_JSON:
			ctx->json = 1;
			continue;
		case 'h':
			ctl_cmd_usage(ctx->cmd, ctx->out);
			fprintf(ctx->out, "%s\n", ctx->cmd->help);
			*rc = CTL_EXIT_OK;
			return CTL_OPT_DONE;
		case ':':
			if (optopt != 0 && optopt < 0x100)
				*rc = ctl_usage_fail(ctx, "option '-%c' needs a "
				    "value", optopt);
			else
				*rc = ctl_usage_fail(ctx, "option '%s' needs a "
				    "value", argv[optind - 1]);
			return CTL_OPT_DONE;
		case '?':
			if (optopt != 0 && optopt < 0x100)
				*rc = ctl_usage_fail(ctx, "unknown option '-%c'",
				    optopt);
			else
				*rc = ctl_usage_fail(ctx, "unknown option '%s'",
				    argv[optind - 1]);
			return CTL_OPT_DONE;
		default:
			return c;
		}
	}
}

int
ctl_usage_fail(ctl_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	fprintf(ctx->err, "nkictl: %s: ", ctx->cmd->name);
	va_start(ap, fmt);
	vfprintf(ctx->err, fmt, ap);
	va_end(ap);
	fputc('\n', ctx->err);
	ctl_cmd_usage(ctx->cmd, ctx->err);
	return CTL_EXIT_USAGE;
}

void
ctl_errorf(ctl_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	fputs("nkictl: ", ctx->err);
	va_start(ap, fmt);
	vfprintf(ctx->err, fmt, ap);
	va_end(ap);
	fputc('\n', ctx->err);
}

int
ctl_parse_uint(const char *s, unsigned long long min, unsigned long long max,
    unsigned long long *out)
{
	unsigned long long v;
	char *end;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int
ctl_parse_seconds(const char *s, double *out)
{
	double v;
	char *end;

	if (s == NULL || *s == '\0')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !isfinite(v) || v <= 0 ||
	    v > CTL_TIMEOUT_MAX)
		return -1;
	*out = v;
	return 0;
}

/* The cannot-connect message and its hint. */
static int
ctl_connect_fail(ctl_ctx *ctx, const ctl_rpc_status *st)
{
	ctl_errorf(ctx, "cannot connect to nkid at '%s': %s", ctx->socket,
	    st->msg);
	if (st->connect_errno == EACCES || st->connect_errno == EPERM)
		fprintf(ctx->err, "hint: may your user use it? see the "
		    "socket's owner and group: ls -l '%s'\n", ctx->socket);
	else
		fprintf(ctx->err, "hint: is nkid running? try: systemctl "
		    "status nkid\n");
	return CTL_EXIT_CONNECT;
}

int
ctl_connect(ctl_ctx *ctx)
{
	ctl_rpc_status st;

	if (ctx->rpc != NULL)
		return CTL_EXIT_OK;
	if (ctl_rpc_open(ctx->socket, &ctx->rpc, &st) < 0)
		return ctl_connect_fail(ctx, &st);
	return CTL_EXIT_OK;
}

int
ctl_call_fail(ctl_ctx *ctx, const ctl_rpc_status *st)
{
	if (st->connect_errno != 0)
		return ctl_connect_fail(ctx, st);
	ctl_errorf(ctx, "%s: %s: %s", ctx->cmd->name,
	    wire_status_name(st->code), st->msg);
	return CTL_EXIT_FAIL;
}

int
ctl_call(ctl_ctx *ctx, const char *method, const ProtobufCMessage *req,
    const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply)
{
	ctl_rpc_status st;
	int rc;

	rc = ctl_connect(ctx);
	if (rc != CTL_EXIT_OK)
		return rc;
	if (ctl_rpc_call(ctx->rpc, method, req, reply_desc, ctx->timeout_s,
	    reply, &st) < 0)
		return ctl_call_fail(ctx, &st);
	return CTL_EXIT_OK;
}

int
ctl_json_print(ctl_ctx *ctx, cJSON *obj)
{
	char *s;

	if (obj == NULL) {
		ctl_errorf(ctx, "%s: out of memory", ctx->cmd->name);
		return CTL_EXIT_FAIL;
	}
	s = cJSON_PrintUnformatted(obj);
	cJSON_Delete(obj);
	if (s == NULL) {
		ctl_errorf(ctx, "%s: out of memory", ctx->cmd->name);
		return CTL_EXIT_FAIL;
	}
	fputs(s, ctx->out);
	fputc('\n', ctx->out);
	cJSON_free(s);
	return CTL_EXIT_OK;
}

void
ctl_kv(ctl_ctx *ctx, const char *key, const char *fmt, ...)
{
	va_list ap;

	fprintf(ctx->out, "%-18s", key);
	va_start(ap, fmt);
	vfprintf(ctx->out, fmt, ap);
	va_end(ap);
	fputc('\n', ctx->out);
}
