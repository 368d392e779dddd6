/* ctl_help.c: `nkictl help [COMMAND]`: nkictl's help, a command's options from its table, or a group's commands; the man page's generated sections and the words of shell completion from the same table. */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ctl.h"

static const struct ctl_opt ctl_help_opts[] = {
	{ 0, "man", NULL, "print the OPTIONS and COMMANDS sections of "
	    "nkictl(1) in roff" },
	{ 0, "words", NULL, "print the commands, or COMMAND's options, one a "
	    "line (for shell completion)" },
	CTL_OPT_END
};

/* --json: every command (of group, if not NULL), or one. */
static int
ctl_help_json(struct ctl_ctx *ctx, const struct ctl_cmd *cmd,
    const char *group)
{
	cJSON	*o, *a;
	size_t	 i, glen = group != NULL ? strlen(group) : 0;

	if (cmd != NULL)
		return (ctl_json_print(ctx, ctl_cmd_json(cmd)));
	o = cJSON_CreateObject();
	if (group == NULL)
		cJSON_AddItemToObject(o, "nkictl", ctl_cmd_json(&ctl_main_cmd));
	a = cJSON_AddArrayToObject(o, "commands");
	for (i = 0; a != NULL && i < ctl_cmd_count; i++)
		if (group == NULL || (strncmp(ctl_cmd_table[i]->name, group,
		    glen) == 0 && ctl_cmd_table[i]->name[glen] == ' '))
			cJSON_AddItemToArray(a, ctl_cmd_json(ctl_cmd_table[i]));
	return (ctl_json_print(ctx, o));
}

static int
ctl_help_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	const struct ctl_cmd	*cmd = NULL;
	int			 used = 0;

	if (ctl_args_has(a, "man") && ctl_args_has(a, "words"))
		return (ctl_usage_fail(ctx, "--man and --words exclude each "
		    "other"));
	if (ctl_args_has(a, "man")) {
		if (a->argc > 0)
			return (ctl_usage_fail(ctx, "unexpected argument '%s'",
			    a->argv[0]));
		ctl_cmd_man(ctx->out);
		return (CTL_EXIT_OK);
	}
	if (a->argc > 0)
		cmd = ctl_cmd_find(ctl_cmd_table, ctl_cmd_count, a->argc,
		    a->argv, &used);
	if (a->argc == 0 || (cmd != NULL && used == a->argc)) {
		if (ctl_args_has(a, "words"))
			ctl_cmd_words(cmd, ctx->out);
		else if (ctx->json)
			return (ctl_help_json(ctx, cmd, NULL));
		else
			ctl_cmd_help(cmd != NULL ? cmd : &ctl_main_cmd,
			    ctx->out);
		return (CTL_EXIT_OK);
	}
	if (cmd == NULL && a->argc == 1 &&
	    ctl_cmd_is_group(ctl_cmd_table, ctl_cmd_count, a->argv[0])) {
		if (ctx->json)
			return (ctl_help_json(ctx, NULL, a->argv[0]));
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
	.usage = "[--man | --words] [COMMAND]",
	.help = "list the commands, or show how to use one",
	.opts = ctl_help_opts,
	.args = { 0, 2, NULL },
	.exec = ctl_help_exec,
};
