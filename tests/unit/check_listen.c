/* check_listen.c: the listen room: the socket lock, the socket nkid binds, and the one systemd passes. */
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "daemon/config.h"
#include "daemon/server_listen.h"
#include "tests/unit/check_main.h"

static char		dir[64];
static char		sock[128];
static char		err[512];
static struct config	cfg;

/* cfg with socket path and the JSON settings json. */
static void
config_make(const char *path, const char *json)
{
	struct config_override	ov = { path, NULL };

	ck_assert_msg(config_load_string(&cfg, "t", json, strlen(json), &ov,
	    err, sizeof err) == 0, "%s", err);
}

static void
setup(void)
{
	check_dir_make(dir, sizeof dir, "check_listen");
	snprintf(sock, sizeof sock, "%s/nkid.sock", dir);
	config_make(sock, "{}");
}

static void
teardown(void)
{
	config_release(&cfg);
	check_dir_remove(dir);
}

CHECK_SUITE("server_listen", setup, teardown, NULL);
CHECK_TCASE(core, 0);
CHECK_TCASE(errors, 0);
CHECK_TCASE(recovery, 0);

/* A socket bound at path and closed: what a killed nkid leaves. */
static void
stale_make(const char *path)
{
	struct sockaddr_un	sun;
	int			fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	strcpy(sun.sun_path, path);
	ck_assert_int_ne(fd = socket(AF_UNIX, SOCK_STREAM, 0), -1);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sun, sizeof sun), 0);
	close(fd);
}

static int
connect_to(const char *path)
{
	struct sockaddr_un	sun;
	int			fd, rc;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	strcpy(sun.sun_path, path);
	ck_assert_int_ne(fd = socket(AF_UNIX, SOCK_STREAM, 0), -1);
	rc = connect(fd, (struct sockaddr *)&sun, sizeof sun);
	close(fd);
	return (rc);
}

CHECK_TEST(core, test_server_listen_bind)
{
	struct server_listen	l;
	struct stat		sb;
	char			lock[160], buf[32];
	mode_t			old;
	int			fd, rc;

	/* The mode is the config's whatever the umask. */
	old = umask(0);
	rc = server_listen_open(&l, &cfg, err, sizeof err);
	ck_assert_msg(rc == 0, "%s", err);
	rc = server_listen_bind(&l, &cfg, err, sizeof err);
	umask(old);
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_str_eq(l.path, sock);
	ck_assert_int_eq(l.ours, 1);
	ck_assert_int_eq(l.gid, (uint32_t)getegid());
	ck_assert_int_eq(lstat(sock, &sb), 0);
	ck_assert(S_ISSOCK(sb.st_mode));
	ck_assert_int_eq(sb.st_mode & 07777, 0660);
	ck_assert_int_eq(connect_to(sock), 0);

	/* The lock: beside the socket, close-on-exec, naming nkid. */
	snprintf(lock, sizeof lock, "%s.lock", sock);
	ck_assert_str_eq(l.lock_path, lock);
	ck_assert_int_ne(fcntl(l.lock_fd, F_GETFD) & FD_CLOEXEC, 0);
	ck_assert_int_ne(fd = open(lock, O_RDONLY), -1);
	memset(buf, 0, sizeof buf);
	ck_assert_int_gt(read(fd, buf, sizeof buf - 1), 0);
	ck_assert_int_eq(strtol(buf, NULL, 10), getpid());
	ck_assert_int_eq(flock(fd, LOCK_EX | LOCK_NB), -1);
	close(fd);

	/* Stopping removes the socket and keeps the lock. */
	server_listen_stop(&l);
	ck_assert_int_eq(l.fd, -1);
	ck_assert_int_eq(lstat(sock, &sb), -1);
	server_listen_stop(&l);
	ck_assert_int_ne(fd = open(lock, O_RDONLY), -1);
	ck_assert_int_eq(flock(fd, LOCK_EX | LOCK_NB), -1);
	server_listen_close(&l);
	ck_assert_int_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
	close(fd);
}
END_TEST

