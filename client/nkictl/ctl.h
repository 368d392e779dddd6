/* ctl.h: nkictl's command table, its option parser, the context a command runs in, and the helpers every command shares. */
#ifndef NKID_CTL_H
#define NKID_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <protobuf-c/protobuf-c.h>

#include "ctl_rpc.h"

#ifndef NKID_VERSION
#define NKID_VERSION "0.0.0"
#endif

#define CTL_DEFAULT_SOCKET	"/run/nkid/nkid.sock"
#define CTL_SOCKET_ENV		"NKID_SOCKET"
/* Default deadline of a call, for commands that do not set their own. */
#define CTL_TIMEOUT_DEFAULT	30.0
/* Deadline of commands that compile or execute kernels. */
#define CTL_TIMEOUT_KERNEL	600.0
/* Largest number of seconds accepted (a year). */
#define CTL_TIMEOUT_MAX		(365.0 * 86400)

/* Exit codes of nkictl (documented in docs/cli.md). */
enum ctl_exit {
	CTL_EXIT_OK = 0,	/* done */
	CTL_EXIT_FAIL = 1,	/* the call failed, or a local file did */
	CTL_EXIT_USAGE = 2,	/* bad command line */
	CTL_EXIT_CONNECT = 3,	/* nkid cannot be reached */
};

struct cJSON;
struct ctl_args;
struct ctl_ctx;

/*
 * One option of a command. Every command also takes -h/--help and --json,
 * which the framework handles. The option is looked up by its name: the
 * long name if it has one, else its letter as a string ("n").
 */
struct ctl_opt {
	char		 letter;	/* 'n' for -n; 0: long only */
	const char	*name;		/* "count" for --count; NULL: short */
	const char	*value;		/* "COUNT" in help; NULL: a flag */
	const char	*help;		/* one line, lower case, no period */
};
#define CTL_OPT_END	{ 0, NULL, NULL, NULL }

/* The operands a command takes, as tmux's args_parse counts them. */
struct ctl_arity {
	int		 lower;		/* fewest */
	int		 upper;		/* most; -1: no limit */
	const char	*what;		/* the first, if lower > 0: "KERNEL" */
};

/* Options end at the first operand (the rest is another command's). */
#define CTL_CMD_OPTS_FIRST	0x1
/* A kernel command that sends shapes without data when no -i is given. */
#define CTL_CMD_SHAPES		0x2

/*
 * A subcommand: one per file (ctl_<name>.c), registered in ctl_cmd_table.
 * name is one word ("status") or two for a group ("cache ls"). The
 * framework parses the command line against opts and args (as tmux's
 * cmd_entry does), prints usage errors and --help, and calls exec
 * with what it parsed; exec returns an exit code (enum ctl_exit).
 */
struct ctl_cmd {
	const char		*name;
	const char		*usage;		/* after the name; "" */
	const char		*help;		/* one line, no period */
	const char		*about;		/* paragraphs, or NULL */
	const struct ctl_opt	*opts;		/* to CTL_OPT_END, or NULL */
	struct ctl_arity	 args;		/* the operands */
	int			 flags;		/* CTL_CMD_* */
	double			 timeout_s;	/* deadline; 0: default */
	int			(*exec)(struct ctl_ctx *, struct ctl_args *);
};

/* The codes of errors in JSON ({"error": {"code": ...}}) that are not
 * gRPC status names (those are nkid's answers, and UNAVAILABLE when nkid
 * cannot be reached). */
#define CTL_CODE_USAGE		"USAGE"		/* exit 2 */
#define CTL_CODE_LOCAL		"LOCAL"		/* a local file, or nkictl */
#define CTL_CODE_UNAVAILABLE	"UNAVAILABLE"	/* exit 3 */

/* What a command runs with. out and err are where it prints. */
struct ctl_ctx {
	const struct ctl_cmd	*cmd;
	const char		*socket;	/* -s, $NKID_SOCKET, default */
	int			 json;		/* --json */
	double			 timeout_s;	/* --timeout, the command's */
	FILE			*out;
	FILE			*err;
	struct ctl_rpc		*rpc;		/* by the first ctl_call */
	int			 json_done;	/* the command's object out */
	char			 err_code[32];	/* of the first error, or "" */
	char			*err_msg;	/* its message, malloc'd */
};

