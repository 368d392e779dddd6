/* ctl_cmd.c: the command table, nkictl's index (every subcommand, sorted by name), its lookup, and the usage and help printed from it. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ctl.h"

/* What every usage line starts with: the global options. */
#define CTL_CMD_USAGE	"usage: nkictl [-s SOCKET] [--json] [--timeout S]"

/* Sorted by name (strcmp; bsearch relies on it, check_ctl_args checks it).
 * A group's commands have two-word names, found before one-word ones. */
const struct ctl_cmd *const ctl_cmd_table[] = {
	&ctl_benchmark_cmd,
	&ctl_cache_export_cmd,
	&ctl_cache_gc_cmd,
	&ctl_cache_import_cmd,
	&ctl_cache_ls_cmd,
	&ctl_cache_pin_cmd,
	&ctl_cache_pull_cmd,
	&ctl_cache_push_cmd,
	&ctl_cache_rm_cmd,
	&ctl_cache_show_cmd,
	&ctl_cache_stat_cmd,
	&ctl_cache_unpin_cmd,
	&ctl_cache_verify_cmd,
	&ctl_cancel_cmd,
	&ctl_compile_cmd,
	&ctl_help_cmd,
	&ctl_jobs_cmd,
	&ctl_lock_cmd,
	&ctl_ping_cmd,
	&ctl_profile_cmd,
	&ctl_run_cmd,
	&ctl_simulate_cmd,
	&ctl_status_cmd,
	&ctl_top_cmd,
	&ctl_version_cmd,
	&ctl_warmup_cmd,
};
const size_t ctl_cmd_count = sizeof ctl_cmd_table / sizeof ctl_cmd_table[0];

static int
ctl_cmd_compare_cb(const void *key, const void *elem)
{
	const struct ctl_cmd *const	*c = elem;

	return (strcmp(key, (*c)->name));
}

static const struct ctl_cmd *
ctl_cmd_search(const struct ctl_cmd *const *table, size_t n, const char *name)
{
	const struct ctl_cmd *const	*c;

	c = bsearch(name, table, n, sizeof *table, ctl_cmd_compare_cb);
	return (c != NULL ? *c : NULL);
}

const struct ctl_cmd *
ctl_cmd_find(const struct ctl_cmd *const *table, size_t n, int argc,
    char *const *argv, int *used)
{
	const struct ctl_cmd	*c;
	char			 two[128];
	size_t			 l0, l1;

	assert(argc >= 1 && argv[0] != NULL);
	l0 = strlen(argv[0]);
	if (argc >= 2 && argv[1] != NULL &&
	    (l1 = strlen(argv[1])) + l0 + 2 <= sizeof two) {
		memcpy(two, argv[0], l0);
		two[l0] = ' ';
		memcpy(two + l0 + 1, argv[1], l1 + 1);
		if ((c = ctl_cmd_search(table, n, two)) != NULL) {
			*used = 2;
			return (c);
		}
	}
	if ((c = ctl_cmd_search(table, n, argv[0])) != NULL)
		*used = 1;
	return (c);
}

int
ctl_cmd_is_group(const struct ctl_cmd *const *table, size_t n,
    const char *word)
{
	size_t	i, len = strlen(word);

	for (i = 0; i < n; i++)
		if (strncmp(table[i]->name, word, len) == 0 &&
		    table[i]->name[len] == ' ')
			return (1);
	return (0);
}

void
ctl_cmd_usage(const struct ctl_cmd *cmd, FILE *f)
{
	fprintf(f, CTL_CMD_USAGE "%s%s%s%s\n", *cmd->name != '\0' ? " " : "",
	    cmd->name, *cmd->usage != '\0' ? " " : "", cmd->usage);
}

/* "-n, --count COUNT" into buf: an option as help shows it. */
static void
ctl_cmd_opt_format(const struct ctl_opt *o, char *buf, size_t len)
{
	if (o->letter != 0 && o->name != NULL)
		snprintf(buf, len, "-%c, --%s", o->letter, o->name);
	else if (o->letter != 0)
		snprintf(buf, len, "-%c", o->letter);
	else
		snprintf(buf, len, "    --%s", o->name);
	if (o->value != NULL)
		snprintf(buf + strlen(buf), len - strlen(buf), " %s", o->value);
}

