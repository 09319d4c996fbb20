/*
 * rdma-core's libmlx5 posting the requests of tests/rdma-core/wqe_requests.txt on the mlx5 model,
 * for the byte-for-byte comparison with uverbs (tests/rdma-core/wqe_compare.py; uverbs' side is
 * examples/wqe_bytes.rs, which does exactly what this program does).
 *
 *   wqe_bytes post|wr REQUESTS META
 *
 * Runs under the preload library with UVERBS_MODEL_TRACE=FILE, so that the model records every
 * send doorbell it sees (the doorbell record, the WQEs it fetches, the BlueFlame write). `post`
 * posts through ibv_post_send on QPs made by ibv_create_qp; `wr` through ibv_wr_start, ibv_wr_*
 * and ibv_wr_complete on QPs made by ibv_create_qp_ex with send_ops_flags. One RC queue pair
 * connected to itself and one UD queue pair sending to itself through an address handle; one
 * registered buffer of 64 KiB. After each post the program waits until the trace has the
 * doorbell's record (one line more), and after a signaled request until its completion came, so
 * that each post is one record. META receives what the comparison needs to put the two
 * processes' numbers side by side: the QPNs, the buffer's address and keys, the requests' labels.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define GID_INDEX 1
#define QKEY 0x11111111u
#define BUF_LEN 65536
#define RECV_AT 32768
#define UD_RECV_AT 40960
#define RECV_ID (1ull << 40)
#define MAX_STEPS 128
#define MAX_SGE 8

static void die(const char *what)
{
	fprintf(stderr, "wqe_bytes: %s: %s\n", what, strerror(errno));
	exit(1);
}

enum op { SEND, SEND_IMM, SEND_INV, WRITE, WRITE_IMM, READ, CAS, FAA };
static const char *op_names[] = { "send", "send_imm", "send_inv", "write",
				  "write_imm", "read", "cas", "faa" };

struct step {
	char label[64];
	int ud;
	enum op op;
	int signaled, fence, solicited, inl;
	int nsge;
	uint32_t off[MAX_SGE], len[MAX_SGE];
	uint64_t remote;
	uint32_t imm, inv;
	uint64_t compare, swap, add;
	int list;
};

static struct step steps[MAX_STEPS];
static int nsteps;

static void parse(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[512];
	if (!f)
		die(path);
	while (fgets(line, sizeof(line), f)) {
		char *save, *tok = strtok_r(line, " \t\n", &save);
		if (!tok || tok[0] == '#')
			continue;
		if (nsteps == MAX_STEPS) {
			fprintf(stderr, "wqe_bytes: more than %d requests\n", MAX_STEPS);
			exit(1);
		}
		struct step *s = &steps[nsteps++];
		memset(s, 0, sizeof(*s));
		s->list = 1;
		snprintf(s->label, sizeof(s->label), "%s", tok);
		char *qp = strtok_r(NULL, " \t\n", &save);
		char *op = strtok_r(NULL, " \t\n", &save);
		char *flags = strtok_r(NULL, " \t\n", &save);
		if (!qp || !op || !flags) {
			fprintf(stderr, "wqe_bytes: bad line for %s\n", s->label);
			exit(1);
		}
		s->ud = !strcmp(qp, "ud");
		s->op = (enum op)-1;
		for (unsigned i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
			if (!strcmp(op, op_names[i]))
				s->op = (enum op)i;
		if ((int)s->op < 0) {
			fprintf(stderr, "wqe_bytes: unknown op %s\n", op);
			exit(1);
		}
		s->signaled = !!strchr(flags, 's');
		s->fence = !!strchr(flags, 'f');
		s->solicited = !!strchr(flags, 'e');
		s->inl = !!strchr(flags, 'i');
		while ((tok = strtok_r(NULL, " \t\n", &save))) {
			char *v = strchr(tok, '=');
			if (!v) {
				fprintf(stderr, "wqe_bytes: bad field %s\n", tok);
				exit(1);
			}
			*v++ = 0;
			if (!strcmp(tok, "sge")) {
				char *p = v;
				while (*p) {
					if (s->nsge == MAX_SGE) {
						fprintf(stderr, "wqe_bytes: too many entries\n");
						exit(1);
					}
					s->off[s->nsge] = strtoul(p, &p, 10);
					if (*p++ != '+') {
						fprintf(stderr, "wqe_bytes: bad sge in %s\n", s->label);
						exit(1);
					}
					s->len[s->nsge++] = strtoul(p, &p, 10);
					if (*p == ',')
						p++;
				}
			} else if (!strcmp(tok, "remote"))
				s->remote = strtoull(v, NULL, 10);
			else if (!strcmp(tok, "imm"))
				s->imm = strtoul(v, NULL, 16);
			else if (!strcmp(tok, "inv"))
				s->inv = strtoul(v, NULL, 16);
			else if (!strcmp(tok, "compare"))
				s->compare = strtoull(v, NULL, 16);
			else if (!strcmp(tok, "swap"))
				s->swap = strtoull(v, NULL, 16);
			else if (!strcmp(tok, "add"))
				s->add = strtoull(v, NULL, 16);
			else if (!strcmp(tok, "list"))
				s->list = atoi(v);
			else {
				fprintf(stderr, "wqe_bytes: unknown field %s\n", tok);
				exit(1);
			}
		}
	}
	fclose(f);
}

static const char *trace_path;

static long trace_lines(void)
{
	FILE *f = fopen(trace_path, "r");
	long n = 0;
	int c;
	if (!f)
		return 0;
	while ((c = getc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Waits until the trace has `want` records (the model wrote the doorbell's). */
