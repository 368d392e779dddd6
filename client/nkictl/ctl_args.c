/* ctl_args.c: the one parser of nkictl's command lines: a command's options and arity from its descriptor, checked before the command runs. */
#include <assert.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

/* getopt_long's answer for row i of a command's options without a
 * letter, the common ones being rows n and n + 1 after its n own. */
#define CTL_ARGS_LONG		0x100
/* Most rows a command may have. */
#define CTL_ARGS_MAX_OPTS	64

/* The options every command takes after its own, in this order. */
const struct ctl_opt ctl_args_common[] = {
	{ 0, "json", NULL, "print one JSON object" },
	{ 'h', "help", NULL, "print this help" },
	CTL_OPT_END
};
enum { CTL_ARGS_COMMON_JSON, CTL_ARGS_COMMON_HELP, CTL_ARGS_NCOMMON };
/* longopts holds a command's rows, the common ones and the end. */
_Static_assert(CTL_ARGS_NCOMMON + 1 == 3, "ctl_args_parse's longopts");

static size_t
ctl_args_nopts(const struct ctl_cmd *cmd)
{
	size_t	n = 0;

	if (cmd->opts != NULL)
		while (cmd->opts[n].letter != 0 || cmd->opts[n].name != NULL)
			n++;
	assert(n <= CTL_ARGS_MAX_OPTS);
	return (n);
}

/* Row i of cmd's n options followed by the common ones. */
static const struct ctl_opt *
ctl_args_opt_at(const struct ctl_cmd *cmd, size_t n, size_t i)
{
	return (i < n ? &cmd->opts[i] : &ctl_args_common[i - n]);
}

/* The row that getopt's answer c stands for, or -1. */
static int
ctl_args_row(const struct ctl_cmd *cmd, size_t n, int c)
{
	size_t	i;

	if (c >= CTL_ARGS_LONG)
		return (c - CTL_ARGS_LONG);
	for (i = 0; i < n + CTL_ARGS_NCOMMON; i++)
		if (ctl_args_opt_at(cmd, n, i)->letter == c)
			return ((int)i);
	return (-1);
}

/* Build the getopt_long template of cmd (n own rows): shortopts and
 * longopts (n + CTL_ARGS_NCOMMON + 1 entries). */
static void
ctl_args_template(const struct ctl_cmd *cmd, size_t n, char *shortopts,
    size_t len, struct option *longopts)
{
	const struct ctl_opt	*o;
	size_t			 i, k = 0, l = 0;

	if (cmd->flags & CTL_CMD_OPTS_FIRST)
		shortopts[k++] = '+';
	shortopts[k++] = ':';
	for (i = 0; i < n + CTL_ARGS_NCOMMON; i++) {
		o = ctl_args_opt_at(cmd, n, i);
		if (o->name != NULL) {
			longopts[l].name = o->name;
			longopts[l].has_arg = o->value != NULL ?
			    required_argument : no_argument;
			longopts[l].flag = NULL;
			longopts[l].val = o->letter != 0 ? o->letter :
			    CTL_ARGS_LONG + (int)i;
			l++;
		}
		if (o->letter != 0) {
			assert(k + 3 < len);
			shortopts[k++] = o->letter;
			if (o->value != NULL)
				shortopts[k++] = ':';
		}
	}
	shortopts[k] = '\0';
	memset(&longopts[l], 0, sizeof longopts[l]);
}

/* The option word of a getopt error as the user wrote it, without any
 * "=value": "-x", "--nope". */
static void
ctl_args_word(char **argv, char *buf, size_t len)
{
	const char	*w = argv[optind - 1];

	if (optopt > 0 && optopt < CTL_ARGS_LONG && w[0] == '-' &&
	    w[1] != '-')
		snprintf(buf, len, "-%c", optopt);
	else
		snprintf(buf, len, "%.*s", (int)strcspn(w, "="), w);
}

/* Record row i given with value (NULL for a flag). */
static void
ctl_args_add(struct ctl_args *a, int argc, int i, char *value)
{
	struct ctl_args_opt	*o = &a->opts[i];

	if (value != NULL) {
		if (o->values == NULL &&
		    (o->values = calloc(argc + 1, sizeof *o->values)) == NULL)
			abort();
		o->values[o->count] = value;
	}
	o->count++;
}