/* Print the rows of opts (up to CTL_OPT_END) in a column of width. */
static void
ctl_cmd_opts_print(const struct ctl_opt *opts, int *width, int print,
    FILE *f)
{
	const struct ctl_opt	*o;
	char			 left[128];

	for (o = opts; o != NULL && (o->letter != 0 || o->name != NULL); o++) {
		ctl_cmd_opt_format(o, left, sizeof left);
		if (!print) {
			if ((int)strlen(left) > *width)
				*width = (int)strlen(left);
		} else
			fprintf(f, "  %-*s  %s\n", *width, left, o->help);
	}
}

void
ctl_cmd_help(const struct ctl_cmd *cmd, FILE *f)
{
	int	width = 0;

	ctl_cmd_usage(cmd, f);
	fprintf(f, "%s\n", cmd->help);
	ctl_text_print(f, "\n", cmd->about);
	fprintf(f, "\noptions:\n");
	ctl_cmd_opts_print(cmd->opts, &width, 0, f);
	ctl_cmd_opts_print(ctl_args_common, &width, 0, f);
	ctl_cmd_opts_print(cmd->opts, &width, 1, f);
	ctl_cmd_opts_print(ctl_args_common, &width, 1, f);
	if (cmd != &ctl_main_cmd)
		return;
	fprintf(f, "\ncommands:\n");
	ctl_cmd_list(ctl_cmd_table, ctl_cmd_count, NULL, f);
	fprintf(f, "\nsee 'nkictl help COMMAND', nkictl(1) and docs/cli.md\n"
	    "exit status: 0 ok, 1 the call failed, 2 usage, 3 cannot connect "
	    "to nkid\n");
}

void
ctl_cmd_list(const struct ctl_cmd *const *table, size_t n, const char *group,
    FILE *f)
{
	const struct ctl_cmd	*c;
	size_t			 i, glen;
	int			 width = 0;

	glen = group != NULL ? strlen(group) : 0;
	for (i = 0; i < n; i++)
		if ((int)strlen(table[i]->name) > width)
			width = (int)strlen(table[i]->name);
	for (i = 0; i < n; i++) {
		c = table[i];
		if (group != NULL && (strncmp(c->name, group, glen) != 0 ||
		    c->name[glen] != ' '))
			continue;
		fprintf(f, "  %-*s  %s\n", width, c->name, c->help);
	}
}

/* ------------------------------------------------------------ man page */

/* s in roff: backslashes and dashes escaped, a leading dot guarded. */
static void
ctl_cmd_roff(const char *s, FILE *f)
{
	int	bol = 1;

	for (; *s != '\0'; s++) {
		if (bol && (*s == '.' || *s == '\''))
			fputs("\\&", f);
		bol = *s == '\n';
		if (*s == '\\')
			fputs("\\e", f);
		else if (*s == '-')
			fputs("\\-", f);
		else
			fputc(*s, f);
	}
}

/* The options of opts as a roff list. */
static void
ctl_cmd_man_opts(const struct ctl_opt *opts, FILE *f)
{
	const struct ctl_opt	*o;
	char			 left[128];

	for (o = opts; o != NULL && (o->letter != 0 || o->name != NULL); o++) {
		ctl_cmd_opt_format(o, left, sizeof left);
		fputs(".TP\n.B ", f);
		ctl_cmd_roff(left + strspn(left, " "), f);
		fputs("\n", f);
		ctl_cmd_roff(o->help, f);
		fputs("\n", f);
	}
}

