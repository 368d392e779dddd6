/* log.c: levelled logging on stderr; journald-friendly when stderr is the journal. */
#include <sys/stat.h>

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/log.h"

static _Atomic int	 log_level = LOG_LEVEL_INFO;
static int		 log_journal;
static const char	*log_progname = "nkid";

static const char *log_names[] = { "error", "warn", "info", "debug" };
/* syslog priorities: err, warning, info, debug. */
static const int log_prio[] = { 3, 4, 6, 7 };

void
log_level_set(int level)
{
	if (level < LOG_LEVEL_ERROR)
		level = LOG_LEVEL_ERROR;
	if (level > LOG_LEVEL_DEBUG)
		level = LOG_LEVEL_DEBUG;
	atomic_store(&log_level, level);
}

int
log_level_get(void)
{
	return (atomic_load(&log_level));
}

int
log_level_from_name(const char *name)
{
	size_t	i;

	for (i = 0; i < sizeof log_names / sizeof log_names[0]; i++) {
		if (strcmp(name, log_names[i]) == 0)
			return ((int)i);
	}
	return (-1);
}

const char *
log_level_name(int level)
{
	if (level < 0 || level > LOG_LEVEL_DEBUG)
		return ("unknown");
	return (log_names[level]);
}

void
log_open(const char *progname)
{
	const char		*js;
	struct stat		 sb;
	unsigned long long	 dev, ino;

	if (progname != NULL)
		log_progname = progname;
	log_journal = 0;
	if ((js = getenv("JOURNAL_STREAM")) == NULL)
		return;
	if (sscanf(js, "%llu:%llu", &dev, &ino) != 2)
		return;
	if (fstat(STDERR_FILENO, &sb) == 0 && (unsigned long long)sb.st_dev ==
	    dev && (unsigned long long)sb.st_ino == ino)
		log_journal = 1;
}

static void
log_vwrite(int level, const char *fmt, va_list ap)
{
	char		 msg[2048], stamp[32];
	struct timespec	 ts;
	struct tm	 tm;

	if (level > atomic_load(&log_level))
		return;
	vsnprintf(msg, sizeof msg, fmt, ap);
	if (log_journal) {
		fprintf(stderr, "<%d>%s\n", log_prio[level], msg);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
	fprintf(stderr, "%s.%03ld %s[%ld] %s: %s\n", stamp, ts.tv_nsec / 1000000,
	    log_progname, (long)getpid(), log_names[level], msg);
}

void
log_error(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_ERROR, fmt, ap);
	va_end(ap);
}

void
log_warn(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_WARN, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_INFO, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_DEBUG, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_ERROR, fmt, ap);
	va_end(ap);
	exit(1);
}