/* The options given of one row of a command's table. */
struct ctl_args_opt {
	unsigned	  count;	/* times given */
	char		**values;	/* count values, or NULL */
};

/* A command line parsed against its command. Strings are argv's. */
struct ctl_args {
	const struct ctl_cmd	*cmd;
	int			 argc;		/* the operands */
	char			**argv;
	size_t			 nopts;
	struct ctl_args_opt	*opts;		/* per row of cmd->opts */
};

/* The table, sorted by name (strcmp), unique names. */
extern const struct ctl_cmd *const ctl_cmd_table[];
extern const size_t ctl_cmd_count;

/* nkictl itself: its global options, for the parser and its help. */
extern const struct ctl_cmd ctl_main_cmd;

/* The subcommands, in the table's order. */
extern const struct ctl_cmd ctl_benchmark_cmd;
extern const struct ctl_cmd ctl_cache_export_cmd;
extern const struct ctl_cmd ctl_cache_gc_cmd;
extern const struct ctl_cmd ctl_cache_import_cmd;
extern const struct ctl_cmd ctl_cache_ls_cmd;
extern const struct ctl_cmd ctl_cache_pin_cmd;
extern const struct ctl_cmd ctl_cache_pull_cmd;
extern const struct ctl_cmd ctl_cache_push_cmd;
extern const struct ctl_cmd ctl_cache_rm_cmd;
extern const struct ctl_cmd ctl_cache_show_cmd;
extern const struct ctl_cmd ctl_cache_stat_cmd;
extern const struct ctl_cmd ctl_cache_unpin_cmd;
extern const struct ctl_cmd ctl_cache_verify_cmd;
extern const struct ctl_cmd ctl_cancel_cmd;
extern const struct ctl_cmd ctl_compile_cmd;
extern const struct ctl_cmd ctl_help_cmd;
extern const struct ctl_cmd ctl_jobs_cmd;
extern const struct ctl_cmd ctl_lock_cmd;
extern const struct ctl_cmd ctl_ping_cmd;
extern const struct ctl_cmd ctl_profile_cmd;
extern const struct ctl_cmd ctl_run_cmd;
extern const struct ctl_cmd ctl_simulate_cmd;
extern const struct ctl_cmd ctl_status_cmd;
extern const struct ctl_cmd ctl_top_cmd;
extern const struct ctl_cmd ctl_version_cmd;
extern const struct ctl_cmd ctl_warmup_cmd;

/* ------------------------------------------------------ ctl_cmd.c */

/*
 * Find the command that argv (argc >= 1) names in a sorted table: a
 * two-word entry ("cache ls") first, then a one-word one. Sets *used to
 * the number of words consumed (1 or 2). NULL if none.
 */
const struct ctl_cmd *ctl_cmd_find(const struct ctl_cmd *const *table,
	    size_t n, int argc, char *const *argv, int *used);
/* Nonzero if some entry of the table is in group word ("cache ls"
 * entries make "cache" a group). */
int	 ctl_cmd_is_group(const struct ctl_cmd *const *table, size_t n,
	    const char *word);
/* Print "usage: nkictl ... NAME USAGE" of cmd to f. */
void	 ctl_cmd_usage(const struct ctl_cmd *cmd, FILE *f);
/* Print cmd's usage, its help line and its options (from its table and
 * the common ones) to f: what -h and `nkictl help CMD` show. For
 * ctl_main_cmd, also the commands and the exit codes. */
void	 ctl_cmd_help(const struct ctl_cmd *cmd, FILE *f);
/* Print the list of commands (all, or those of one group) to f. */
void	 ctl_cmd_list(const struct ctl_cmd *const *table, size_t n,
	    const char *group, FILE *f);
/* Print the OPTIONS and COMMANDS sections of nkictl(1) in roff, from
 * ctl_main_cmd and the table: the man page cannot drift from them. */