void
ctl_cmd_man(FILE *f)
{
	const struct ctl_cmd	*c;
	size_t			 i;

	fputs(".\\\" generated by `nkictl help --man` from the command table\n",
	    f);
	fputs(".SH OPTIONS\n", f);
	ctl_cmd_man_opts(ctl_main_cmd.opts, f);
	ctl_cmd_man_opts(ctl_args_common, f);
	fputs(".SH COMMANDS\nEvery command also takes\n.B \\-h\n(its usage "
	    "and options) and\n.B \\-\\-json\n(one JSON object; errors "
	    "too).\n", f);
	for (i = 0; i < ctl_cmd_count; i++) {
		c = ctl_cmd_table[i];
		fputs(".SS \"", f);
		ctl_cmd_roff(c->name, f);
		fputs("\"\n.B nkictl ", f);
		ctl_cmd_roff(c->name, f);
		if (*c->usage != '\0') {
			fputs("\n.RI \"", f);
			fputc(' ', f);
			ctl_cmd_roff(c->usage, f);
			fputs("\"", f);
		}
		fputs("\n.PP\n", f);
		ctl_cmd_roff(c->help, f);
		fputs(".\n", f);
		if (c->about != NULL) {
			fputs(".PP\n", f);
			ctl_cmd_roff(c->about, f);
			if (c->about[strlen(c->about) - 1] != '\n')
				fputc('\n', f);
		}
		if (c->opts != NULL && (c->opts[0].letter || c->opts[0].name)) {
			fputs(".RS\n", f);
			ctl_cmd_man_opts(c->opts, f);
			fputs(".RE\n", f);
		}
	}
}

/* ------------------------------------------------------------ completion */

void
ctl_cmd_words(const struct ctl_cmd *cmd, FILE *f)
{
	const struct ctl_opt	*o;
	size_t			 i;
	int			 k;

	if (cmd == NULL) {
		for (i = 0; i < ctl_cmd_count; i++)
			fprintf(f, "%s\n", ctl_cmd_table[i]->name);
		return;
	}
	for (k = 0; k < 2; k++)
		for (o = k == 0 ? cmd->opts : ctl_args_common; o != NULL &&
		    (o->letter != 0 || o->name != NULL); o++) {
			if (o->letter != 0)
				fprintf(f, "-%c%s%s\n", o->letter, o->value ?
				    " " : "", o->value ? o->value : "");
			if (o->name != NULL)
				fprintf(f, "--%s%s%s\n", o->name, o->value ?
				    " " : "", o->value ? o->value : "");
		}
}

cJSON *
ctl_cmd_json(const struct ctl_cmd *cmd)
{
	const struct ctl_opt	*o;
	cJSON			*j, *a, *x;
	char			 s[2];
	int			 k;

	if ((j = cJSON_CreateObject()) == NULL)
		return (NULL);
	cJSON_AddStringToObject(j, "name", cmd->name);
	cJSON_AddStringToObject(j, "usage", cmd->usage);
	cJSON_AddStringToObject(j, "help", cmd->help);
	if (cmd->about != NULL)
		cJSON_AddStringToObject(j, "about", cmd->about);
	x = cJSON_AddObjectToObject(j, "operands");
	cJSON_AddNumberToObject(x, "min", cmd->args.lower);
	if (cmd->args.upper >= 0)
		cJSON_AddNumberToObject(x, "max", cmd->args.upper);
	else
		cJSON_AddNullToObject(x, "max");
	a = cJSON_AddArrayToObject(j, "options");
	for (k = 0; k < 2 && a != NULL; k++)
		for (o = k == 0 ? cmd->opts : ctl_args_common; o != NULL &&
		    (o->letter != 0 || o->name != NULL); o++) {
			x = cJSON_CreateObject();
			cJSON_AddItemToArray(a, x);
			s[0] = o->letter;
			s[1] = '\0';
			if (o->letter != 0)
				cJSON_AddStringToObject(x, "short", s);
			else
				cJSON_AddNullToObject(x, "short");
			if (o->name != NULL)
				cJSON_AddStringToObject(x, "long", o->name);
			else
				cJSON_AddNullToObject(x, "long");
			if (o->value != NULL)
				cJSON_AddStringToObject(x, "value", o->value);
			else
				cJSON_AddNullToObject(x, "value");
			cJSON_AddStringToObject(x, "help", o->help);
		}
	return (j);
}
