/*
 * check_ctl_args.c: nkictl's command table, option parsing, exit codes and
 * input placement, driven through ctl_main and the helpers directly (no
 * nkid needed: connection failures are made with missing and dead sockets).
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "nkir.pb-c.h"
#include "client/nkictl/ctl.h"
#include "client/nkictl/ctl_kernel.h"
#include "client/nkictl/ctl_tensor.h"
#include "client/nkictl/npy.h"
#include "tests/unit/check_main.h"

static char tmpdir[64];
static char *out_buf, *err_buf;

static void
setup(void)
{
	check_dir_make(tmpdir, sizeof tmpdir, "check_ctl_args");
	unsetenv(CTL_SOCKET_ENV);
}

static void
teardown(void)
{
	check_dir_remove(tmpdir);
	free(out_buf);
	free(err_buf);
	out_buf = err_buf = NULL;
}

CHECK_SUITE("ctl_args", setup, teardown, NULL);
CHECK_TCASE(core, 30);
CHECK_TCASE(errors, 20);

/* Run ctl_main on a NULL-terminated word list; out_buf and err_buf hold
 * what it printed. */
static int
run_ctl(const char *first, ...)
{
	char		*argv[64];
	const char	*w;
	size_t		 olen, elen;
	FILE		*out, *err;
	va_list		 ap;
	int		 argc = 0, rc;

	free(out_buf);
	free(err_buf);
	out = open_memstream(&out_buf, &olen);
	err = open_memstream(&err_buf, &elen);
	argv[argc++] = "nkictl";
	va_start(ap, first);
	for (w = first; w != NULL; w = va_arg(ap, const char *))
		argv[argc++] = (char *)w;
	va_end(ap);
	argv[argc] = NULL;
	rc = ctl_main(argc, argv, out, err);
	fclose(out);
	fclose(err);
	return (rc);
}

/* ------------------------------------------------------------ table */

/* Nonzero if s is one line, lower case first, with no final period. */
static int
help_line_ok(const char *s)
{
	size_t	len = strlen(s);

	return (len > 0 && s[0] >= 'a' && s[0] <= 'z' && s[len - 1] != '.' &&
	    strchr(s, '\n') == NULL);
}

CHECK_TEST(core, test_ctl_table_sorted_and_complete)
{
	const struct ctl_cmd	*c;
	const struct ctl_opt	*o, *p;
	char			 word[64];
	size_t			 i;

	ck_assert_uint_gt(ctl_cmd_count, 0);
	for (i = 0; i < ctl_cmd_count; i++) {
		c = ctl_cmd_table[i];
		ck_assert_ptr_nonnull(c->name);
		ck_assert_ptr_nonnull(c->usage);
		ck_assert_ptr_nonnull(c->exec);
		ck_assert_msg(help_line_ok(c->help), "help of '%s': one line, "
		    "lower case, no final period", c->name);
		if (i > 0)
			ck_assert_msg(strcmp(ctl_cmd_table[i - 1]->name,
			    c->name) < 0, "'%s' before '%s': table not sorted",
			    ctl_cmd_table[i - 1]->name, c->name);
		/* the arity: what is missing is named, and in the usage */
		ck_assert_int_ge(c->args.lower, 0);
		ck_assert(c->args.upper == -1 ||
		    c->args.upper >= c->args.lower);
		ck_assert_msg((c->args.lower > 0) == (c->args.what != NULL),
		    "'%s': what names the first operand iff one is needed",
		    c->name);
		if (c->args.what != NULL) {
			sscanf(c->args.what, "%63s", word);
			ck_assert_msg(strstr(c->usage, word) != NULL, "'%s': "
			    "usage does not show '%s'", c->name, word);
		}
		/* every option: named, explained, shown in the usage line,
		 * not the common ones, not twice */
		for (o = c->opts; o != NULL && (o->letter || o->name); o++) {
			ck_assert_msg(help_line_ok(o->help), "'%s': help of an "
			    "option", c->name);
			ck_assert(o->letter != 'h');
			if (o->name != NULL) {
				ck_assert_str_ne(o->name, "help");
				ck_assert_str_ne(o->name, "json");
				snprintf(word, sizeof word, "--%s", o->name);
			} else
				snprintf(word, sizeof word, "-%c", o->letter);
			if (strstr(c->usage, word) == NULL && o->letter)
				snprintf(word, sizeof word, "-%c", o->letter);
			ck_assert_msg(strstr(c->usage, word) != NULL, "'%s': "
			    "usage does not show '%s'", c->name, word);
			for (p = c->opts; p < o; p++)
				ck_assert_msg((!o->letter || p->letter !=
				    o->letter) && (!o->name || !p->name ||
				    strcmp(o->name, p->name) != 0), "'%s': an "
				    "option twice", c->name);
		}
	}
}
END_TEST

static int
fake_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	return (CTL_EXIT_OK);
}

CHECK_TEST(core, test_ctl_find_words_and_groups)
{
	static const struct ctl_cmd cache_ls = { .name = "cache ls",
	    .usage = "", .help = "x", .exec = fake_exec };
	static const struct ctl_cmd cache_rm = { .name = "cache rm",
	    .usage = "", .help = "x", .exec = fake_exec };
	static const struct ctl_cmd cancel = { .name = "cancel", .usage = "",
	    .help = "x", .exec = fake_exec };
	static const struct ctl_cmd compile = { .name = "compile",
	    .usage = "", .help = "x", .exec = fake_exec };
	static const struct ctl_cmd *const t[] = { &cache_ls, &cache_rm,
	    &cancel, &compile };
	char *a1[] = { "cache", "ls", "-l" }, *a2[] = { "cancel", "ls" },
	    *a3[] = { "cache" }, *a4[] = { "cache", "nope" },
	    *a5[] = { "status" }, *a6[] = { "compile" };
	int used = 0;

	ck_assert_ptr_eq(ctl_cmd_find(t, 4, 3, a1, &used), &cache_ls);
	ck_assert_int_eq(used, 2);
	ck_assert_ptr_eq(ctl_cmd_find(t, 4, 2, a2, &used), &cancel);
	ck_assert_int_eq(used, 1);
	ck_assert_ptr_null(ctl_cmd_find(t, 4, 1, a3, &used));
	ck_assert_ptr_null(ctl_cmd_find(t, 4, 2, a4, &used));
	ck_assert(ctl_cmd_is_group(t, 4, "cache"));
	ck_assert(!ctl_cmd_is_group(t, 4, "cach"));
	ck_assert(!ctl_cmd_is_group(t, 4, "cancel"));
	ck_assert_ptr_null(ctl_cmd_find(t, 4, 1, a5, &used));
	ck_assert_ptr_eq(ctl_cmd_find(t, 4, 1, a6, &used), &compile);
	/* the real table */
	ck_assert_ptr_eq(ctl_cmd_find(ctl_cmd_table, ctl_cmd_count, 1, a5,
	    &used), &ctl_status_cmd);
}
END_TEST

/* ------------------------------------------------------------ parser */