CHECK_TEST(core, test_server_listen_mode)
{
	struct server_listen	l;
	struct stat		sb;

	config_release(&cfg);
	config_make(sock, "{ \"socket_mode\": \"0600\" }");
	ck_assert_msg(server_listen_open(&l, &cfg, err, sizeof err) == 0, "%s",
	    err);
	ck_assert_msg(server_listen_bind(&l, &cfg, err, sizeof err) == 0, "%s",
	    err);
	ck_assert_int_eq(lstat(sock, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 07777, 0600);
	server_listen_close(&l);
	ck_assert_int_eq(lstat(sock, &sb), -1);
}
END_TEST

CHECK_TEST(errors, test_server_listen_lock_held)
{
	struct server_listen	l, l2;
	char			want[512];

	ck_assert_int_eq(server_listen_open(&l, &cfg, err, sizeof err), 0);
	ck_assert_int_eq(server_listen_bind(&l, &cfg, err, sizeof err), 0);
	/* flock belongs to the open file: a second open is refused. */
	ck_assert_int_eq(server_listen_open(&l2, &cfg, err, sizeof err), -1);
	snprintf(want, sizeof want, "socket '%s' is in use by nkid pid %ld "
	    "(lock '%s.lock')", sock, (long)getpid(), sock);
	ck_assert_str_eq(err, want);
	ck_assert_int_eq(l2.fd, -1);
	ck_assert_ptr_null(l2.path);
	/* The refused one touched nothing. */
	ck_assert_int_eq(connect_to(sock), 0);
	server_listen_close(&l);
	ck_assert_int_eq(server_listen_open(&l2, &cfg, err, sizeof err), 0);
	server_listen_close(&l2);
}
END_TEST

CHECK_TEST(recovery, test_server_listen_stale)
{
	struct server_listen	l;

	stale_make(sock);
	ck_assert_int_ne(connect_to(sock), 0);
	ck_assert_int_eq(server_listen_open(&l, &cfg, err, sizeof err), 0);
	ck_assert_msg(server_listen_bind(&l, &cfg, err, sizeof err) == 0, "%s",
	    err);
	ck_assert_int_eq(connect_to(sock), 0);
	server_listen_close(&l);
}
END_TEST

CHECK_TEST(errors, test_server_listen_not_socket)
{
	struct server_listen	l;
	struct stat		sb;
	char			want[256];
	int			fd;

	ck_assert_int_ne(fd = open(sock, O_CREAT | O_WRONLY, 0644), -1);
	close(fd);
	ck_assert_int_eq(server_listen_open(&l, &cfg, err, sizeof err), 0);
	ck_assert_int_eq(server_listen_bind(&l, &cfg, err, sizeof err), -1);
	snprintf(want, sizeof want, "'%s' exists and is not a socket", sock);
	ck_assert_str_eq(err, want);
	server_listen_close(&l);
	/* Not nkid's to remove. */
	ck_assert_int_eq(lstat(sock, &sb), 0);
	ck_assert(S_ISREG(sb.st_mode));
}
END_TEST

CHECK_TEST(errors, test_server_listen_group_unknown)
{
	struct server_listen	l;
	struct stat		sb;
	char			lock[160];

	config_release(&cfg);
	config_make(sock, "{ \"socket_group\": \"no-such-group-here\" }");
	ck_assert_int_eq(server_listen_open(&l, &cfg, err, sizeof err), -1);
	ck_assert_str_eq(err, "unknown socket_group 'no-such-group-here'");
	snprintf(lock, sizeof lock, "%s.lock", sock);
	ck_assert_int_eq(lstat(lock, &sb), -1);
}
END_TEST

/*
 * In a child of the test (fd 3 and the environment are the child's to
 * change): what systemd does, a socket bound at bound (listening or not)
 * as fd 3 with LISTEN_FDS=1, then server_listen_open with cfg's socket
 * at a path that does not exist. The child exits 0 if what happens
 * matches: with want_err NULL, the socket taken and locked where it is
 * bound; else that message.
 */
static void
inherit_child(const char *bound, int listening, const char *want_err)
{
	struct server_listen	l;
	struct sockaddr_un	sun;
	struct stat		sb;
	char			lock[160], cfgsock[160], pid[32];
	int			fd;

	snprintf(cfgsock, sizeof cfgsock, "%s/absent/nkid.sock", dir);
	config_release(&cfg);
	config_make(cfgsock, "{}");
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	strcpy(sun.sun_path, bound);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sun, sizeof sun) == -1 ||
	    (listening && listen(fd, 8) == -1) || dup2(fd, 3) != 3)
		_exit(10);
	close(fd);
	snprintf(pid, sizeof pid, "%ld", (long)getpid());
	setenv("LISTEN_PID", pid, 1);
	setenv("LISTEN_FDS", "1", 1);

	if (server_listen_open(&l, &cfg, err, sizeof err) != 0) {
		if (want_err != NULL && strcmp(err, want_err) == 0)
			_exit(0);
		fprintf(stderr, "inherit: %s\n", err);
		_exit(11);
	}
	if (want_err != NULL)
		_exit(12);
	snprintf(lock, sizeof lock, "%s.lock", bound);
	if (l.fd != 3 || l.ours || strcmp(l.path, bound) != 0 ||
	    strcmp(l.lock_path, lock) != 0 || stat(lock, &sb) != 0)
		_exit(13);
	if (!(fcntl(3, F_GETFD) & FD_CLOEXEC) ||
	    !(fcntl(3, F_GETFL) & O_NONBLOCK))
		_exit(14);
	/* Nothing to bind; stopping leaves systemd's socket alone. */
	if (server_listen_bind(&l, &cfg, err, sizeof err) != 0 || l.fd != 3)
		_exit(15);
	if (connect_to(bound) != 0)
		_exit(16);
	server_listen_close(&l);
	if (lstat(bound, &sb) != 0 || !S_ISSOCK(sb.st_mode))
		_exit(17);
	_exit(0);
}

static int
inherit_run(const char *bound, int listening, const char *want_err)
{
	pid_t	pid;
	int	status;

	ck_assert_int_ne(pid = fork(), -1);
	if (pid == 0)
		inherit_child(bound, listening, want_err);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return (WEXITSTATUS(status));
}

CHECK_TEST(core, test_server_listen_inherit)
{
	char	bound[160];

	snprintf(bound, sizeof bound, "%s/activated.sock", dir);
	ck_assert_int_eq(inherit_run(bound, 1, NULL), 0);
}
END_TEST

CHECK_TEST(errors, test_server_listen_inherit_not_listening)
{
	char	bound[160];

	snprintf(bound, sizeof bound, "%s/activated.sock", dir);
	ck_assert_int_eq(inherit_run(bound, 0, "the socket systemd passed "
	    "(fd 3) is not a listening unix stream socket"), 0);
}
END_TEST