void	 ctl_cmd_man(FILE *f);
/*
 * For shell completion, one word a line: the commands' names (cmd NULL),
 * or cmd's options as "-n VALUE", "--count VALUE", "--all" (VALUE: the
 * value's name, for the completion of files and directories).
 */
void	 ctl_cmd_words(const struct ctl_cmd *cmd, FILE *f);
/* cmd as JSON: name, usage, help, about, operands, options. NULL when out
 * of memory. */
struct cJSON *ctl_cmd_json(const struct ctl_cmd *cmd);

/* ------------------------------------------------------ ctl_args.c */

/* The options every command takes after its own: --json, -h/--help. */
extern const struct ctl_opt ctl_args_common[];

/*
 * Parse a command's arguments (argv[0] is its last word) against
 * ctx->cmd: its options with getopt_long (GNU permutation, unless the
 * command sets CTL_CMD_OPTS_FIRST), then its arity. --json sets
 * ctx->json. Returns 0 with a filled to run the command, or -1 when
 * nkictl must exit with *rc now: after -h/--help (CTL_EXIT_OK, the help
 * on ctx->out), or on a usage error (CTL_EXIT_USAGE; an unknown option, a
 * missing value, a value given to a flag, too few or too many operands:
 * the message and the usage on ctx->err). Release a with
 * ctl_args_release in both cases.
 */
int	 ctl_args_parse(struct ctl_ctx *ctx, int argc, char **argv,
	    struct ctl_args *a, int *rc);
void	 ctl_args_release(struct ctl_args *a);
/* Nonzero if a's command has option name (ctl_opt). */
int	 ctl_args_takes(const struct ctl_args *a, const char *name);
/* How many times option name was given (0 if the command has none). */
unsigned ctl_args_has(const struct ctl_args *a, const char *name);
/* The last value of option name, or NULL if it was not given. */
const char *ctl_args_get(const struct ctl_args *a, const char *name);
/* Every value of option name, in order; *n of them (0: NULL). */
char *const *ctl_args_values(const struct ctl_args *a, const char *name,
	    size_t *n);
/*
 * When option name was given, parse its last value into *v: an integer
 * in [min, max] (ctl_args_uint), or seconds, a number in [0 or more than
 * 0, CTL_TIMEOUT_MAX] (ctl_args_seconds). *v is untouched when it was not
 * given. Returns 0, or prints "bad value 'X' for -n: want ..." and the
 * usage and returns CTL_EXIT_USAGE.
 */
int	 ctl_args_uint(struct ctl_ctx *ctx, const struct ctl_args *a,
	    const char *name, unsigned long long min, unsigned long long max,
	    unsigned long long *v);
int	 ctl_args_seconds(struct ctl_ctx *ctx, const struct ctl_args *a,
	    const char *name, int zero_ok, double *v);

/* ------------------------------------------------------ ctl_jobs.c */

struct Nkid__V1__Job;
/*
 * How long job k waited for its core and has run, as ctl_fmt_seconds
 * writes them, into wait and run (len bytes each): until it started and
 * finished, or until now while it waits or runs; "-" before it started.
 */
void	 ctl_jobs_times(const struct Nkid__V1__Job *k, double now,
	    char *wait, char *run, size_t len);

/* ------------------------------------------------------ ctl_main.c */

/*
 * nkictl's main: parse the global options, find the command, parse its
 * arguments, run it, close the connection. Prints to out and err; returns
 * the exit code.
 */
int	 ctl_main(int argc, char **argv, FILE *out, FILE *err);
/* nkictl the process: ctl_main on stdout and stderr, then exit with its
 * code (without tearing gRPC down when a connection was made). */
void	 ctl_main_exit(int argc, char **argv) __attribute__((noreturn));

/* ------------------------------------------------------ ctl.c */

/*
 * Errors. Each prints "nkictl: MSG" on ctx->err and, if it is the first,
 * keeps its code and message for the JSON error object that ctl_main
 * prints with --json when the command fails without printing its own.
 */