/* A command of every kind of option, for the parser's tests. */
static const struct ctl_opt fake_opts[] = {
	{ 'n', "count", "N", "a value with a letter and a name" },
	{ 'v', NULL, NULL, "a flag with a letter only" },
	{ 0, "dry-run", NULL, "a flag with a name only" },
	{ 'i', "input", "FILE", "a value given any number of times" },
	CTL_OPT_END
};
static const struct ctl_cmd fake_cmd = {
	.name = "fake",
	.usage = "A [B] [-n N] [-v] [--dry-run] [-i FILE]...",
	.help = "a command of the tests",
	.opts = fake_opts,
	.args = { 1, 2, "A" },
	.exec = fake_exec,
};
static const struct ctl_cmd fake_first_cmd = {
	.name = "first",
	.usage = "[-v] CMD [ARG...]",
	.help = "a command whose options end at its first operand",
	.opts = fake_opts,
	.args = { 1, -1, "CMD" },
	.flags = CTL_CMD_OPTS_FIRST,
	.exec = fake_exec,
};

static struct ctl_ctx	fake_ctx;
static char		*fake_words[32];

/*
 * Parse the NULL-terminated words after the command word against cmd
 * into a: the parser's answer, 0 to run the command or its exit code
 * (CTL_EXIT_OK after --help: 100 stands for it). out_buf and err_buf
 * hold what it printed.
 */
static int
parse(const struct ctl_cmd *cmd, struct ctl_args *a, ...)
{
	size_t	 olen, elen;
	va_list	 ap;
	char	*w;
	int	 argc = 0, rc;

	free(out_buf);
	free(err_buf);
	free(fake_ctx.err_msg);
	memset(&fake_ctx, 0, sizeof fake_ctx);
	fake_ctx.cmd = cmd;
	fake_ctx.out = open_memstream(&out_buf, &olen);
	fake_ctx.err = open_memstream(&err_buf, &elen);
	fake_words[argc++] = (char *)cmd->name;
	va_start(ap, a);
	while ((w = va_arg(ap, char *)) != NULL)
		fake_words[argc++] = w;
	va_end(ap);
	fake_words[argc] = NULL;
	if (ctl_args_parse(&fake_ctx, argc, fake_words, a, &rc) == 0)
		rc = 0;
	else if (rc == CTL_EXIT_OK)
		rc = 100;
	fclose(fake_ctx.out);
	fclose(fake_ctx.err);
	return (rc);
}

