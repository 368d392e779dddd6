/*
 * ipc_floor.c: the floor of a round trip between two processes: COUNT
 * 64-byte messages sent from a parent to its child over a Unix stream
 * socket pair and echoed back, printing p50 and p99 in microseconds. What
 * nkid's warm calls are measured against (make bench: ipc_floor_us).
 *
 *	ipc_floor COUNT
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define IPC_FLOOR_BYTES	64

static double
ipc_now_us(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec * 1e6 + ts.tv_nsec / 1e3);
}

static int
ipc_cmp(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return ((x > y) - (x < y));
}

/* Read exactly n bytes; 0 at EOF or on error. */
static int
ipc_read(int fd, char *b, size_t n)
{
	ssize_t	r;
	size_t	got = 0;

	while (got < n) {
		if ((r = read(fd, b + got, n - got)) <= 0)
			return (0);
		got += (size_t)r;
	}
	return (1);
}

int
main(int argc, char **argv)
{
	char	 msg[IPC_FLOOR_BYTES] = { 0 };
	double	*lat, t0;
	int	 sv[2], count, i, status;
	pid_t	 pid;

	if (argc != 2 || (count = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: ipc_floor COUNT\n");
		return (2);
	}
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
		perror("ipc_floor: socketpair");
		return (1);
	}
	if ((pid = fork()) < 0) {
		perror("ipc_floor: fork");
		return (1);
	}
	if (pid == 0) {
		close(sv[0]);
		while (ipc_read(sv[1], msg, sizeof msg))
			if (write(sv[1], msg, sizeof msg) != sizeof msg)
				_exit(1);
		_exit(0);
	}
	close(sv[1]);
	lat = calloc((size_t)count, sizeof *lat);
	for (i = 0; i < count; i++) {
		t0 = ipc_now_us();
		if (write(sv[0], msg, sizeof msg) != sizeof msg ||
		    !ipc_read(sv[0], msg, sizeof msg)) {
			fprintf(stderr, "ipc_floor: the child went away\n");
			return (1);
		}
		lat[i] = ipc_now_us() - t0;
	}
	close(sv[0]);
	waitpid(pid, &status, 0);
	qsort(lat, (size_t)count, sizeof *lat, ipc_cmp);
	printf("count %d p50 %.1f p99 %.1f us\n", count, lat[count / 2],
	    lat[(int)(count * 0.99)]);
	free(lat);
	return (0);
}
