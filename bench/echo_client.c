/*
 * echo_client.c: the benchmark's baseline client: COUNT unary calls over
 * one channel to a method on a Unix socket, printing p50 and p99 round
 * trips in microseconds. Not part of nkid.
 *
 *	echo_client SOCKET METHOD COUNT [REQUEST_FILE]
 *
 * The request is empty, or the bytes of REQUEST_FILE (a serialized
 * message, e.g. a RunRequest: the daemon's cost of a method over Ping's).
 */
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
echo_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int
echo_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
	char target[512];
	int count;
	grpc_slice payload = grpc_empty_slice();

	if ((argc != 4 && argc != 5) || (count = atoi(argv[3])) <= 0) {
		fprintf(stderr, "usage: echo_client SOCKET METHOD COUNT "
		    "[REQUEST_FILE]\n");
		return 2;
	}
	if (argc == 5) {
		FILE *f = fopen(argv[4], "rb");
		char *buf;
		long n;

		if (f == NULL || fseek(f, 0, SEEK_END) != 0 ||
		    (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
			fprintf(stderr, "echo_client: cannot read '%s'\n",
			    argv[4]);
			return 1;
		}
		buf = malloc(n > 0 ? (size_t)n : 1);
		if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
			fprintf(stderr, "echo_client: cannot read '%s'\n",
			    argv[4]);
			return 1;
		}
		fclose(f);
		grpc_init();
		payload = grpc_slice_from_copied_buffer(buf, (size_t)n);
		free(buf);
	} else
		grpc_init();
	snprintf(target, sizeof(target), "unix:%s", argv[1]);
	grpc_channel_credentials *creds = grpc_insecure_credentials_create();
	grpc_channel *ch = grpc_channel_create(target, creds, NULL);
	grpc_channel_credentials_release(creds);
	grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
	grpc_slice method = grpc_slice_from_copied_string(argv[2]);
	double *lat = calloc(count, sizeof(*lat));
	int failed = 0;

	for (int i = 0; i < count; i++) {
		grpc_byte_buffer *req = grpc_raw_byte_buffer_create(&payload, 1);
		grpc_byte_buffer *resp = NULL;
		grpc_metadata_array imd, tmd;
		grpc_status_code status;
		grpc_slice details;
		grpc_op ops[6];
		double t0 = echo_now_us();

		grpc_metadata_array_init(&imd);
		grpc_metadata_array_init(&tmd);
		grpc_call *call = grpc_channel_create_call(ch, NULL,
		    GRPC_PROPAGATE_DEFAULTS, cq, method, NULL,
		    gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		memset(ops, 0, sizeof(ops));
		ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
		ops[1].op = GRPC_OP_SEND_MESSAGE;
		ops[1].data.send_message.send_message = req;
		ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
		ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
		ops[3].data.recv_initial_metadata.recv_initial_metadata = &imd;
		ops[4].op = GRPC_OP_RECV_MESSAGE;
		ops[4].data.recv_message.recv_message = &resp;
		ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
		ops[5].data.recv_status_on_client.trailing_metadata = &tmd;
		ops[5].data.recv_status_on_client.status = &status;
		ops[5].data.recv_status_on_client.status_details = &details;
		grpc_call_start_batch(call, ops, 6, (void *)1, NULL);
		grpc_completion_queue_pluck(cq, (void *)1,
		    gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		lat[i] = echo_now_us() - t0;
		if (status != GRPC_STATUS_OK)
			failed++;
		if (resp)
			grpc_byte_buffer_destroy(resp);
		grpc_byte_buffer_destroy(req);
		grpc_slice_unref(details);
		grpc_metadata_array_destroy(&imd);
		grpc_metadata_array_destroy(&tmd);
		grpc_call_unref(call);
	}
	qsort(lat, count, sizeof(*lat), echo_cmp);
	printf("count %d failed %d p50 %.1f p99 %.1f us\n", count, failed,
	    lat[count / 2], lat[(int)(count * 0.99)]);
	free(lat);
	grpc_slice_unref(method);
	grpc_slice_unref(payload);
	grpc_channel_destroy(ch);
	grpc_completion_queue_shutdown(cq);
	grpc_completion_queue_destroy(cq);
	grpc_shutdown();
	return failed ? 1 : 0;
}