/* "nkictl: CMD: MSG" and the usage on ctx->err; returns CTL_EXIT_USAGE. */
int	 ctl_usage_fail(struct ctl_ctx *ctx, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
/* "nkictl: MSG" on ctx->err, code CTL_CODE_LOCAL. */
void	 ctl_errorf(struct ctl_ctx *ctx, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
/* "nkictl: MSG" on ctx->err with code (a CTL_CODE_*). */
void	 ctl_error(struct ctl_ctx *ctx, const char *code, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/* "nkictl: CMD: MSG" on ctx->err with code (a gRPC status name or a
 * CTL_CODE_*); returns CTL_EXIT_FAIL. */
int	 ctl_fail(struct ctl_ctx *ctx, const char *code, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/*
 * With --json, after a command that returned rc != 0 without printing
 * its object: {"error": {"code": C, "message": M, "exit": rc}} on
 * ctx->out. Frees what the errors kept in any case.
 */
void	 ctl_error_json(struct ctl_ctx *ctx, int rc);

/* Parse a decimal unsigned integer in [min, max] into *out; 0 or -1. */
int	 ctl_parse_uint(const char *s, unsigned long long min,
	    unsigned long long max, unsigned long long *out);
/* Parse seconds: a finite number, > 0 (>= 0 if zero_ok), at most
 * CTL_TIMEOUT_MAX, into *out; 0 or -1. */
int	 ctl_parse_seconds(const char *s, int zero_ok, double *out);

/*
 * Open the connection if not yet open (ctx->rpc). On failure prints the
 * cannot-connect message and hint, and returns CTL_EXIT_CONNECT.
 */
int	 ctl_connect(struct ctl_ctx *ctx);
/*
 * Call method on nkid with ctx's deadline (connecting first if needed).
 * On success returns 0 and *reply (free with
 * protobuf_c_message_free_unpacked). On failure prints "nkictl: CMD:
 * CODE: message" (or the cannot-connect message) and returns
 * CTL_EXIT_FAIL (or CTL_EXIT_CONNECT).
 */
int	 ctl_call(struct ctl_ctx *ctx, const char *method,
	    const ProtobufCMessage *req,
	    const ProtobufCMessageDescriptor *reply_desc,
	    ProtobufCMessage **reply);
/*
 * ctl_call, then print the reply: with --json the object json makes of it
 * (NULL: out of memory), else human's text. Frees the reply. Returns the
 * exit code.
 */
int	 ctl_call_print(struct ctl_ctx *ctx, const char *method,
	    const ProtobufCMessage *req,
	    const ProtobufCMessageDescriptor *reply_desc,
	    struct cJSON *(*json)(struct ctl_ctx *, const ProtobufCMessage *),
	    void (*human)(struct ctl_ctx *, const ProtobufCMessage *));
/* Print the failure of a call as ctl_call does; returns the exit code. */
int	 ctl_call_fail(struct ctl_ctx *ctx, const struct ctl_rpc_status *st);

/* Print a cJSON object (taken over and freed; NULL: out of memory) on
 * one line to ctx->out, the command's one object. Returns CTL_EXIT_OK,
 * or CTL_EXIT_FAIL. */
int	 ctl_json_print(struct ctl_ctx *ctx, struct cJSON *obj);
/*
 * Add to o, in order, the fields of m that names (NULL-terminated) lists,
 * each under its own name: what a reply's figures are in --json. Strings
 * become strings, bools booleans, numbers numbers; a name m's type does
 * not have, or a repeated or message field, is a bug (asserted). o NULL
 * (out of memory): nothing, as cJSON's own functions do.
 */
void	 ctl_json_fields(struct cJSON *o, const ProtobufCMessage *m,
	    const char *const *names);
/* Unless text is NULL or "": head, then text on f, with a final newline
 * if text lacks one (a compiler log, device_print's output). */
void	 ctl_text_print(FILE *f, const char *head, const char *text);
/* "KEY  VALUE" with keys aligned, for human output. */
void	 ctl_kv(struct ctl_ctx *ctx, const char *key, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------ ctl_fmt.c */

/*
 * Numbers as a person reads them, into buf (returned): bytes in IEC units
 * with three figures ("512 B", "1.50 KiB", "15.2 MiB", "152 GiB"),
 * microseconds ("3.20 us", "850 us", "1.25 ms", "2.00 s", "3m 05s",
 * "2h 01m", "1d 02h"; "-" if negative), seconds the same way, an epoch
 * time as an age ("just now", "12s ago", "5m ago", "3h ago", "2d ago";
 * "never" if 0) or local date and time ("-" if 0), part of whole as a
 * percentage ("93.2%", "-" if whole is 0; never 100% unless all).
 */
const char *ctl_fmt_bytes(uint64_t n, char *buf, size_t len);
const char *ctl_fmt_us(double us, char *buf, size_t len);
const char *ctl_fmt_seconds(double s, char *buf, size_t len);
const char *ctl_fmt_age(double t, double now, char *buf, size_t len);
const char *ctl_fmt_time(double t, char *buf, size_t len);
const char *ctl_fmt_percent(uint64_t part, uint64_t whole, char *buf,
	    size_t len);
/* Seconds since the epoch (CLOCK_REALTIME), and of CLOCK_MONOTONIC. */
double	 ctl_fmt_now(void);
double	 ctl_fmt_mono(void);

/* ------------------------------------------------------ ctl_table.c */

#define CTL_TABLE_MAX_COLS	16
#define CTL_TABLE_RIGHT		0x1	/* numbers: aligned right */
#define CTL_TABLE_TRUNC		0x2	/* may be cut to fit a terminal */

/* A column: its heading and CTL_TABLE_* flags. */
struct ctl_table_col {
	const char	*name;
	int		 flags;
};

struct ctl_table;

/*
 * A table of n columns (at most CTL_TABLE_MAX_COLS), each as wide as its
 * widest cell, two blanks apart. Printed to a terminal, TRUNC columns are
 * cut to fit its width; printed elsewhere nothing is ever cut. Aborts
 * when out of memory. Print (which frees it) or free it.
 */
struct ctl_table *ctl_table_new(const struct ctl_table_col *cols, size_t n);
/* Add a row of ncols cells (copied; NULL or "" shows "-"). */
void	 ctl_table_row(struct ctl_table *t, ...);
void	 ctl_table_rowv(struct ctl_table *t, const char *const *cells);
size_t	 ctl_table_rows(const struct ctl_table *t);
/* Print t to f with its headings, and free it. */
void	 ctl_table_print(struct ctl_table *t, FILE *f);
void	 ctl_table_free(struct ctl_table *t);

/* ------------------------------------------------------ ctl_progress.c */

/* A progress line on stderr: only when stderr is a terminal. */
struct ctl_progress {
	FILE		*f;
	int		 on;		/* f is a terminal */
	int		 drawn;		/* a line is shown */
	const char	*what;		/* "export" */
	const char	*unit;		/* "kernels"; NULL: bytes */
	uint64_t	 done;
	uint64_t	 total;		/* 0: unknown */
	double		 start;		/* ctl_fmt_mono */
	double		 last;		/* of the last redraw */
};

/* Start p for what (borrowed), counting unit (NULL: bytes) up to total
 * (0: unknown), on ctx->err. */
void	 ctl_progress_init(struct ctl_progress *p, struct ctl_ctx *ctx,
	    const char *what, const char *unit, uint64_t total);
/* done so far; redraws at most ten times a second (and at the total). */
void	 ctl_progress_set(struct ctl_progress *p, uint64_t done);
/* Erase the line (before other output, or at the end). */
void	 ctl_progress_end(struct ctl_progress *p);
/* The line after elapsed seconds, into buf: "export: 12.3 MiB of 48.0
 * MiB (25%), 5.10 MiB/s, ETA 7s" (no rate before half a second). */
const char *ctl_progress_line(const struct ctl_progress *p, double elapsed,
	    char *buf, size_t len);

#endif /* NKID_CTL_H */