int
ctl_args_parse(struct ctl_ctx *ctx, int argc, char **argv, struct ctl_args *a,
    int *rc)
{
	const struct ctl_cmd	*cmd = ctx->cmd;
	struct option		 longopts[CTL_ARGS_MAX_OPTS + 3];
	char			 shortopts[2 * CTL_ARGS_MAX_OPTS + 8];
	char			 word[64];
	size_t			 n;
	int			 c, i;

	assert(cmd != NULL && argc >= 1);
	memset(a, 0, sizeof *a);
	a->cmd = cmd;
	n = ctl_args_nopts(cmd);
	a->nopts = n;
	if ((a->opts = calloc(n + 1, sizeof *a->opts)) == NULL)
		abort();
	ctl_args_template(cmd, n, shortopts, sizeof shortopts, longopts);

	*rc = CTL_EXIT_OK;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (c == ':' || c == '?') {
			ctl_args_word(argv, word, sizeof word);
			if (c == ':')
				*rc = ctl_usage_fail(ctx, "option '%s' needs a "
				    "value", word);
			else if (optopt != 0 && word[1] == '-')
				*rc = ctl_usage_fail(ctx, "option '%s' takes "
				    "no value", word);
			else
				*rc = ctl_usage_fail(ctx, "unknown option '%s'",
				    word);
			return (-1);
		}
		i = ctl_args_row(cmd, n, c);
		assert(i >= 0 && (size_t)i < n + CTL_ARGS_NCOMMON);
		if ((size_t)i == n + CTL_ARGS_COMMON_HELP) {
			ctl_cmd_help(cmd, ctx->out);
			return (-1);
		}
		if ((size_t)i == n + CTL_ARGS_COMMON_JSON)
			ctx->json = 1;
		else
			ctl_args_add(a, argc, i, cmd->opts[i].value != NULL ?
			    optarg : NULL);
	}
	a->argc = argc - optind;
	a->argv = argv + optind;
	if (a->argc < cmd->args.lower) {
		*rc = ctl_usage_fail(ctx, "missing %s", cmd->args.what);
		return (-1);
	}
	if (cmd->args.upper >= 0 && a->argc > cmd->args.upper) {
		*rc = ctl_usage_fail(ctx, "unexpected argument '%s'",
		    a->argv[cmd->args.upper]);
		return (-1);
	}
	return (0);
}

void
ctl_args_release(struct ctl_args *a)
{
	size_t	i;

	for (i = 0; a->opts != NULL && i < a->nopts; i++)
		free(a->opts[i].values);
	free(a->opts);
	memset(a, 0, sizeof *a);
}

/* The row of option name in a's command, or NULL if it has none. */
static const struct ctl_args_opt *
ctl_args_find(const struct ctl_args *a, const char *name)
{
	const struct ctl_opt	*o;
	size_t			 i;

	for (i = 0; i < a->nopts; i++) {
		o = &a->cmd->opts[i];
		if (o->name != NULL ? strcmp(o->name, name) == 0 :
		    name[0] == o->letter && name[1] == '\0')
			return (&a->opts[i]);
	}
	return (NULL);
}

int
ctl_args_takes(const struct ctl_args *a, const char *name)
{
	return (ctl_args_find(a, name) != NULL);
}

unsigned
ctl_args_has(const struct ctl_args *a, const char *name)
{
	const struct ctl_args_opt	*o = ctl_args_find(a, name);

	return (o != NULL ? o->count : 0);
}

const char *
ctl_args_get(const struct ctl_args *a, const char *name)
{
	const struct ctl_args_opt	*o = ctl_args_find(a, name);

	if (o == NULL || o->values == NULL || o->count == 0)
		return (NULL);
	return (o->values[o->count - 1]);
}

char *const *
ctl_args_values(const struct ctl_args *a, const char *name, size_t *n)
{
	const struct ctl_args_opt	*o = ctl_args_find(a, name);

	if (o == NULL || o->values == NULL) {
		*n = 0;
		return (NULL);
	}
	*n = o->count;
	return (o->values);
}

/* How the option is named in messages: "-n", else "--min-age". */
static void
ctl_args_display(const struct ctl_args *a, const char *name, char *buf,
    size_t len)
{
	size_t	i;

	for (i = 0; i < a->nopts; i++)
		if (a->cmd->opts[i].name != NULL &&
		    strcmp(a->cmd->opts[i].name, name) == 0 &&
		    a->cmd->opts[i].letter != 0) {
			snprintf(buf, len, "-%c", a->cmd->opts[i].letter);
			return;
		}
	snprintf(buf, len, "%s%s", name[1] == '\0' ? "-" : "--", name);
}

int
ctl_args_uint(struct ctl_ctx *ctx, const struct ctl_args *a,
    const char *name, unsigned long long min, unsigned long long max,
    unsigned long long *v)
{
	const char	*s = ctl_args_get(a, name);
	char		 opt[64];

	if (s == NULL || ctl_parse_uint(s, min, max, v) == 0)
		return (0);
	ctl_args_display(a, name, opt, sizeof opt);
	return (ctl_usage_fail(ctx, "bad value '%s' for %s: want an integer "
	    "from %llu to %llu", s, opt, min, max));
}

int
ctl_args_seconds(struct ctl_ctx *ctx, const struct ctl_args *a,
    const char *name, int zero_ok, double *v)
{
	const char	*s = ctl_args_get(a, name);
	char		 opt[64];

	if (s == NULL || ctl_parse_seconds(s, zero_ok, v) == 0)
		return (0);
	ctl_args_display(a, name, opt, sizeof opt);
	return (ctl_usage_fail(ctx, "bad value '%s' for %s: want seconds, %s "
	    "0 and at most %.0f", s, opt, zero_ok ? "from" : "more than",
	    CTL_TIMEOUT_MAX));
}