static void wait_trace(long want, const char *label)
{
	double deadline = now() + 30;
	while (trace_lines() < want) {
		if (now() > deadline) {
			fprintf(stderr, "wqe_bytes: %s: no trace record of its doorbell\n", label);
			exit(1);
		}
		usleep(200);
	}
}

static struct ibv_cq *cq;

/* Takes completions until `want` send completions came; receives' on the way. */
static void wait_completions(int want, const char *label)
{
	double deadline = now() + 30;
	struct ibv_wc wc[16];
	while (want > 0) {
		int n = ibv_poll_cq(cq, 16, wc);
		if (n < 0)
			die("ibv_poll_cq");
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "wqe_bytes: %s: completion %" PRIu64 ": %s\n", label,
					wc[i].wr_id, ibv_wc_status_str(wc[i].status));
				exit(1);
			}
			if (!(wc[i].wr_id & RECV_ID))
				want--;
		}
		if (n == 0 && now() > deadline) {
			fprintf(stderr, "wqe_bytes: %s: %d completions missing\n", label, want);
			exit(1);
		}
	}
}

static void modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	if (ibv_modify_qp(qp, a, mask))
		die("ibv_modify_qp");
}

static const uint64_t rc_ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV |
			       IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE |
			       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
			       IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV |
			       IBV_QP_EX_WITH_BIND_MW;
static const uint64_t ud_ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

