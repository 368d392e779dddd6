/* log.h: levelled logging to stderr, with journald priority prefixes under systemd. */
#ifndef NKID_LOG_H
#define NKID_LOG_H

#include <stdarg.h>

enum log_level {
	LOG_LEVEL_ERROR = 0,
	LOG_LEVEL_WARN = 1,
	LOG_LEVEL_INFO = 2,
	LOG_LEVEL_DEBUG = 3,
};

/* Set the most verbose level printed (default LOG_LEVEL_INFO). Thread-safe. */
void	 log_level_set(int level);
int	 log_level_get(void);
/* The level named "error", "warn", "info" or "debug", or -1. */
int	 log_level_from_name(const char *name);
/* The name of a level; a static string. */
const char *log_level_name(int level);
/* Decide once whether stderr is the journal (JOURNAL_STREAM matches
 * stderr): then lines carry "<N>" priority prefixes and no timestamp. */
void	 log_open(const char *progname);

void	 log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	 log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	 log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	 log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Log at error level and exit(1). */
void	 fatal(const char *fmt, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

#endif /* NKID_LOG_H */
