/* ctl_help.c: `nkictl help [COMMAND]`: nkictl's help, a command's options from its table, or a group's commands. */
#include <stdio.h>

#include "ctl.h"

static int
ctl_help_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	const struct ctl_cmd	*cmd;
	int			 used;

	if (a->argc == 0) {
		ctl_cmd_help(&ctl_main_cmd, ctx->out);
		return (CTL_EXIT_OK);
	}
	cmd = ctl_cmd_find(ctl_cmd_table, ctl_cmd_count, a->argc, a->argv,
	    &used);
	if (cmd != NULL && used == a->argc) {
		ctl_cmd_help(cmd, ctx->out);
		return (CTL_EXIT_OK);
	}
	if (cmd == NULL && a->argc == 1 &&
	    ctl_cmd_is_group(ctl_cmd_table, ctl_cmd_count, a->argv[0])) {
		fprintf(ctx->out, "commands of '%s':\n", a->argv[0]);
		ctl_cmd_list(ctl_cmd_table, ctl_cmd_count, a->argv[0],
		    ctx->out);
		return (CTL_EXIT_OK);
	}
	if (cmd == NULL)
		return (ctl_usage_fail(ctx, "unknown command '%s'",
		    a->argv[0]));
	return (ctl_usage_fail(ctx, "unexpected argument '%s'",
	    a->argv[used]));
}

const struct ctl_cmd ctl_help_cmd = {
	.name = "help",
	.usage = "[COMMAND]",
	.help = "list the commands, or show how to use one",
	.args = { 0, 2, NULL },
	.exec = ctl_help_exec,
};
