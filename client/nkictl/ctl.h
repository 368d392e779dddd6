/*
 * ctl.h: nkictl's command table, the context a command runs in, and the
 * helpers that every command shares (options, messages, calls to nkid).
 */
#ifndef NKID_CTL_H
#define NKID_CTL_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

#include <protobuf-c/protobuf-c.h>

#include "ctl_rpc.h"

#ifndef NKID_VERSION
#define NKID_VERSION "0.0.0"
#endif

#define CTL_DEFAULT_SOCKET   "/run/nkid/nkid.sock"
#define CTL_SOCKET_ENV       "NKID_SOCKET"
/* Default deadline of a call, for commands that do not set their own. */
#define CTL_TIMEOUT_DEFAULT  30.0
/* Deadline of commands that compile or execute kernels. */
#define CTL_TIMEOUT_KERNEL   600.0
/* Largest --timeout accepted (a year). */
#define CTL_TIMEOUT_MAX      (365.0 * 86400)

/* Exit codes of nkictl (documented in docs/cli.md). */
enum ctl_exit {
	CTL_EXIT_OK = 0,       /* done */
	CTL_EXIT_FAIL = 1,     /* the call failed, or a local file did */
	CTL_EXIT_USAGE = 2,    /* bad command line */
	CTL_EXIT_CONNECT = 3,  /* nkid cannot be reached */
};

typedef struct ctl_ctx ctl_ctx;

/*
 * A subcommand: one per file (ctl_<name>.c), registered in ctl_cmd_table.
 * name is one word ("status") or two for a group ("cache ls"); exec gets
 * the arguments from the command's last word on (argv[0] is that word)
 * and returns an exit code (enum ctl_exit).
 */
typedef struct ctl_cmd {
	const char *name;
	const char *usage;        /* what follows the name, "" if nothing */
	const char *help;         /* one line, lower case, no final period */
	double timeout_s;         /* default deadline; 0: CTL_TIMEOUT_DEFAULT */
	int (*exec)(ctl_ctx *ctx, int argc, char **argv);
} ctl_cmd;

/* What a command runs with. out and err are where it prints. */
struct ctl_ctx {
	const ctl_cmd *cmd;
	const char *socket;       /* -s, else $NKID_SOCKET, else the default */
	int json;                 /* --json: print one JSON object */
	double timeout_s;         /* --timeout, else the command's default */
	FILE *out;
	FILE *err;
	ctl_rpc *rpc;             /* opened by the first ctl_call */
};

/* The table: sorted by name (strcmp), unique names. */
extern const ctl_cmd *const ctl_cmd_table[];
extern const size_t ctl_cmd_count;

/* The subcommands. */
extern const ctl_cmd ctl_cancel_cmd;
extern const ctl_cmd ctl_compile_cmd;
extern const ctl_cmd ctl_help_cmd;
extern const ctl_cmd ctl_jobs_cmd;
extern const ctl_cmd ctl_lock_cmd;
extern const ctl_cmd ctl_ping_cmd;
extern const ctl_cmd ctl_run_cmd;
extern const ctl_cmd ctl_simulate_cmd;
extern const ctl_cmd ctl_status_cmd;
extern const ctl_cmd ctl_version_cmd;

/*
 * Find the command that argv (argc >= 1) names in a sorted table: a
 * two-word entry ("cache ls") first, then a one-word one. Sets *used to
 * the number of words consumed (1 or 2). NULL if none.
 */
const ctl_cmd *ctl_cmd_find(const ctl_cmd *const *table, size_t n, int argc,
    char *const *argv, int *used);

/* Nonzero if some entry of the table is in group `word` ("cache ls"
 * entries make "cache" a group). */
int ctl_cmd_is_group(const ctl_cmd *const *table, size_t n, const char *word);

/* Print "usage: nkictl NAME USAGE" and the help line of cmd to f. */
void ctl_cmd_usage(const ctl_cmd *cmd, FILE *f);

/* Print the list of commands (all, or those of one group) to f. */
void ctl_cmd_list(const ctl_cmd *const *table, size_t n, const char *group,
    FILE *f);

/*
 * nkictl's main: parse the global options, find the command, run it,
 * close the connection. Prints to out and err; returns the exit code.
 */
int ctl_main(int argc, char **argv, FILE *out, FILE *err);

/* ------------------------------------------------------------ helpers */

/* Options every command takes: -h/--help and --json. */
#define CTL_OPT_JSON 0x100
#define CTL_LONGOPTS_COMMON \
	{ "help", no_argument, NULL, 'h' }, \
	{ "json", no_argument, NULL, CTL_OPT_JSON }
/* ctl_opt_next's answer when the command must return ctx's *rc. */
#define CTL_OPT_DONE 0x200

/*
 * getopt_long over a command's arguments (argv[0] is the command word;
 * ctl_main resets getopt before exec; GNU argument permutation unless
 * shortopts starts with '+'). Handles the
 * common options: --json sets ctx->json; -h prints the usage and answers
 * CTL_OPT_DONE with *rc = 0; an unknown option or a missing value prints a
 * message and the usage and answers CTL_OPT_DONE with *rc = 2. Otherwise
 * answers the option (optarg set) or -1 at the end, with optind at the
 * first operand.
 */
int ctl_opt_next(ctl_ctx *ctx, int argc, char **argv, const char *shortopts,
    const struct option *longopts, int *rc);

/* "nkictl: CMD: MSG" + the usage on ctx->err; returns CTL_EXIT_USAGE. */
int ctl_usage_fail(ctl_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* "nkictl: MSG" on ctx->err. */
void ctl_errorf(ctl_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Parse a decimal unsigned integer in [min, max]; 0 or -1. */
int ctl_parse_uint(const char *s, unsigned long long min,
    unsigned long long max, unsigned long long *out);

/* Parse seconds: a finite number > 0 and <= CTL_TIMEOUT_MAX; 0 or -1. */
int ctl_parse_seconds(const char *s, double *out);

/*
 * Open the connection if not yet open (ctx->rpc). On failure prints the
 * cannot-connect message and hint, and returns CTL_EXIT_CONNECT.
 */
int ctl_connect(ctl_ctx *ctx);

/*
 * Call method on nkid with ctx's deadline (connecting first if needed). On
 * success returns 0 and *reply (free with
 * protobuf_c_message_free_unpacked). On failure prints
 * "nkictl: CMD: CODE: message" (or the cannot-connect message) and
 * returns CTL_EXIT_FAIL (or CTL_EXIT_CONNECT).
 */
int ctl_call(ctl_ctx *ctx, const char *method, const ProtobufCMessage *req,
    const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply);

/* Print the failure of a call as ctl_call does; returns the exit code. */
int ctl_call_fail(ctl_ctx *ctx, const ctl_rpc_status *st);

/* Print a cJSON object (takes ownership, frees it) on one line to
 * ctx->out. Returns CTL_EXIT_OK, or CTL_EXIT_FAIL if it cannot print. */
struct cJSON;
int ctl_json_print(ctl_ctx *ctx, struct cJSON *obj);

/* "KEY  VALUE" with keys aligned, for human output. */
void ctl_kv(ctl_ctx *ctx, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