CHECK_TEST(core, test_ctl_args_options_and_operands)
{
	struct ctl_args	 a;
	char *const	*v;
	size_t		 n;

	/* options anywhere (GNU order), in every spelling */
	ck_assert_int_eq(parse(&fake_cmd, &a, "-n", "3", "x", "--input=f1",
	    "-vv", "-i", "f2", "--dry-run", "y", "--json", "--count", "4",
	    NULL), 0);
	ck_assert_int_eq(a.argc, 2);
	ck_assert_str_eq(a.argv[0], "x");
	ck_assert_str_eq(a.argv[1], "y");
	ck_assert_uint_eq(ctl_args_has(&a, "count"), 2);
	ck_assert_str_eq(ctl_args_get(&a, "count"), "4");
	ck_assert_uint_eq(ctl_args_has(&a, "v"), 2);
	ck_assert_ptr_null(ctl_args_get(&a, "v"));
	ck_assert_uint_eq(ctl_args_has(&a, "dry-run"), 1);
	v = ctl_args_values(&a, "input", &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(v[0], "f1");
	ck_assert_str_eq(v[1], "f2");
	ck_assert_int_eq(fake_ctx.json, 1);
	ck_assert(ctl_args_takes(&a, "input"));
	/* an option the command does not have was never given */
	ck_assert(!ctl_args_takes(&a, "neff"));
	ck_assert_uint_eq(ctl_args_has(&a, "neff"), 0);
	ck_assert_ptr_null(ctl_args_get(&a, "neff"));
	ck_assert_ptr_null(ctl_args_values(&a, "neff", &n));
	ck_assert_uint_eq(n, 0);
	ck_assert_str_eq(out_buf, "");
	ck_assert_str_eq(err_buf, "");
	ctl_args_release(&a);

	/* nothing given; "--" ends the options */
	ck_assert_int_eq(parse(&fake_cmd, &a, "--", "-v", NULL), 0);
	ck_assert_int_eq(a.argc, 1);
	ck_assert_str_eq(a.argv[0], "-v");
	ck_assert_uint_eq(ctl_args_has(&a, "v"), 0);
	ck_assert_ptr_null(ctl_args_get(&a, "count"));
	ck_assert_ptr_null(ctl_args_values(&a, "input", &n));
	ck_assert_int_eq(fake_ctx.json, 0);
	ctl_args_release(&a);

	/* CTL_CMD_OPTS_FIRST: what follows the first operand is its own */
	ck_assert_int_eq(parse(&fake_first_cmd, &a, "-v", "sh", "-n", "3",
	    "--json", NULL), 0);
	ck_assert_int_eq(a.argc, 4);
	ck_assert_str_eq(a.argv[0], "sh");
	ck_assert_str_eq(a.argv[1], "-n");
	ck_assert_uint_eq(ctl_args_has(&a, "v"), 1);
	ck_assert_uint_eq(ctl_args_has(&a, "count"), 0);
	ck_assert_int_eq(fake_ctx.json, 0);
	ctl_args_release(&a);
}
END_TEST

CHECK_TEST(errors, test_ctl_args_unknown_option)
{
	static const char *const usage = "usage: nkictl [-s SOCKET] [--json] "
	    "[--timeout S] fake A [B] [-n N] [-v] [--dry-run] [-i FILE]...\n";
	struct ctl_args	a;
	char		want[512];

	ck_assert_int_eq(parse(&fake_cmd, &a, "x", "-x", NULL),
	    CTL_EXIT_USAGE);
	snprintf(want, sizeof want, "nkictl: fake: unknown option '-x'\n%s",
	    usage);
	ck_assert_str_eq(err_buf, want);
	ck_assert_str_eq(out_buf, "");
	ctl_args_release(&a);
	ck_assert_int_eq(parse(&fake_cmd, &a, "--nope=1", "x", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "unknown option '--nope'\n"));
	ctl_args_release(&a);
	/* a letter that only other commands have, combined flags */
	ck_assert_int_eq(parse(&fake_cmd, &a, "x", "-vq", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "unknown option '-q'\n"));
	ctl_args_release(&a);
	/* a value given to a flag */
	ck_assert_int_eq(parse(&fake_cmd, &a, "x", "--dry-run=yes", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "nkictl: fake: option "
	    "'--dry-run' takes no value\n"));
	ctl_args_release(&a);
	/* a value missing, short and long */
	ck_assert_int_eq(parse(&fake_cmd, &a, "x", "-n", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "option '-n' needs a value\n"));
	ck_assert_ptr_nonnull(strstr(err_buf, usage));
	ctl_args_release(&a);
	ck_assert_int_eq(parse(&fake_cmd, &a, "x", "--input", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "option '--input' needs a "
	    "value\n"));
	ctl_args_release(&a);
	/* the common options are every command's, no other */
	ck_assert_int_eq(parse(&ctl_status_cmd, &a, "--json", NULL), 0);
	ctl_args_release(&a);
	ck_assert_int_eq(parse(&ctl_status_cmd, &a, "-v", NULL),
	    CTL_EXIT_USAGE);
	ctl_args_release(&a);
}
END_TEST

CHECK_TEST(errors, test_ctl_args_arity)
{
	struct ctl_args	a;

	ck_assert_int_eq(parse(&fake_cmd, &a, "-v", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "nkictl: fake: missing A\n"));
	ck_assert_ptr_nonnull(strstr(err_buf, "usage: nkictl"));
	ctl_args_release(&a);
	ck_assert_int_eq(parse(&fake_cmd, &a, "a", "b", "c", "d", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "nkictl: fake: unexpected "
	    "argument 'c'\n"));
	ctl_args_release(&a);
	ck_assert_int_eq(parse(&fake_cmd, &a, "a", "b", NULL), 0);
	ctl_args_release(&a);
	/* no upper bound */
	ck_assert_int_eq(parse(&fake_first_cmd, &a, "a", "b", "c", "d", "e",
	    NULL), 0);
	ck_assert_int_eq(a.argc, 5);
	ctl_args_release(&a);
	/* through ctl_main, for real commands */
	ck_assert_int_eq(run_ctl("cancel", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "nkictl: cancel: missing ID"));
	ck_assert_int_eq(run_ctl("cancel", "1", "2", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "unexpected argument '2'"));
	ck_assert_int_eq(run_ctl("cache", "pin", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "missing KEY"));
	ck_assert_int_eq(run_ctl("cache", "ls", "a", "b", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("lock", NULL), CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("warmup", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "missing MANIFEST"));
}
END_TEST

CHECK_TEST(errors, test_ctl_args_values_checked)
{
	struct ctl_args		a;
	unsigned long long	v = 7;
	double			d = 7;

	ck_assert_int_eq(parse(&fake_cmd, &a, "x", NULL), 0);
	ck_assert_int_eq(ctl_args_uint(&fake_ctx, &a, "count", 1, 9, &v), 0);
	ck_assert_uint_eq(v, 7);		/* not given: untouched */
	ctl_args_release(&a);
	ck_assert_int_eq(parse(&fake_cmd, &a, "x", "-n", "9", NULL), 0);
	ck_assert_int_eq(ctl_args_uint(&fake_ctx, &a, "count", 1, 9, &v), 0);
	ck_assert_uint_eq(v, 9);
	ctl_args_release(&a);

	ck_assert_int_eq(parse(&fake_cmd, &a, "x", "--count=10", NULL), 0);
	free(err_buf);
	fake_ctx.err = open_memstream(&err_buf, &(size_t){ 0 });
	ck_assert_int_eq(ctl_args_uint(&fake_ctx, &a, "count", 1, 9, &v),
	    CTL_EXIT_USAGE);
	ck_assert_int_eq(ctl_args_seconds(&fake_ctx, &a, "count", 0, &d),
	    0);
	ck_assert(d == 10);
	fclose(fake_ctx.err);
	ck_assert_ptr_nonnull(strstr(err_buf, "nkictl: fake: bad value '10' "
	    "for -n: want an integer from 1 to 9\n"));
	ctl_args_release(&a);

	ck_assert_int_eq(parse(&fake_cmd, &a, "x", "-n", "0", NULL), 0);
	free(err_buf);
	fake_ctx.err = open_memstream(&err_buf, &(size_t){ 0 });
	ck_assert_int_eq(ctl_args_seconds(&fake_ctx, &a, "count", 0, &d),
	    CTL_EXIT_USAGE);
	ck_assert_int_eq(ctl_args_seconds(&fake_ctx, &a, "count", 1, &d), 0);
	ck_assert(d == 0);
	fclose(fake_ctx.err);
	ck_assert_ptr_nonnull(strstr(err_buf, "bad value '0' for -n: want "
	    "seconds, more than 0"));
	ctl_args_release(&a);

	/* through ctl_main */
	ck_assert_int_eq(run_ctl("ping", "-n", "0", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "nkictl: ping: bad value '0' "
	    "for -n: want an integer from 1 to 10000000\n"));
	ck_assert_int_eq(run_ctl("lock", "-w", "-1", "true", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("cache", "gc", "--min-age", "soon", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "for --min-age"));
	ck_assert_int_eq(run_ctl("cache", "ls", "--cache-dir", "/a",
	    "--state-dir", "/b", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "exclude each other"));
}
END_TEST

/* ------------------------------------------------------------ help */

CHECK_TEST(core, test_ctl_help_from_table)
{
	const struct ctl_cmd	*c;
	const struct ctl_opt	*o;
	struct ctl_args		 a;
	char			*help, *words[3], want[256];
	size_t			 i;

	/* -h/--help: the usage, the help line, every option with its help,
	 * then nothing else is parsed */
	ck_assert_int_eq(parse(&fake_cmd, &a, "-h", "-x", NULL), 100);
	ck_assert_str_eq(out_buf,
	    "usage: nkictl [-s SOCKET] [--json] [--timeout S] fake A [B] "
	    "[-n N] [-v] [--dry-run] [-i FILE]...\n"
	    "a command of the tests\n"
	    "\n"
	    "options:\n"
	    "  -n, --count N     a value with a letter and a name\n"
	    "  -v                a flag with a letter only\n"
	    "      --dry-run     a flag with a name only\n"
	    "  -i, --input FILE  a value given any number of times\n"
	    "      --json        print one JSON object\n"
	    "  -h, --help        print this help\n");
	ck_assert_str_eq(err_buf, "");
	ctl_args_release(&a);

	/* for every command: `help CMD` and `CMD --help` say the same, from
	 * its table */
	for (i = 0; i < ctl_cmd_count; i++) {
		c = ctl_cmd_table[i];
		ck_assert_uint_lt(strlen(c->name), 64);
		words[0] = strdup(c->name);
		words[1] = strchr(words[0], ' ');
		if (words[1] != NULL)
			*words[1]++ = '\0';
		ck_assert_int_eq(run_ctl("help", words[0], words[1], NULL),
		    CTL_EXIT_OK);
		help = strdup(out_buf);
		ck_assert_int_eq(words[1] != NULL ? run_ctl(words[0],
		    words[1], "--help", NULL) : run_ctl(words[0], "-h", NULL),
		    CTL_EXIT_OK);
		ck_assert_str_eq(out_buf, help);
		ck_assert_str_eq(err_buf, "");
		ck_assert_ptr_nonnull(strstr(help, c->help));
		for (o = c->opts; o != NULL && (o->letter || o->name); o++) {
			if (o->name != NULL)
				snprintf(want, sizeof want, "--%s%s%s  ",
				    o->name, o->value ? " " : "",
				    o->value ? o->value : "");
			else
				snprintf(want, sizeof want, "  -%c%s%s  ",
				    o->letter, o->value ? " " : "",
				    o->value ? o->value : "");
			ck_assert_msg(strstr(help, want) != NULL, "help %s: "
			    "no '%s'", c->name, want);
			ck_assert_ptr_nonnull(strstr(help, o->help));
		}
		ck_assert_ptr_nonnull(strstr(help, "  -h, --help "));
		free(help);
		free(words[0]);
	}
}
END_TEST

/* ------------------------------------------------------------ usage */

CHECK_TEST(errors, test_ctl_usage_exit_codes)
{
	ck_assert_int_eq(run_ctl(NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "nkictl: missing COMMAND"));
	ck_assert_ptr_nonnull(strstr(err_buf, "usage: nkictl"));
	ck_assert_int_eq(run_ctl("bogus", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "unknown command 'bogus'"));
	ck_assert_int_eq(run_ctl("--bogus", "status", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "unknown option '--bogus'"));
	ck_assert_int_eq(run_ctl("-x", "status", NULL), CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("-s", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "needs a value"));
	ck_assert_int_eq(run_ctl("-s", "", "status", NULL), CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("--timeout", "0", "status", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("--timeout", "-1", "status", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("--timeout=abc", "status", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "bad value 'abc' for "
	    "--timeout"));
	ck_assert_int_eq(run_ctl("--timeout", "nan", "status", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("status", "extra", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "nkictl: status: unexpected "
	    "argument 'extra'"));
	ck_assert_ptr_nonnull(strstr(err_buf, "usage: nkictl"));
	ck_assert_int_eq(run_ctl("status", "-x", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "unknown option '-x'"));
	ck_assert_int_eq(run_ctl("status", "--nope", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "unknown option '--nope'"));
	ck_assert_int_eq(run_ctl("ping", "-n", "0", NULL), CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("ping", "-n", "abc", NULL), CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("ping", "-n", "-3", NULL), CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("ping", "-n", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "option '-n' needs a value"));
	ck_assert_int_eq(run_ctl("ping", "-n", "99999999999", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("run", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "missing KERNEL"));
	ck_assert_int_eq(run_ctl("run", "k", "x.npy", NULL), CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("run", "k", "-c", "x", NULL), CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("compile", "k", "-i", "a=b.npy", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "unknown option '-i'"));
	ck_assert_int_eq(run_ctl("simulate", "k", "--batch", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "unknown option '--batch'"));
	ck_assert_int_eq(run_ctl("help", "nope", NULL), CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("help", "status", "x", NULL), CTL_EXIT_USAGE);
}
END_TEST

CHECK_TEST(core, test_ctl_help_and_version_succeed)
{
	size_t	i;

	ck_assert_int_eq(run_ctl("help", NULL), CTL_EXIT_OK);
	for (i = 0; i < ctl_cmd_count; i++)
		ck_assert_ptr_nonnull(strstr(out_buf, ctl_cmd_table[i]->name));
	ck_assert_int_eq(run_ctl("--help", NULL), CTL_EXIT_OK);
	ck_assert_ptr_nonnull(strstr(out_buf, "exit status"));
	ck_assert_ptr_nonnull(strstr(out_buf, "-s, --socket SOCKET"));
	ck_assert_int_eq(run_ctl("help", "run", NULL), CTL_EXIT_OK);
	ck_assert_ptr_nonnull(strstr(out_buf, "-i [NAME=]FILE.npy"));
	ck_assert_int_eq(run_ctl("help", "cache", NULL), CTL_EXIT_OK);
	ck_assert_ptr_nonnull(strstr(out_buf, "cache verify"));
	ck_assert_int_eq(run_ctl("run", "--help", NULL), CTL_EXIT_OK);
	ck_assert_ptr_nonnull(strstr(out_buf, "usage: nkictl"));
	ck_assert_int_eq(run_ctl("status", "-h", NULL), CTL_EXIT_OK);
	ck_assert_int_eq(run_ctl("--version", NULL), CTL_EXIT_OK);
	ck_assert_str_eq(out_buf, "nkictl " NKID_VERSION "\n");
	ck_assert_str_eq(err_buf, "");
}
END_TEST

CHECK_TEST(core, test_ctl_parse_numbers)
{
	unsigned long long	v;
	double			d;

	ck_assert_int_eq(ctl_parse_uint("10", 1, 10, &v), 0);
	ck_assert_uint_eq(v, 10);
	ck_assert_int_eq(ctl_parse_uint("11", 1, 10, &v), -1);
	ck_assert_int_eq(ctl_parse_uint("0", 1, 10, &v), -1);
	ck_assert_int_eq(ctl_parse_uint("", 0, 10, &v), -1);
	ck_assert_int_eq(ctl_parse_uint(" 1", 0, 10, &v), -1);
	ck_assert_int_eq(ctl_parse_uint("+1", 0, 10, &v), -1);
	ck_assert_int_eq(ctl_parse_uint("1x", 0, 10, &v), -1);
	ck_assert_int_eq(ctl_parse_uint("99999999999999999999999", 0,
	    ~0ULL, &v), -1);
	ck_assert_int_eq(ctl_parse_seconds("0.25", 0, &d), 0);
	ck_assert(d == 0.25);
	ck_assert_int_eq(ctl_parse_seconds("inf", 0, &d), -1);
	ck_assert_int_eq(ctl_parse_seconds("1e300", 0, &d), -1);
	ck_assert_int_eq(ctl_parse_seconds("0", 0, &d), -1);
	ck_assert_int_eq(ctl_parse_seconds("5s", 0, &d), -1);
	ck_assert_int_eq(ctl_parse_seconds("0", 1, &d), 0);
	ck_assert(d == 0);
	ck_assert_int_eq(ctl_parse_seconds("-0.5", 1, &d), -1);
}
END_TEST

/* ------------------------------------------------------------ connect */

CHECK_TEST(errors, test_ctl_cannot_connect_exits_3)
{
	char			 sock[600], file[600];
	struct sockaddr_un	 sa = { .sun_family = AF_UNIX };
	struct timespec		 ts0, ts1;
	double			 waited;
	FILE			*f;
	int			 fd;

	ck_assert_int_eq(run_ctl("-s", "/nonexistent/nkid.sock", "status",
	    NULL), CTL_EXIT_CONNECT);
	ck_assert_ptr_nonnull(strstr(err_buf, "nkictl: cannot connect to nkid "
	    "at '/nonexistent/nkid.sock': No such file or directory\n"));
	ck_assert_ptr_nonnull(strstr(err_buf, "systemctl status nkid"));
	ck_assert_str_eq(out_buf, "");

	/* $NKID_SOCKET when there is no -s; -s wins over it */
	setenv(CTL_SOCKET_ENV, "/nonexistent/env.sock", 1);
	ck_assert_int_eq(run_ctl("ping", NULL), CTL_EXIT_CONNECT);
	ck_assert_ptr_nonnull(strstr(err_buf, "'/nonexistent/env.sock'"));
	ck_assert_int_eq(run_ctl("-s", "/nonexistent/s.sock", "ping", NULL),
	    CTL_EXIT_CONNECT);
	ck_assert_ptr_nonnull(strstr(err_buf, "'/nonexistent/s.sock'"));
	unsetenv(CTL_SOCKET_ENV);

	/* a regular file */
	snprintf(file, sizeof file, "%s/file", tmpdir);
	f = fopen(file, "w");
	fclose(f);
	ck_assert_int_eq(run_ctl("-s", file, "status", NULL),
	    CTL_EXIT_CONNECT);
	ck_assert_ptr_nonnull(strstr(err_buf, "not a socket"));

	/* a socket nobody listens on: gRPC says UNAVAILABLE, the probe
	 * tells why */
	snprintf(sock, sizeof sock, "%s/dead.sock", tmpdir);
	ck_assert_uint_lt(strlen(sock), sizeof sa.sun_path);
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	/* (a socket that exists is a nkid that may come back: waited for
	 * NKID_RECONNECT_TIMEOUT seconds, here none) */
	setenv("NKID_RECONNECT_TIMEOUT", "0", 1);
	ck_assert_int_eq(run_ctl("-s", sock, "--timeout", "5", "status",
	    NULL), CTL_EXIT_CONNECT);
	ck_assert_ptr_nonnull(strstr(err_buf, "Connection refused"));
	/* waited for as long as it says, then the same answer */
	setenv("NKID_RECONNECT_TIMEOUT", "0.3", 1);
	clock_gettime(CLOCK_MONOTONIC, &ts0);
	ck_assert_int_eq(run_ctl("-s", sock, "status", NULL),
	    CTL_EXIT_CONNECT);
	clock_gettime(CLOCK_MONOTONIC, &ts1);
	waited = (double)(ts1.tv_sec - ts0.tv_sec) +
	    (double)(ts1.tv_nsec - ts0.tv_nsec) / 1e9;
	ck_assert_msg(waited >= 0.3 && waited < 3, "waited %.3f s", waited);
	ck_assert_ptr_nonnull(strstr(err_buf, "Connection refused"));
	/* a value that is not a number of seconds is named */
	setenv("NKID_RECONNECT_TIMEOUT", "soon", 1);
	ck_assert_int_eq(run_ctl("-s", sock, "status", NULL),
	    CTL_EXIT_CONNECT);
	ck_assert_ptr_nonnull(strstr(err_buf, "NKID_RECONNECT_TIMEOUT must be "
	    "a number of seconds"));
	unsetenv("NKID_RECONNECT_TIMEOUT");
	close(fd);

	/* a path too long for a Unix socket */
	memset(sock, 'a', 200);
	sock[0] = '/';
	sock[200] = '\0';
	ck_assert_int_eq(run_ctl("-s", sock, "status", NULL),
	    CTL_EXIT_CONNECT);
	ck_assert_ptr_nonnull(strstr(err_buf, "longer than"));
}
END_TEST

CHECK_TEST(errors, test_ctl_version_without_nkid)
{
	cJSON	*o;

	ck_assert_int_eq(run_ctl("-s", "/nonexistent/nkid.sock", "version",
	    NULL), CTL_EXIT_OK);
	ck_assert_ptr_nonnull(strstr(out_buf, "nkictl " NKID_VERSION "\n"));
	ck_assert_ptr_nonnull(strstr(out_buf, "No such file or directory"));
	ck_assert_int_eq(run_ctl("-s", "/nonexistent/nkid.sock", "--json",
	    "version", NULL), CTL_EXIT_OK);
	o = cJSON_Parse(out_buf);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(cJSON_GetObjectItem(o, "client")->valuestring,
	    NKID_VERSION);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "daemon")));
	ck_assert(cJSON_IsString(cJSON_GetObjectItem(o, "error")));
	cJSON_Delete(o);
	/* --json after the command works too */
	ck_assert_int_eq(run_ctl("-s", "/nonexistent/nkid.sock", "version",
	    "--json", NULL), CTL_EXIT_OK);
	ck_assert_int_eq(out_buf[0], '{');
}
END_TEST

/* ------------------------------------------------------------ inputs */

/* A saved kernel file (magic + KernelRef) of the given format with params
 * a (float32), b (bfloat16), q (float8_e5m2), each of shape (n,) if n is
 * not 0; returns it read back (its path in kernel_path). */
static char kernel_path[600];

static Nkid__V1__KernelRef *
kernel_make_shaped(const char *format, uint64_t n1)
{
	Nkir__V1__Kernel ir = NKIR__V1__KERNEL__INIT;
	Nkir__V1__Tensor t[3] = { NKIR__V1__TENSOR__INIT,
	    NKIR__V1__TENSOR__INIT, NKIR__V1__TENSOR__INIT };
	Nkir__V1__Tensor *tp[3] = { &t[0], &t[1], &t[2] };
	Nkir__V1__Param p[3] = { NKIR__V1__PARAM__INIT, NKIR__V1__PARAM__INIT,
	    NKIR__V1__PARAM__INIT };
	Nkir__V1__Param *pp[3] = { &p[0], &p[1], &p[2] };
	Nkid__V1__Kernel k = NKID__V1__KERNEL__INIT;
	Nkid__V1__KernelRef ref = NKID__V1__KERNEL_REF__INIT, *back;
	uint8_t irbuf[512], kbuf[1024];
	char path[600], err[1024];
	FILE *f;
	size_t n;

	uint64_t shape[1] = { n1 };

	t[0].dtype = NKIR__V1__DTYPE__DT_FLOAT32;
	t[1].dtype = NKIR__V1__DTYPE__DT_BFLOAT16;
	t[2].dtype = NKIR__V1__DTYPE__DT_FP8_E5M2;
	for (n = 0; n1 > 0 && n < 3; n++) {
		t[n].n_shape = 1;
		t[n].shape = shape;
	}
	p[0].name = "a";
	p[0].tensor = 0;
	p[1].name = "b";
	p[1].tensor = 1;
	p[2].name = "q";
	p[2].tensor = 2;
	ir.name = "k";
	ir.n_tensors = 3;
	ir.tensors = tp;
	ir.n_params = 3;
	ir.params = pp;
	ck_assert_uint_lt(nkir__v1__kernel__get_packed_size(&ir),
	    sizeof irbuf);
	n = nkir__v1__kernel__pack(&ir, irbuf);
	k.name = "k";
	k.format = (char *)format;
	k.ir.data = irbuf;
	k.ir.len = n;
	ref.kernel = &k;
	ref.target = "trn2";
	memcpy(kbuf, CTL_KERNEL_MAGIC, CTL_KERNEL_MAGIC_LEN);
	n = CTL_KERNEL_MAGIC_LEN + nkid__v1__kernel_ref__pack(&ref,
	    kbuf + CTL_KERNEL_MAGIC_LEN);
	snprintf(path, sizeof path, "%s/k.kernel", tmpdir);
	snprintf(kernel_path, sizeof kernel_path, "%s", path);
	f = fopen(path, "wb");
	ck_assert_uint_eq(fwrite(kbuf, 1, n, f), n);
	fclose(f);
	ck_assert_msg(ctl_kernel_read(path, &back, err, sizeof err) == 0,
	    "%s", err);
	ck_assert_str_eq(back->kernel->format, format);
	ck_assert_str_eq(back->target, "trn2");
	return (back);
}

static Nkid__V1__KernelRef *
kernel_make(const char *format)
{
	return (kernel_make_shaped(format, 0));
}

static const char *
npy_make(const char *name, const char *dtype, size_t n)
{
	static char	path[600];
	char		err[1024], data[64] = { 0 };
	uint64_t	shape[1] = { n };

	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	ck_assert_msg(npy_array_write(path, dtype, 1, shape, data,
	    n * npy_dtype_size(dtype), err, sizeof err) == 0, "%s", err);
	return (path);
}

static int
inputs(Nkid__V1__KernelRef *k, struct ctl_tensor_inputs *in, ...)
{
	char		*specs[16], *s;
	size_t		 olen, elen, n = 0;
	struct ctl_ctx	 ctx;
	va_list		 ap;
	int		 rc;

	memset(&ctx, 0, sizeof ctx);
	ctx.cmd = &ctl_run_cmd;
	free(out_buf);
	free(err_buf);
	ctx.out = open_memstream(&out_buf, &olen);
	ctx.err = open_memstream(&err_buf, &elen);
	va_start(ap, in);
	while ((s = va_arg(ap, char *)) != NULL)
		specs[n++] = strdup(s);
	va_end(ap);
	rc = ctl_tensor_inputs_load(&ctx, k->kernel, specs, n, in);
	while (n > 0)
		free(specs[--n]);
	fclose(ctx.out);
	fclose(ctx.err);
	free(ctx.err_msg);	/* kept for --json, which is not asked here */
	return (rc);
}

CHECK_TEST(core, test_ctl_inputs_placed_by_name)
{
	Nkid__V1__KernelRef		*k = kernel_make("nkir/1");
	char				 sa[700], sb[700], sq[700];
	char				 sbad[700];
	struct ctl_tensor_inputs	 in;

	snprintf(sa, sizeof sa, "a=%s", npy_make("a.npy", "float32", 4));
	snprintf(sb, sizeof sb, "b=%s", npy_make("b.npy", "bfloat16", 4));
	/* a '<V1' file: takes the parameter's float8 dtype */
	snprintf(sq, sizeof sq, "q=%s", npy_make("q.npy", "float8_e4m3fn", 4));

	/* by name, in any order */
	ck_assert_int_eq(inputs(k, &in, sq, sa, sb, NULL), CTL_EXIT_OK);
	ck_assert_uint_eq(in.n, 3);
	ck_assert_str_eq(in.ptrs[0]->name, "a");
	ck_assert_str_eq(in.ptrs[0]->dtype, "float32");
	ck_assert_str_eq(in.ptrs[1]->name, "b");
	ck_assert_str_eq(in.ptrs[1]->dtype, "bfloat16");
	ck_assert_str_eq(in.ptrs[2]->name, "q");
	ck_assert_str_eq(in.ptrs[2]->dtype, "float8_e5m2");
	ck_assert_uint_eq(in.ptrs[0]->data.len, 16);
	ctl_tensor_inputs_release(&in);

	/* unnamed ones fill the rest in order */
	ck_assert_int_eq(inputs(k, &in, sb, sa + 2, sq + 2, NULL), CTL_EXIT_OK);
	ck_assert_str_eq(in.ptrs[0]->name, "a");
	ck_assert_str_eq(in.ptrs[0]->dtype, "float32");
	ck_assert_str_eq(in.ptrs[2]->dtype, "float8_e5m2");
	ctl_tensor_inputs_release(&in);

	/* usage errors: unknown name, twice, missing, too many */
	ck_assert_int_eq(inputs(k, &in, sa, sb, "zz=x.npy", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "no parameter 'zz' (parameters: "
	    "a, b, q)"));
	ctl_tensor_inputs_release(&in);
	ck_assert_int_eq(inputs(k, &in, sa, sa, sq, NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "input 'a' given twice"));
	ctl_tensor_inputs_release(&in);
	ck_assert_int_eq(inputs(k, &in, sa, sb, NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "missing input 'q'"));
	ctl_tensor_inputs_release(&in);
	ck_assert_int_eq(inputs(k, &in, sa, sb, sq, sa + 2, NULL),
	    CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "takes 3 inputs"));
	ctl_tensor_inputs_release(&in);

	/* file errors: missing file, a '<V1' file for a float32 parameter */
	ck_assert_int_eq(inputs(k, &in, "a=/nonexistent.npy", sb, sq, NULL),
	    CTL_EXIT_FAIL);
	ck_assert_ptr_nonnull(strstr(err_buf, "cannot read "
	    "'/nonexistent.npy'"));
	ctl_tensor_inputs_release(&in);
	snprintf(sbad, sizeof sbad, "a=%s", sq + 2);
	ck_assert_int_eq(inputs(k, &in, sbad, sb, sq, NULL), CTL_EXIT_FAIL);
	ck_assert_ptr_nonnull(strstr(err_buf, "raw 1-byte dtype"));
	ctl_tensor_inputs_release(&in);
	ctl_kernel_free(k);
}
END_TEST

CHECK_TEST(core, test_ctl_inputs_opaque_format_in_order)
{
	Nkid__V1__KernelRef		*k = kernel_make("penguin");
	char				 sa[700];
	struct ctl_tensor_inputs	 in;

	snprintf(sa, sizeof sa, "x=%s", npy_make("a.npy", "int8", 3));
	ck_assert_int_eq(inputs(k, &in, sa + 2, sa, NULL), CTL_EXIT_OK);
	ck_assert_uint_eq(in.n, 2);
	ck_assert_str_eq(in.ptrs[0]->name, "");
	ck_assert_str_eq(in.ptrs[1]->name, "x");
	ck_assert_str_eq(in.ptrs[1]->dtype, "int8");
	ctl_tensor_inputs_release(&in);
	ctl_kernel_free(k);
}
END_TEST

CHECK_TEST(core, test_ctl_input_spec_split)
{
	char	*name, *file;

	ck_assert_int_eq(ctl_tensor_spec_split("a_1=x=y.npy", &name, &file), 0);
	ck_assert_str_eq(name, "a_1");
	ck_assert_str_eq(file, "x=y.npy");
	free(name);
	ck_assert_int_eq(ctl_tensor_spec_split("./a=b.npy", &name, &file), 0);
	ck_assert_ptr_null(name);
	ck_assert_str_eq(file, "./a=b.npy");
	free(file);
	ck_assert_int_eq(ctl_tensor_spec_split("=b.npy", &name, &file), 0);
	ck_assert_ptr_null(name);
	free(file);
	ck_assert_int_eq(ctl_tensor_spec_split("1a=b.npy", &name, &file), 0);
	ck_assert_ptr_null(name);
	free(file);
}
END_TEST

CHECK_TEST(errors, test_ctl_kernel_read_errors)
{
	Nkid__V1__KernelRef	*k;
	char			 path[600], err[1024];
	FILE			*f;

	ck_assert_int_eq(ctl_kernel_read("/nonexistent.nkir", &k, err,
	    sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "cannot read kernel "
	    "'/nonexistent.nkir'"));
	snprintf(path, sizeof path, "%s/junk", tmpdir);
	f = fopen(path, "w");
	fputs("\xff\xff\xff not a kernel", f);
	fclose(f);
	ck_assert_int_eq(ctl_kernel_read(path, &k, err, sizeof err), -1);
	ck_assert_ptr_null(k);
	ck_assert_ptr_nonnull(strstr(err, "not a saved kernel"));
	/* the magic, then garbage; then nothing */
	f = fopen(path, "w");
	fputs(CTL_KERNEL_MAGIC "\xff\xff\xff", f);
	fclose(f);
	ck_assert_int_eq(ctl_kernel_read(path, &k, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "malformed"));
	f = fopen(path, "w");
	fputs(CTL_KERNEL_MAGIC, f);
	fclose(f);
	ck_assert_int_eq(ctl_kernel_read(path, &k, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "no kernel"));
	/* a directory */
	ck_assert_int_eq(ctl_kernel_read(tmpdir, &k, err, sizeof err), -1);
}
END_TEST

CHECK_TEST(core, test_ctl_outputs_names_stay_in_dir)
{
	Nkid__V1__Tensor t[3] = { NKID__V1__TENSOR__INIT,
	    NKID__V1__TENSOR__INIT, NKID__V1__TENSOR__INIT };
	Nkid__V1__Tensor *tp[3] = { &t[0], &t[1], &t[2] };
	uint64_t shape[1] = { 2 };
	uint8_t data[8] = { 0 };
	char dir[600], p[700];
	size_t olen, elen;
	struct ctl_ctx ctx;
	int i;

	for (i = 0; i < 3; i++) {
		t[i].dtype = "float32";
		t[i].n_shape = 1;
		t[i].shape = shape;
		t[i].data.data = data;
		t[i].data.len = 8;
	}
	t[0].name = "../evil";
	t[1].name = "c";
	t[2].name = "c";
	memset(&ctx, 0, sizeof ctx);
	ctx.cmd = &ctl_run_cmd;
	ctx.out = open_memstream(&out_buf, &olen);
	ctx.err = open_memstream(&err_buf, &elen);
	snprintf(dir, sizeof dir, "%s/out", tmpdir);
	ck_assert_int_eq(ctl_tensor_outputs_write(&ctx, dir, tp, 3, NULL),
	    CTL_EXIT_OK);
	fclose(ctx.out);
	fclose(ctx.err);
	snprintf(p, sizeof p, "%s/output0.npy", dir);
	ck_assert_int_eq(access(p, F_OK), 0);
	snprintf(p, sizeof p, "%s/c.npy", dir);
	ck_assert_int_eq(access(p, F_OK), 0);
	snprintf(p, sizeof p, "%s/c_2.npy", dir);
	ck_assert_int_eq(access(p, F_OK), 0);
	snprintf(p, sizeof p, "%s/evil.npy", tmpdir);
	ck_assert_int_ne(access(p, F_OK), 0);
	ck_assert_ptr_nonnull(strstr(out_buf, "(2,)"));
}
END_TEST

CHECK_TEST(errors, test_ctl_inputs_dtype_and_shape_checked)
{
	Nkid__V1__KernelRef		*k = kernel_make_shaped("nkir/1", 4);
	char				 sa[700], sb[700], sq[700], s3[700];
	char				 si[700];
	struct ctl_tensor_inputs	 in;

	snprintf(sa, sizeof sa, "a=%s", npy_make("a.npy", "float32", 4));
	snprintf(sb, sizeof sb, "b=%s", npy_make("b.npy", "bfloat16", 4));
	snprintf(sq, sizeof sq, "q=%s", npy_make("q.npy", "float8_e4m3fn", 4));
	snprintf(s3, sizeof s3, "a=%s", npy_make("a3.npy", "float32", 3));
	snprintf(si, sizeof si, "a=%s", npy_make("ai.npy", "int8", 4));
	ck_assert_int_eq(inputs(k, &in, sa, sb, sq, NULL), CTL_EXIT_OK);
	ctl_tensor_inputs_release(&in);
	/* a shape or a dtype other than the parameter's is a usage error,
	 * found before nkid is asked */
	ck_assert_int_eq(inputs(k, &in, s3, sb, sq, NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "nkictl: run: input 'a' of "
	    "kernel 'k' from '"));
	ck_assert_ptr_nonnull(strstr(err_buf, "a3.npy' has shape (3,), the "
	    "parameter is (4,)\n"));
	ctl_tensor_inputs_release(&in);
	ck_assert_int_eq(inputs(k, &in, si, sb, sq, NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "has dtype int8, the parameter "
	    "is float32"));
	ctl_tensor_inputs_release(&in);
	/* through ctl_main: exit 2 even with nkid nowhere (not 3, not 1) */
	ck_assert_int_eq(run_ctl("-s", "/nonexistent/nkid.sock", "run",
	    kernel_path, "-i", s3, "-i", sb, "-i", sq, NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "has shape (3,)"));
	ck_assert_int_eq(run_ctl("-s", "/nonexistent/nkid.sock", "--json",
	    "simulate", kernel_path, "-i", si, "-i", sb, "-i", sq, NULL),
	    CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(out_buf, "\"code\":\"USAGE\""));
	/* benchmark sends shapes: no -i needed, none read */
	memset(&in, 0, sizeof in);
	{
		struct ctl_ctx	ctx;

		memset(&ctx, 0, sizeof ctx);
		ctx.cmd = &ctl_benchmark_cmd;
		ctx.err = ctx.out = fopen("/dev/null", "w");
		ck_assert_int_eq(ctl_tensor_inputs_shapes(&ctx, k->kernel,
		    &in), CTL_EXIT_OK);
		ck_assert_uint_eq(in.n, 3);
		ck_assert_str_eq(in.ptrs[2]->name, "q");
		ck_assert_str_eq(in.ptrs[2]->dtype, "float8_e5m2");
		ck_assert_uint_eq(in.ptrs[2]->n_shape, 1);
		ck_assert_uint_eq(in.ptrs[2]->shape[0], 4);
		ck_assert_uint_eq(in.ptrs[2]->data.len, 0);
		ctl_tensor_inputs_release(&in);
		fclose(ctx.out);
	}
	ctl_kernel_free(k);
	k = kernel_make("penguin");
	ck_assert_int_eq(run_ctl("-s", "/nonexistent/nkid.sock", "benchmark",
	    kernel_path, NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "does not tell its parameters: "
	    "give each with -i"));
	ctl_kernel_free(k);
}
END_TEST

/* The {"error": ...} object that --json prints for a failure. */
static void
json_error_is(const char *code, int exit)
{
	cJSON	*o, *e;

	o = cJSON_Parse(out_buf);
	ck_assert_msg(o != NULL, "not JSON: '%s'", out_buf);
	e = cJSON_GetObjectItem(o, "error");
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(cJSON_GetObjectItem(e, "code")->valuestring, code);
	ck_assert(cJSON_IsString(cJSON_GetObjectItem(e, "message")));
	ck_assert_int_eq(cJSON_GetObjectItem(e, "exit")->valueint, exit);
	/* one object on one line */
	ck_assert_ptr_eq(strchr(out_buf, '\n'), out_buf + strlen(out_buf) - 1);
	cJSON_Delete(o);
}

CHECK_TEST(errors, test_ctl_json_errors)
{
	ck_assert_int_eq(run_ctl("-s", "/nonexistent/nkid.sock", "--json",
	    "status", NULL), CTL_EXIT_CONNECT);
	json_error_is("UNAVAILABLE", 3);
	ck_assert_ptr_nonnull(strstr(out_buf, "cannot connect to nkid at "
	    "'/nonexistent/nkid.sock': No such file or directory"));
	/* the human message still goes to stderr */
	ck_assert_ptr_nonnull(strstr(err_buf, "nkictl: cannot connect"));
	/* usage errors, --json before or after them */
	ck_assert_int_eq(run_ctl("--json", "bogus", NULL), CTL_EXIT_USAGE);
	json_error_is("USAGE", 2);
	ck_assert_ptr_nonnull(strstr(out_buf, "unknown command 'bogus'"));
	ck_assert_int_eq(run_ctl("status", "--bogus", "--json", NULL),
	    CTL_EXIT_USAGE);
	json_error_is("USAGE", 2);
	ck_assert_int_eq(run_ctl("--json", "cache", "pin", "xyz", NULL),
	    CTL_EXIT_USAGE);
	json_error_is("USAGE", 2);
	ck_assert_ptr_nonnull(strstr(out_buf, "cache pin: bad key 'xyz'"));
	ck_assert_int_eq(run_ctl("--json", "--timeout", "0", "status", NULL),
	    CTL_EXIT_USAGE);
	json_error_is("USAGE", 2);
	/* a local failure */
	ck_assert_int_eq(run_ctl("-s", "/nonexistent/nkid.sock", "--json",
	    "run", "/nonexistent.nkir", NULL), CTL_EXIT_FAIL);
	json_error_is("LOCAL", 1);
	ck_assert_ptr_nonnull(strstr(out_buf, "cannot read kernel "
	    "'/nonexistent.nkir'"));
	/* --json after CMD is CMD's, not nkictl's */
	ck_assert_int_eq(run_ctl("-s", "/nonexistent/nkid.sock", "lock", "--",
	    "echo", "--json", NULL), CTL_EXIT_CONNECT);
	ck_assert_str_eq(out_buf, "");
	ck_assert_int_eq(run_ctl("-s", "/nonexistent/nkid.sock", "lock",
	    "echo", "--json", NULL), CTL_EXIT_CONNECT);
	ck_assert_str_eq(out_buf, "");
	ck_assert_int_eq(run_ctl("-s", "/nonexistent/nkid.sock", "lock",
	    "--json", "echo", NULL), CTL_EXIT_CONNECT);
	json_error_is("UNAVAILABLE", 3);
	/* without --json nothing goes to stdout */
	ck_assert_int_eq(run_ctl("bogus", NULL), CTL_EXIT_USAGE);
	ck_assert_str_eq(out_buf, "");
}
END_TEST

/* Nonzero if the roff text has s, its dashes escaped. */
static int
roff_has(const char *roff, const char *s)
{
	char	buf[1024];
	size_t	i, n = 0;

	for (i = 0; s[i] != '\0' && n + 3 < sizeof buf; i++) {
		if (s[i] == '-')
			buf[n++] = '\\';
		buf[n++] = s[i];
	}
	buf[n] = '\0';
	return (strstr(roff, buf) != NULL);
}

/* The text of path, malloc'd. */
static char *
slurp(const char *path)
{
	char	*buf;
	long	 n;
	FILE	*f = fopen(path, "r");

	ck_assert_msg(f != NULL, "cannot read '%s'", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return (buf);
}

CHECK_TEST(core, test_ctl_man_and_docs_cover_the_table)
{
	const struct ctl_cmd	*c;
	const struct ctl_opt	*o;
	char			*man, *md, *sec, *end, want[256];
	size_t			 i;

	ck_assert_int_eq(run_ctl("help", "--man", NULL), CTL_EXIT_OK);
	man = strdup(out_buf);
	ck_assert_ptr_nonnull(strstr(man, ".SH OPTIONS\n"));
	ck_assert_ptr_nonnull(strstr(man, ".SH COMMANDS\n"));
	for (o = ctl_main_cmd.opts; o->letter || o->name; o++)
		ck_assert(roff_has(man, o->name));
	/* docs/cli.md: run from the top of the tree, as make check does */
	md = slurp("docs/cli.md");
	for (i = 0; i < ctl_cmd_count; i++) {
		c = ctl_cmd_table[i];
		snprintf(want, sizeof want, ".SS \"%s\"\n", c->name);
		ck_assert_msg(strstr(man, want) != NULL, "man: no %s", c->name);
		ck_assert(roff_has(man, c->help));
		/* its section: from "### `NAME" to the next heading */
		snprintf(want, sizeof want, "### `%s", c->name);
		sec = strstr(md, want);
		ck_assert_msg(sec != NULL, "docs/cli.md has no section '%s'",
		    want);
		end = strstr(sec + 4, "\n#");
		if (end != NULL)
			*end = '\0';
		for (o = c->opts; o != NULL && (o->letter || o->name); o++) {
			snprintf(want, sizeof want, "-%c", o->letter);
			if (o->letter != 0 && strstr(sec, want) != NULL)
				continue;
			snprintf(want, sizeof want, "--%s", o->name);
			ck_assert(roff_has(man, want));
			ck_assert_msg(strstr(sec, want) != NULL, "docs/cli.md: "
			    "'%s' does not explain %s", c->name, want);
		}
		if (end != NULL)
			*end = '\n';
	}
	free(md);
	free(man);
}
END_TEST

CHECK_TEST(core, test_ctl_completion_words)
{
	size_t	i;

	ck_assert_int_eq(run_ctl("help", "--words", NULL), CTL_EXIT_OK);
	for (i = 0; i < ctl_cmd_count; i++)
		ck_assert_ptr_nonnull(strstr(out_buf, ctl_cmd_table[i]->name));
	ck_assert_int_eq(run_ctl("help", "--words", "cache", "export", NULL),
	    CTL_EXIT_OK);
	ck_assert_str_eq(out_buf, "--pinned\n--offline\n--cache-dir DIR\n"
	    "--state-dir DIR\n--json\n-h\n--help\n");
	ck_assert_int_eq(run_ctl("help", "--words", "--man", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("--json", "help", "cache", "ls", NULL),
	    CTL_EXIT_OK);
	ck_assert_ptr_nonnull(strstr(out_buf, "\"long\":\"no-signature\""));
}
END_TEST
