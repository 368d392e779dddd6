/*
 * ctl_cmd.c: the command table, nkictl's index: every subcommand, sorted
 * by name, and the lookup over it.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctl_cache.h"

/*
 * Sorted by name (strcmp; bsearch relies on it, check_ctl_args checks it).
 * A later subcommand is one file and one line here; a group's commands are
 * two-word names, found before one-word ones, e.g.:
 *   "cache export", "cache import", "cache ls", "cache pin", "cache rm",
 *   "cache stat", "cache verify", "cancel", "compile", "help", "jobs",
 *   "lock", "ping", "run", "simulate", "status", "version", "warmup"
 * (`nkictl lock -- CMD` would pass "+" first in its shortopts to stop at
 * CMD.)
 */
const ctl_cmd *const ctl_cmd_table[] = {
	&ctl_cache_export_cmd,
	&ctl_cache_gc_cmd,
	&ctl_cache_import_cmd,
	&ctl_cache_ls_cmd,
	&ctl_cache_pin_cmd,
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
	&ctl_run_cmd,
	&ctl_simulate_cmd,
	&ctl_status_cmd,
	&ctl_version_cmd,
	&ctl_warmup_cmd,
};
const size_t ctl_cmd_count = sizeof(ctl_cmd_table) / sizeof(ctl_cmd_table[0]);

static int
ctl_cmd_compare_cb(const void *key, const void *elem)
{
	const ctl_cmd *const *c = elem;

	return strcmp(key, (*c)->name);
}

static const ctl_cmd *
ctl_cmd_search(const ctl_cmd *const *table, size_t n, const char *name)
{
	const ctl_cmd *const *c;

	c = bsearch(name, table, n, sizeof(*table), ctl_cmd_compare_cb);
	return c ? *c : NULL;
}

const ctl_cmd *
ctl_cmd_find(const ctl_cmd *const *table, size_t n, int argc,
    char *const *argv, int *used)
{
	const ctl_cmd *c;
	char two[128];
	size_t l0, l1;

	assert(argc >= 1 && argv[0] != NULL);
	l0 = strlen(argv[0]);

	if (argc >= 2 && argv[1] != NULL && (l1 = strlen(argv[1])) + l0 + 2 <=
	    sizeof(two)) {
		memcpy(two, argv[0], l0);
		two[l0] = ' ';
		memcpy(two + l0 + 1, argv[1], l1 + 1);
		c = ctl_cmd_search(table, n, two);
		if (c != NULL) {
			*used = 2;
			return c;
		}
	}
	c = ctl_cmd_search(table, n, argv[0]);
	if (c != NULL)
		*used = 1;
	return c;
}

int
ctl_cmd_is_group(const ctl_cmd *const *table, size_t n, const char *word)
{
	size_t i, len = strlen(word);

	for (i = 0; i < n; i++)
		if (strncmp(table[i]->name, word, len) == 0 &&
		    table[i]->name[len] == ' ')
			return 1;
	return 0;
}

void
ctl_cmd_usage(const ctl_cmd *cmd, FILE *f)
{
	fprintf(f, "usage: nkictl [-s SOCKET] [--json] [--timeout S] %s%s%s\n",
	    cmd->name, *cmd->usage ? " " : "", cmd->usage);
}

void
ctl_cmd_list(const ctl_cmd *const *table, size_t n, const char *group,
    FILE *f)
{
	size_t i, glen = group ? strlen(group) : 0;
	int width = 0;

	for (i = 0; i < n; i++)
		if ((int)strlen(table[i]->name) > width)
			width = (int)strlen(table[i]->name);
	for (i = 0; i < n; i++) {
		const ctl_cmd *c = table[i];

		if (group != NULL && (strncmp(c->name, group, glen) != 0 ||
		    c->name[glen] != ' '))
			continue;
		fprintf(f, "  %-*s  %s\n", width, c->name, c->help);
	}
}