static struct ibv_qp *create_qp(struct ibv_context *ctx, struct ibv_pd *pd, int ud, int ex)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = cq,
		.recv_cq = cq,
		/* The send ring: 16 WQEs of 256 bytes on RC (its default operations include the
		 * memory-window binds, whose WQE is the biggest), 64 basic blocks. */
		.cap = { .max_send_wr = 16, .max_recv_wr = 256, .max_send_sge = 4,
			 .max_recv_sge = 1, .max_inline_data = 60 },
		.qp_type = ud ? IBV_QPT_UD : IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	if (ex) {
		ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		ia.send_ops_flags = ud ? ud_ops : rc_ops;
	}
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &ia);
	if (!qp)
		die("ibv_create_qp_ex");
	return qp;
}

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[1], "post") && strcmp(argv[1], "wr"))) {
		fprintf(stderr, "usage: wqe_bytes post|wr REQUESTS META\n");
		return 2;
	}
	int ex = !strcmp(argv[1], "wr");
	trace_path = getenv("UVERBS_MODEL_TRACE");
	if (!trace_path) {
		fprintf(stderr, "wqe_bytes: UVERBS_MODEL_TRACE is not set\n");
		return 2;
	}
	parse(argv[2]);

	struct ibv_device **devs = ibv_get_device_list(NULL);
	if (!devs || !devs[0])
		die("no device (run under the preload library)");
	struct ibv_context *ctx = ibv_open_device(devs[0]);
	if (!ctx)
		die("ibv_open_device");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	uint8_t *buf = aligned_alloc(4096, BUF_LEN);
	if (!pd || !buf)
		die("setup");
	for (int i = 0; i < BUF_LEN; i++)
		buf[i] = (uint8_t)(i * 7 + 1);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, BUF_LEN,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	cq = ibv_create_cq(ctx, 1024, NULL, NULL, 0);
	if (!mr || !cq)
		die("setup");
	struct ibv_qp *rc = create_qp(ctx, pd, 0, ex), *ud = create_qp(ctx, pd, 1, ex);
	union ibv_gid gid;
	if (ibv_query_gid(ctx, 1, GID_INDEX, &gid))
		die("ibv_query_gid");

	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };
	modify(ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	modify(ud, &a, IBV_QP_STATE);
	a.qp_state = IBV_QPS_RTS;
	modify(ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
				  .grh = { .dgid = gid, .sgid_index = GID_INDEX, .hop_limit = 64 } };
	struct ibv_ah *ah = ibv_create_ah(pd, &aa);
	if (!ah)
		die("ibv_create_ah");

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	modify(rc, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = rc->qp_num;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = GID_INDEX;
	a.ah_attr.grh.hop_limit = 64;
	modify(rc, &a,
	       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	modify(rc, &a,
	       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		       IBV_QP_MAX_QP_RD_ATOMIC);

	/* Receives for every message that takes one. */
	int rc_recvs = 0, ud_recvs = 0;
	for (int i = 0; i < nsteps; i++) {
		int takes = steps[i].op == SEND || steps[i].op == SEND_IMM ||
			    steps[i].op == SEND_INV || steps[i].op == WRITE_IMM;
		if (takes)
			*(steps[i].ud ? &ud_recvs : &rc_recvs) += steps[i].list;
	}
	for (int u = 0; u < 2; u++) {
		int n = u ? ud_recvs : rc_recvs;
		for (int i = 0; i < n; i++) {
			struct ibv_sge s = { .addr = (uintptr_t)buf + (u ? UD_RECV_AT : RECV_AT),
					     .length = 8192, .lkey = mr->lkey };
			struct ibv_recv_wr w = { .wr_id = RECV_ID, .sg_list = &s, .num_sge = 1 },
					   *bad;
			if (ibv_post_recv(u ? ud : rc, &w, &bad))
				die("ibv_post_recv");
		}
	}

	FILE *meta = fopen(argv[3], "w");
	if (!meta)
		die(argv[3]);
	fprintf(meta,
		"{\"impl\":\"libmlx5 %s\",\"rc_qpn\":%u,\"ud_qpn\":%u,\"addr\":%" PRIu64
		",\"len\":%d,\"lkey\":%u,\"rkey\":%u,\"steps\":[",
		ex ? "ibv_wr_*" : "ibv_post_send", rc->qp_num, ud->qp_num, (uint64_t)(uintptr_t)buf,
		BUF_LEN, mr->lkey, mr->rkey);

	long records = trace_lines();
	for (int i = 0; i < nsteps; i++) {
		struct step *s = &steps[i];
		struct ibv_qp *qp = s->ud ? ud : rc;
		struct ibv_sge sg[MAX_SGE];
		struct ibv_data_buf pieces[MAX_SGE];
		for (int k = 0; k < s->nsge; k++) {
			sg[k] = (struct ibv_sge){ .addr = (uintptr_t)buf + s->off[k],
						  .length = s->len[k], .lkey = mr->lkey };
			pieces[k] = (struct ibv_data_buf){ .addr = buf + s->off[k],
							   .length = s->len[k] };
		}
		uint64_t raddr = (uintptr_t)buf + s->remote;
		unsigned flags = (s->signaled ? IBV_SEND_SIGNALED : 0) |
				 (s->fence ? IBV_SEND_FENCE : 0) |
				 (s->solicited ? IBV_SEND_SOLICITED : 0) | (s->inl ? IBV_SEND_INLINE : 0);
		static const enum ibv_wr_opcode verbs_op[] = {
			IBV_WR_SEND,	   IBV_WR_SEND_WITH_IMM,	IBV_WR_SEND_WITH_INV,
			IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
			IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
		};
		if (!ex) {
			struct ibv_send_wr wr[8], *bad;
			if (s->list > 8) {
				fprintf(stderr, "wqe_bytes: lists of at most 8\n");
				return 1;
			}
			for (int k = 0; k < s->list; k++) {
				struct ibv_send_wr *w = &wr[k];
				memset(w, 0, sizeof(*w));
				w->wr_id = (uint64_t)i << 8 | k;
				w->next = k + 1 < s->list ? &wr[k + 1] : NULL;
				w->sg_list = sg;
				w->num_sge = s->nsge;
				w->opcode = verbs_op[s->op];
				w->send_flags = flags;
				if (s->op == SEND_IMM || s->op == WRITE_IMM)
					w->imm_data = htobe32(s->imm);
				if (s->op == SEND_INV)
					w->invalidate_rkey = s->inv;
				if (s->ud) {
					w->wr.ud.ah = ah;
					w->wr.ud.remote_qpn = ud->qp_num;
					w->wr.ud.remote_qkey = QKEY;
				} else if (s->op == CAS || s->op == FAA) {
					w->wr.atomic.remote_addr = raddr;
					w->wr.atomic.rkey = mr->rkey;
					w->wr.atomic.compare_add = s->op == CAS ? s->compare : s->add;
					w->wr.atomic.swap = s->swap;
				} else {
					w->wr.rdma.remote_addr = raddr;
					w->wr.rdma.rkey = mr->rkey;
				}
			}
			if (ibv_post_send(qp, wr, &bad)) {
				fprintf(stderr, "wqe_bytes: %s: ibv_post_send failed\n", s->label);
				return 1;
			}
		} else {
			struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);
			ibv_wr_start(qpx);
			for (int k = 0; k < s->list; k++) {
				qpx->wr_id = (uint64_t)i << 8 | k;
				qpx->wr_flags = flags & ~IBV_SEND_INLINE;
				switch (s->op) {
				case SEND: ibv_wr_send(qpx); break;
				case SEND_IMM: ibv_wr_send_imm(qpx, htobe32(s->imm)); break;
				case SEND_INV: ibv_wr_send_inv(qpx, s->inv); break;
				case WRITE: ibv_wr_rdma_write(qpx, mr->rkey, raddr); break;
				case WRITE_IMM:
					ibv_wr_rdma_write_imm(qpx, mr->rkey, raddr, htobe32(s->imm));
					break;
				case READ: ibv_wr_rdma_read(qpx, mr->rkey, raddr); break;
				case CAS:
					ibv_wr_atomic_cmp_swp(qpx, mr->rkey, raddr, s->compare, s->swap);
					break;
				case FAA: ibv_wr_atomic_fetch_add(qpx, mr->rkey, raddr, s->add); break;
				}
				if (s->ud)
					ibv_wr_set_ud_addr(qpx, ah, ud->qp_num, QKEY);
				if (s->inl)
					ibv_wr_set_inline_data_list(qpx, s->nsge, pieces);
				else
					ibv_wr_set_sge_list(qpx, s->nsge, sg);
			}
			if (ibv_wr_complete(qpx)) {
				fprintf(stderr, "wqe_bytes: %s: ibv_wr_complete failed\n", s->label);
				return 1;
			}
		}
		wait_trace(++records, s->label);
		if (s->signaled)
			wait_completions(s->list, s->label);
		fprintf(meta, "%s{\"label\":\"%s\",\"qp\":\"%s\"}", i ? "," : "", s->label,
			s->ud ? "ud" : "rc");
	}
	fprintf(meta, "]}\n");
	fclose(meta);
	/* The receives' completions and any left: nothing may have failed. */
	struct ibv_wc wc[16];
	int n;
	while ((n = ibv_poll_cq(cq, 16, wc)) > 0)
		for (int k = 0; k < n; k++)
			if (wc[k].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "wqe_bytes: completion %" PRIu64 ": %s\n", wc[k].wr_id,
					ibv_wc_status_str(wc[k].status));
				return 1;
			}
	ibv_destroy_ah(ah);
	ibv_destroy_qp(rc);
	ibv_destroy_qp(ud);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(devs);
	free(buf);
	return 0;
}
