/*
 * ctl_help.c: `nkictl help [COMMAND]`: the list of commands, or one
 * command's usage (a group's commands for a group word such as "cache").
 */
#include <stdio.h>

#include "ctl.h"

static int
ctl_help_exec(ctl_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		CTL_LONGOPTS_COMMON,
		{ NULL, 0, NULL, 0 },
	};
	const ctl_cmd *cmd;
	int c, rc, used;

	while ((c = ctl_opt_next(ctx, argc, argv, "", longopts, &rc)) != -1)
		if (c == CTL_OPT_DONE)
			return rc;
	if (optind >= argc) {
		fprintf(ctx->out, "usage: nkictl [-s SOCKET] [--json] "
		    "[--timeout S] COMMAND [ARG...]\n\ncommands:\n");
		ctl_cmd_list(ctl_cmd_table, ctl_cmd_count, NULL, ctx->out);
		fprintf(ctx->out, "\nsee 'nkictl help COMMAND', 'nkictl "
		    "--help' and docs/cli.md\n");
		return CTL_EXIT_OK;
	}
	cmd = ctl_cmd_find(ctl_cmd_table, ctl_cmd_count, argc - optind,
	    argv + optind, &used);
	if (cmd != NULL && optind + used == argc) {
		ctl_cmd_usage(cmd, ctx->out);
		fprintf(ctx->out, "%s\n", cmd->help);
		return CTL_EXIT_OK;
	}
	if (cmd == NULL && optind + 1 == argc &&
	    ctl_cmd_is_group(ctl_cmd_table, ctl_cmd_count, argv[optind])) {
		fprintf(ctx->out, "commands of '%s':\n", argv[optind]);
		ctl_cmd_list(ctl_cmd_table, ctl_cmd_count, argv[optind],
		    ctx->out);
		return CTL_EXIT_OK;
	}
	if (cmd == NULL)
		return ctl_usage_fail(ctx, "unknown command '%s'", argv[optind]);
	return ctl_usage_fail(ctx, "unexpected argument '%s'",
	    argv[optind + used]);
}

const ctl_cmd ctl_help_cmd = {
	.name = "help",
	.usage = "[COMMAND]",
	.help = "list the commands, or show how to use one",
	.exec = ctl_help_exec,
};
