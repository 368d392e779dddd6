/* ctl_table.c: tables whose columns are as wide as their contents (util-linux's libsmartcols), cut to a terminal's width only in the columns that may be. */
#include <stdarg.h>
#include <stdlib.h>

#include <libsmartcols/libsmartcols.h>

#include "ctl.h"

struct ctl_table {
	struct libscols_table	*tb;
	size_t			 ncols;
};

struct ctl_table *
ctl_table_new(const struct ctl_table_col *cols, size_t n)
{
	struct ctl_table	*t;
	size_t			 i;
	int			 fl;

	if ((t = calloc(1, sizeof *t)) == NULL ||
	    (t->tb = scols_new_table()) == NULL)
		abort();
	t->ncols = n;
	scols_table_set_column_separator(t->tb, "  ");
	/* A terminal: fit its width; anything else: never cut. */
	scols_table_set_termforce(t->tb, SCOLS_TERMFORCE_AUTO);
	for (i = 0; i < n; i++) {
		fl = 0;
		if (cols[i].flags & CTL_TABLE_RIGHT)
			fl |= SCOLS_FL_RIGHT;
		if (cols[i].flags & CTL_TABLE_TRUNC)
			fl |= SCOLS_FL_TRUNC;
		/* The last column is not padded to its width. */
		if (scols_table_new_column(t->tb, cols[i].name,
		    (cols[i].flags & CTL_TABLE_TRUNC) ? 0.3 : 0, fl) == NULL)
			abort();
	}
	return (t);
}

void
ctl_table_rowv(struct ctl_table *t, const char *const *cells)
{
	struct libscols_line	*ln;
	size_t			 i;

	if ((ln = scols_table_new_line(t->tb, NULL)) == NULL)
		abort();
	for (i = 0; i < t->ncols; i++)
		if (scols_line_set_data(ln, i, cells[i] != NULL &&
		    *cells[i] != '\0' ? cells[i] : "-") != 0)
			abort();
}

void
ctl_table_row(struct ctl_table *t, ...)
{
	const char	*cells[CTL_TABLE_MAX_COLS];
	va_list		 ap;
	size_t		 i;

	va_start(ap, t);
	for (i = 0; i < t->ncols && i < CTL_TABLE_MAX_COLS; i++)
		cells[i] = va_arg(ap, const char *);
	va_end(ap);
	ctl_table_rowv(t, cells);
}

size_t
ctl_table_rows(const struct ctl_table *t)
{
	return (scols_table_get_nlines(t->tb));
}

void
ctl_table_print(struct ctl_table *t, FILE *f)
{
	scols_table_set_stream(t->tb, f);
	scols_print_table(t->tb);
	ctl_table_free(t);
}

void
ctl_table_free(struct ctl_table *t)
{
	if (t == NULL)
		return;
	scols_unref_table(t->tb);
	free(t);
}
