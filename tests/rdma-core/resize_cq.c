/* libmlx5's ibv_resize_cq on the mlx5 model, with completions waiting: libmlx5 hands the kernel a
 * new ring, expects the device to have written a resize CQE into the old ring after the waiting
 * entries, and copies those entries over (mlx5_cq_resize_copy_cqes). If the model's resize CQE is
 * not where libmlx5 looks, the waiting completions are lost or libmlx5 complains on stderr.
 *
 * Run by tests/rdma-core/run under the preload library (the model is mlx5_0). One RC queue pair
 * connected to itself writes into its own memory; the test sees that the device has written the
 * CQEs by reading their owner bits through mlx5dv (the CQ's buffer, as libmlx5 exposes it), never by
 * polling them. Exit status 0 when every completion arrives once, in order, after each resize. */
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAIL(...) do { fprintf(stderr, "resize_cq: " __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } while (0)

static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct ibv_mr *mr;
static uint64_t next_id, polled;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Whether the device has written the CQE the consumer will reach `ahead` entries from now. */
static int written(uint32_t ahead)
{
	struct mlx5dv_cq dv;
	struct mlx5dv_obj obj = { .cq = { .in = cq, .out = &dv } };
	if (mlx5dv_init_obj(&obj, MLX5DV_OBJ_CQ))
		FAIL("mlx5dv_init_obj");
	/* libmlx5 counts every CQE it consumed, the resize CQEs included; ours is the number of
	 * completions polled plus one per resize, which the caller keeps in `polled`. */
	uint32_t index = (uint32_t)(polled + ahead);
	uint8_t *cqe = (uint8_t *)dv.buf + (index & (dv.cqe_cnt - 1)) * dv.cqe_size + dv.cqe_size - 64;
	uint8_t op_own = __atomic_load_n(&cqe[63], __ATOMIC_ACQUIRE);
	return (op_own >> 4) != MLX5_CQE_INVALID && (op_own & 1) == !!(index & dv.cqe_cnt);
}

static void post_and_wait(int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = 64, .lkey = mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = next_id++, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = (uintptr_t)mr->addr + 2048, .rkey = mr->rkey },
		}, *bad;
		if (ibv_post_send(qp, &wr, &bad))
			FAIL("ibv_post_send");
	}
	double deadline = now() + 30;
	while (!written(n - 1))
		if (now() > deadline)
			FAIL("the device wrote no %d CQEs", n);
}

static uint64_t resizes;

static void drain(int n)
{
	struct ibv_wc wc[16];
	int got = ibv_poll_cq(cq, 16, wc);
	if (got != n)
		FAIL("%d completions, expected %d", got, n);
	for (int i = 0; i < got; i++) {
		uint64_t want = next_id - n + i;
		if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != want)
			FAIL("completion %d: wr_id %llu status %s, expected %llu", i,
			     (unsigned long long)wc[i].wr_id, ibv_wc_status_str(wc[i].status),
			     (unsigned long long)want);
	}
	polled += got;
}

static void resize(int cqe, int expect)
{
	if (ibv_resize_cq(cq, cqe))
		FAIL("ibv_resize_cq(%d) failed", cqe);
	if (cq->cqe != expect)
		FAIL("ibv_resize_cq(%d): %d entries, expected %d", cqe, cq->cqe, expect);
	polled++; /* the resize CQE libmlx5 stepped over */
	resizes++;
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		FAIL("no device");
	struct ibv_context *ctx = ibv_open_device(list[0]);
	if (!ctx)
		FAIL("ibv_open_device");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	static char buf[4096];
	mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	cq = ibv_create_cq(ctx, 7, NULL, NULL, 0);
	if (!pd || !mr || !cq)
		FAIL("pd, mr or cq");
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	qp = ibv_create_qp(pd, &init);
	if (!qp)
		FAIL("ibv_create_qp");
	union ibv_gid gid;
	if (ibv_query_gid(ctx, 1, 1, &gid))
		FAIL("ibv_query_gid");
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		FAIL("INIT");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		FAIL("RTR");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		FAIL("RTS");

	/* Wrap the ring of 8 first, so that the copy crosses its end. */
	for (int round = 0; round < 3; round++) {
		post_and_wait(5);
		drain(5);
	}
	post_and_wait(6);
	resize(100, 127); /* grown with six waiting */
	drain(6);
	post_and_wait(7);
	resize(20, 31); /* shrunk with seven waiting */
	drain(7);
	for (int round = 0; round < 10; round++) { /* and around the new ring */
		post_and_wait(5);
		drain(5);
	}
	printf("resize_cq: %llu completions in order across %llu resizes with completions waiting\n",
	       (unsigned long long)next_id, (unsigned long long)resizes);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
