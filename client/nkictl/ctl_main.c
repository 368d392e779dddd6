/* ctl_main.c: nkictl's driver: its global options and then the command's parsed by the one parser, and the dispatch through the command table. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"

/* nkictl's own options, before the command. */
static const struct ctl_opt ctl_main_opts[] = {
	{ 's', "socket", "SOCKET", "nkid's socket (default: $" CTL_SOCKET_ENV
	    ", else " CTL_DEFAULT_SOCKET ")" },
	{ 0, "timeout", "S", "deadline of each call, in seconds (default 30; "
	    "600 for kernels, warm-up and bundles)" },
	{ 0, "version", NULL, "print nkictl's version" },
	CTL_OPT_END
};

/* nkictl itself, a command without a name: its options and operands,
 * for the parser, --help and `nkictl help`. */
const struct ctl_cmd ctl_main_cmd = {
	.name = "",
	.usage = "COMMAND [ARG...]",
	.help = "the command line of nkid, the NeuronCore daemon",
	.opts = ctl_main_opts,
	.args = { 0, -1, NULL },	/* COMMAND: checked after --version */
	.flags = CTL_CMD_OPTS_FIRST,
};

/* Parse nkictl's own options into ctx. Returns 0 with *first the index
 * of the command word in argv, or -1 to exit with *rc. */
static int
ctl_main_parse(struct ctl_ctx *ctx, int argc, char **argv, int *first,
    int *rc)
{
	struct ctl_args	 a;
	const char	*socket;
	double		 timeout = 0;

	ctx->cmd = &ctl_main_cmd;
	if (ctl_args_parse(ctx, argc, argv, &a, rc) < 0)
		goto fail;
	if (ctl_args_has(&a, "version")) {
		fprintf(ctx->out, "nkictl %s\n", NKID_VERSION);
		*rc = CTL_EXIT_OK;
		goto fail;
	}
	if (a.argc == 0) {
		*rc = ctl_usage_fail(ctx, "missing COMMAND (see 'nkictl "
		    "help')");
		goto fail;
	}
	if ((socket = ctl_args_get(&a, "socket")) != NULL && *socket == '\0') {
		*rc = ctl_usage_fail(ctx, "empty socket path");
		goto fail;
	}
	if ((*rc = ctl_args_seconds(ctx, &a, "timeout", 0, &timeout)) != 0)
		goto fail;
	ctx->socket = socket;
	ctx->timeout_s = timeout;
	*first = argc - a.argc;
	ctl_args_release(&a);
	return (0);
fail:
	ctl_args_release(&a);
	return (-1);
}

/* Find the command argv names; NULL after printing why there is none. */
static const struct ctl_cmd *
ctl_main_find(struct ctl_ctx *ctx, int argc, char **argv, int *used)
{
	const struct ctl_cmd	*cmd;

	cmd = ctl_cmd_find(ctl_cmd_table, ctl_cmd_count, argc, argv, used);
	if (cmd != NULL)
		return (cmd);
	if (ctl_cmd_is_group(ctl_cmd_table, ctl_cmd_count, argv[0])) {
		ctl_error(ctx, CTL_CODE_USAGE, "'%s' needs a subcommand:",
		    argv[0]);
		ctl_cmd_list(ctl_cmd_table, ctl_cmd_count, argv[0], ctx->err);
	} else
		ctl_error(ctx, CTL_CODE_USAGE, "unknown command '%s'; try "
		    "'nkictl help'", argv[0]);
	return (NULL);
}

/* Nonzero if --json is among nkictl's or the command's options (before
 * "--"), so that even a usage error found before it is told in JSON. */
static int
ctl_main_wants_json(int argc, char **argv)
{
	int	i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--json") == 0)
			return (1);
	return (0);
}

/* Parse, find and run the command on ctx (its connection, if any, is left
 * open in ctx->rpc); returns the exit code. */
static int
ctl_main_run(struct ctl_ctx *ctx, int argc, char **argv)
{
	struct ctl_args	 a;
	const char	*env;
	int		 first, used, rc, wants, global;

	wants = ctl_main_wants_json(argc, argv);
	if (ctl_main_parse(ctx, argc, argv, &first, &rc) < 0) {
		ctx->json |= wants;
		return (rc);
	}
	global = ctx->json;
	ctx->json |= wants;
	ctx->cmd = ctl_main_find(ctx, argc - first, argv + first, &used);
	if (ctx->cmd == NULL)
		return (CTL_EXIT_USAGE);
	/* After its first operand a command's words are another program's
	 * (lock -- CMD): its own --json comes before them, if at all. */
	if (ctx->cmd->flags & CTL_CMD_OPTS_FIRST)
		ctx->json = global;
	if (ctx->socket == NULL) {
		env = getenv(CTL_SOCKET_ENV);
		ctx->socket = env != NULL && *env != '\0' ? env :
		    CTL_DEFAULT_SOCKET;
	}
	if (ctx->timeout_s == 0)
		ctx->timeout_s = ctx->cmd->timeout_s > 0 ?
		    ctx->cmd->timeout_s : CTL_TIMEOUT_DEFAULT;

	first += used - 1;
	if (ctl_args_parse(ctx, argc - first, argv + first, &a, &rc) == 0)
		rc = ctx->cmd->exec(ctx, &a);
	ctl_args_release(&a);
	return (rc);
}

/* A failure told in JSON if asked for, and the output flushed; returns
 * rc, or a failure if the output cannot be written. */
static int
ctl_main_end(struct ctl_ctx *ctx, int rc)
{
	ctl_error_json(ctx, rc);
	if (fflush(ctx->out) != 0 || ferror(ctx->out)) {
		fprintf(ctx->err, "nkictl: cannot write the output: %s\n",
		    strerror(errno));
		if (rc == CTL_EXIT_OK)
			rc = CTL_EXIT_FAIL;
	}
	return (rc);
}

int
ctl_main(int argc, char **argv, FILE *out, FILE *err)
{
	struct ctl_ctx	 ctx;
	int		 rc;

	memset(&ctx, 0, sizeof ctx);
	ctx.out = out;
	ctx.err = err;
	rc = ctl_main_run(&ctx, argc, argv);
	ctl_rpc_close(ctx.rpc);
	return (ctl_main_end(&ctx, rc));
}

void
ctl_main_exit(int argc, char **argv)
{
	struct ctl_ctx	 ctx;
	int		 rc;

	memset(&ctx, 0, sizeof ctx);
	ctx.out = stdout;
	ctx.err = stderr;
	rc = ctl_main_end(&ctx, ctl_main_run(&ctx, argc, argv));
	if (ctx.rpc != NULL) {
		/*
		 * Every call has ended and the output is out: the process
		 * ends without tearing gRPC down. Joining its threads (and
		 * absl timing the CPU on the way: ~3 ms on a VM) cost more
		 * than the call itself (docs/performance.md).
		 */
		fflush(stderr);
		_exit(rc);
	}
	exit(rc);
}
