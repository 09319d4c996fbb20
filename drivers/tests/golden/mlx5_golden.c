/*
 * Golden vectors for uverbs' mlx5 WQE builder and CQE parser (drivers/tests/mlx5_golden.rs).
 *
 * Built against rdma-core's installed <infiniband/mlx5dv.h> (Debian: libibverbs-dev): the segment
 * and CQE structs are the header's, filled with the header's helpers where it has them
 * (mlx5dv_set_ctrl_seg, mlx5dv_set_data_seg, mlx5dv_set_dgram_seg, mlx5dv_get_cqe_*,
 * mlx5dv_set_cqe_owner) and with htobe*() field stores where it does not. The send-queue part
 * places segments in a ring with the placement rules of rdma-core's _mlx5_post_send and decides
 * the doorbell as post_send_db does; the CQE part decodes with the expressions of rdma-core's cq.c.
 *
 * Protocol: one command per input line, one output line per command (hex is lowercase, no
 * separators). See the Rust test for the commands.
 *
 * Two deliberate differences from rdma-core, which uverbs shares: the padding after inline data and
 * the compare field of a fetch-and-add are written as zero (rdma-core leaves them as they were).
 */
#define _GNU_SOURCE
#include <endian.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

static char *tok_state;

static uint64_t num(void)
{
	char *t = strtok_r(NULL, " \t\r\n", &tok_state);
	char *end;
	uint64_t v;

	if (!t) {
		fprintf(stderr, "mlx5_golden: missing argument\n");
		exit(2);
	}
	v = strtoull(t, &end, 0);
	if (*end) {
		fprintf(stderr, "mlx5_golden: bad number '%s'\n", t);
		exit(2);
	}
	return v;
}

static void hex(const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		printf("%02x", b[i]);
}

/* The test's deterministic byte patterns. */
static uint8_t inline_byte(uint64_t seed, size_t i)
{
	return (uint8_t)(seed * 31 + i * 7 + 1);
}

static void gid_from_seed(uint8_t *gid, uint64_t seed)
{
	int i;

	for (i = 0; i < 16; i++)
		gid[i] = (uint8_t)(seed + i * 13);
}

static void mac_from_u48(uint8_t *mac, uint64_t v)
{
	int i;

	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)(v >> (40 - 8 * i));
}

#define OFF(type, field) ((int)offsetof(struct type, field))

static void layout(const char *what)
{
	if (!strcmp(what, "ctrl"))
		printf("%zu %d %d %d %d %d %d", sizeof(struct mlx5_wqe_ctrl_seg),
		       OFF(mlx5_wqe_ctrl_seg, opmod_idx_opcode), OFF(mlx5_wqe_ctrl_seg, qpn_ds),
		       OFF(mlx5_wqe_ctrl_seg, signature),
		       OFF(mlx5_wqe_ctrl_seg, dci_stream_channel_id),
		       OFF(mlx5_wqe_ctrl_seg, fm_ce_se), OFF(mlx5_wqe_ctrl_seg, imm));
	else if (!strcmp(what, "raddr"))
		printf("%zu %d %d %d", sizeof(struct mlx5_wqe_raddr_seg),
		       OFF(mlx5_wqe_raddr_seg, raddr), OFF(mlx5_wqe_raddr_seg, rkey),
		       OFF(mlx5_wqe_raddr_seg, reserved));
	else if (!strcmp(what, "atomic"))
		printf("%zu %d %d", sizeof(struct mlx5_wqe_atomic_seg),
		       OFF(mlx5_wqe_atomic_seg, swap_add), OFF(mlx5_wqe_atomic_seg, compare));
	else if (!strcmp(what, "data"))
		printf("%zu %d %d %d", sizeof(struct mlx5_wqe_data_seg),
		       OFF(mlx5_wqe_data_seg, byte_count), OFF(mlx5_wqe_data_seg, lkey),
		       OFF(mlx5_wqe_data_seg, addr));
	else if (!strcmp(what, "inl"))
		printf("%zu %d", sizeof(struct mlx5_wqe_inl_data_seg),
		       OFF(mlx5_wqe_inl_data_seg, byte_count));
	else if (!strcmp(what, "av"))
		printf("%zu %d %d %d %d %d %d %d %d %d %d %d %d", sizeof(struct mlx5_wqe_av),
		       OFF(mlx5_wqe_av, key.qkey.qkey), OFF(mlx5_wqe_av, key.qkey.reserved),
		       OFF(mlx5_wqe_av, dqp_dct), OFF(mlx5_wqe_av, stat_rate_sl),
		       OFF(mlx5_wqe_av, fl_mlid), OFF(mlx5_wqe_av, rlid),
		       OFF(mlx5_wqe_av, reserved0), OFF(mlx5_wqe_av, rmac),
		       OFF(mlx5_wqe_av, tclass), OFF(mlx5_wqe_av, hop_limit),
		       OFF(mlx5_wqe_av, grh_gid_fl), OFF(mlx5_wqe_av, rgid));
	else if (!strcmp(what, "dgram"))
		printf("%zu %d", sizeof(struct mlx5_wqe_datagram_seg),
		       OFF(mlx5_wqe_datagram_seg, av));
	else if (!strcmp(what, "cqe64"))
		printf("%zu %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d",
		       sizeof(struct mlx5_cqe64), OFF(mlx5_cqe64, rsvd0), OFF(mlx5_cqe64, wqe_id),
		       OFF(mlx5_cqe64, rsvd4), OFF(mlx5_cqe64, ml_path), OFF(mlx5_cqe64, rsvd20),
		       OFF(mlx5_cqe64, slid), OFF(mlx5_cqe64, flags_rqpn),
		       OFF(mlx5_cqe64, hds_ip_ext), OFF(mlx5_cqe64, l4_hdr_type_etc),
		       OFF(mlx5_cqe64, vlan_info), OFF(mlx5_cqe64, srqn_uidx),
		       OFF(mlx5_cqe64, imm_inval_pkey), OFF(mlx5_cqe64, app),
		       OFF(mlx5_cqe64, app_op), OFF(mlx5_cqe64, app_info),
		       OFF(mlx5_cqe64, byte_cnt), OFF(mlx5_cqe64, timestamp),
		       OFF(mlx5_cqe64, sop_drop_qpn), OFF(mlx5_cqe64, wqe_counter),
		       OFF(mlx5_cqe64, signature), OFF(mlx5_cqe64, op_own));
	else if (!strcmp(what, "errcqe"))
		printf("%zu %d %d %d %d %d %d %d %d %d", sizeof(struct mlx5_err_cqe),
		       OFF(mlx5_err_cqe, rsvd0), OFF(mlx5_err_cqe, srqn), OFF(mlx5_err_cqe, rsvd1),
		       OFF(mlx5_err_cqe, vendor_err_synd), OFF(mlx5_err_cqe, syndrome),
		       OFF(mlx5_err_cqe, s_wqe_opcode_qpn), OFF(mlx5_err_cqe, wqe_counter),
		       OFF(mlx5_err_cqe, signature), OFF(mlx5_err_cqe, op_own));
	else {
		fprintf(stderr, "mlx5_golden: unknown layout '%s'\n", what);
		exit(2);
	}
}

/* The header's constants, in the order the Rust test lists its own. */
static void consts(void)
{
	const long long c[] = {
		MLX5_OPCODE_NOP, MLX5_OPCODE_SEND_INVAL, MLX5_OPCODE_RDMA_WRITE,
		MLX5_OPCODE_RDMA_WRITE_IMM, MLX5_OPCODE_SEND, MLX5_OPCODE_SEND_IMM,
		MLX5_OPCODE_TSO, MLX5_OPCODE_RDMA_READ, MLX5_OPCODE_ATOMIC_CS,
		MLX5_OPCODE_ATOMIC_FA, MLX5_OPCODE_LOCAL_INVAL, MLX5_OPCODE_UMR,
		MLX5_WQE_CTRL_FENCE, MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE, MLX5_WQE_CTRL_CQ_UPDATE,
		MLX5_WQE_CTRL_SOLICITED, MLX5_SEND_WQE_BB, MLX5_SEND_WQE_SHIFT,
		(long long)MLX5_INLINE_SEG, (long long)MLX5_EXTENDED_UD_AV, MLX5_INVALID_LKEY,
		MLX5_RCV_DBR, MLX5_SND_DBR,
		MLX5_CQE_REQ, MLX5_CQE_RESP_WR_IMM, MLX5_CQE_RESP_SEND, MLX5_CQE_RESP_SEND_IMM,
		MLX5_CQE_RESP_SEND_INV, MLX5_CQE_RESIZE_CQ, MLX5_CQE_NO_PACKET, MLX5_CQE_SIG_ERR,
		MLX5_CQE_REQ_ERR, MLX5_CQE_RESP_ERR, MLX5_CQE_INVALID, MLX5_CQE_OWNER_MASK,
		MLX5_INLINE_SCATTER_32, MLX5_INLINE_SCATTER_64,
		MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR,
		MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, MLX5_CQE_SYNDROME_WR_FLUSH_ERR,
		MLX5_CQE_SYNDROME_MW_BIND_ERR, MLX5_CQE_SYNDROME_BAD_RESP_ERR,
		MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR,
		MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, MLX5_CQE_SYNDROME_REMOTE_OP_ERR,
		MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR,
		MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR,
		MLX5_CQ_DOORBELL, MLX5_CQ_DB_REQ_NOT_SOL, MLX5_CQ_DB_REQ_NOT,
		IBV_WC_SUCCESS, IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_QP_OP_ERR, IBV_WC_LOC_PROT_ERR,
		IBV_WC_WR_FLUSH_ERR, IBV_WC_MW_BIND_ERR, IBV_WC_BAD_RESP_ERR,
		IBV_WC_LOC_ACCESS_ERR, IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_ACCESS_ERR,
		IBV_WC_REM_OP_ERR, IBV_WC_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR,
		IBV_WC_REM_ABORT_ERR, IBV_WC_GENERAL_ERR,
		IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_COMP_SWAP,
		IBV_WC_FETCH_ADD, IBV_WC_BIND_MW, IBV_WC_LOCAL_INV, IBV_WC_TSO, IBV_WC_RECV,
		IBV_WC_RECV_RDMA_WITH_IMM,
		IBV_WC_GRH, IBV_WC_WITH_IMM, IBV_WC_IP_CSUM_OK, IBV_WC_WITH_INV,
	};
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		printf("%s%lld", i ? " " : "", c[i]);
}

/* rdma-core cq.c mlx5_handle_error_cqe, with the header's names. */
static enum ibv_wc_status error_status(uint8_t syndrome)
{
	switch (syndrome) {
	case MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR: return IBV_WC_LOC_LEN_ERR;
	case MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR: return IBV_WC_LOC_QP_OP_ERR;
	case MLX5_CQE_SYNDROME_LOCAL_PROT_ERR: return IBV_WC_LOC_PROT_ERR;
	case MLX5_CQE_SYNDROME_WR_FLUSH_ERR: return IBV_WC_WR_FLUSH_ERR;
	case MLX5_CQE_SYNDROME_MW_BIND_ERR: return IBV_WC_MW_BIND_ERR;
	case MLX5_CQE_SYNDROME_BAD_RESP_ERR: return IBV_WC_BAD_RESP_ERR;
	case MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR: return IBV_WC_LOC_ACCESS_ERR;
	case MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR: return IBV_WC_REM_INV_REQ_ERR;
	case MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR: return IBV_WC_REM_ACCESS_ERR;
	case MLX5_CQE_SYNDROME_REMOTE_OP_ERR: return IBV_WC_REM_OP_ERR;
	case MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR: return IBV_WC_RETRY_EXC_ERR;
	case MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR: return IBV_WC_RNR_RETRY_EXC_ERR;
	case MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR: return IBV_WC_REM_ABORT_ERR;
	default: return IBV_WC_GENERAL_ERR;
	}
}

static void cqe_cmd(void)
{
	struct mlx5_cqe64 cqe;
	uint32_t wc_opcode = 0, wc_flags = 0, byte_len = 0;
	int have_wc = 1;
	uint32_t imm;

	memset(&cqe, 0, sizeof(cqe));
	cqe.wqe_id = htobe16((uint16_t)num());
	cqe.ml_path = (uint8_t)num();
	cqe.slid = htobe16((uint16_t)num());
	cqe.flags_rqpn = htobe32((uint32_t)num());
	cqe.hds_ip_ext = (uint8_t)num();
	cqe.l4_hdr_type_etc = (uint8_t)num();
	cqe.vlan_info = htobe16((uint16_t)num());
	cqe.srqn_uidx = htobe32((uint32_t)num());
	cqe.imm_inval_pkey = htobe32((uint32_t)num());
	cqe.app = (uint8_t)num();
	cqe.app_op = (uint8_t)num();
	cqe.app_info = htobe16((uint16_t)num());
	cqe.byte_cnt = htobe32((uint32_t)num());
	cqe.timestamp = htobe64(num());
	cqe.sop_drop_qpn = htobe32((uint32_t)num());
	cqe.wqe_counter = htobe16((uint16_t)num());
	cqe.signature = (uint8_t)num();
	cqe.op_own = (uint8_t)num();

	/* handle_good_req / handle_responder (cq.c) */
	switch (mlx5dv_get_cqe_opcode(&cqe)) {
	case MLX5_CQE_REQ:
		switch (be32toh(cqe.sop_drop_qpn) >> 24) {
		case MLX5_OPCODE_RDMA_WRITE_IMM:
			wc_flags |= IBV_WC_WITH_IMM;
			/* fall through */
		case MLX5_OPCODE_RDMA_WRITE:
			wc_opcode = IBV_WC_RDMA_WRITE;
			break;
		case MLX5_OPCODE_SEND_IMM:
			wc_flags |= IBV_WC_WITH_IMM;
			/* fall through */
		case MLX5_OPCODE_SEND:
		case MLX5_OPCODE_SEND_INVAL:
			wc_opcode = IBV_WC_SEND;
			break;
		case MLX5_OPCODE_RDMA_READ:
			wc_opcode = IBV_WC_RDMA_READ;
			byte_len = be32toh(cqe.byte_cnt);
			break;
		case MLX5_OPCODE_ATOMIC_CS:
			wc_opcode = IBV_WC_COMP_SWAP;
			byte_len = 8;
			break;
		case MLX5_OPCODE_ATOMIC_FA:
			wc_opcode = IBV_WC_FETCH_ADD;
			byte_len = 8;
			break;
		case MLX5_OPCODE_TSO:
			wc_opcode = IBV_WC_TSO;
			break;
		default:
			have_wc = 0;
		}
		break;
	case MLX5_CQE_RESP_WR_IMM:
		wc_opcode = IBV_WC_RECV_RDMA_WITH_IMM;
		wc_flags |= IBV_WC_WITH_IMM;
		break;
	case MLX5_CQE_RESP_SEND:
		wc_opcode = IBV_WC_RECV;
		break;
	case MLX5_CQE_RESP_SEND_IMM:
		wc_opcode = IBV_WC_RECV;
		wc_flags |= IBV_WC_WITH_IMM;
		break;
	case MLX5_CQE_RESP_SEND_INV:
		wc_opcode = IBV_WC_RECV;
		wc_flags |= IBV_WC_WITH_INV;
		break;
	default:
		have_wc = 0;
	}
	if (have_wc && mlx5dv_get_cqe_opcode(&cqe) != MLX5_CQE_REQ) {
		byte_len = be32toh(cqe.byte_cnt);
		if ((be32toh(cqe.flags_rqpn) >> 28) & 3)
			wc_flags |= IBV_WC_GRH;
	}

	memcpy(&imm, &cqe.imm_inval_pkey, 4); /* wc->imm_data = cqe->imm_inval_pkey */
	hex(&cqe, sizeof(cqe));
	printf(" %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %" PRIu64 " %u",
	       mlx5dv_get_cqe_owner(&cqe), mlx5dv_get_cqe_se(&cqe), mlx5dv_get_cqe_format(&cqe),
	       mlx5dv_get_cqe_opcode(&cqe), be32toh(cqe.sop_drop_qpn) & 0xffffff,
	       be32toh(cqe.sop_drop_qpn) >> 24, be32toh(cqe.flags_rqpn) & 0xffffff,
	       (be32toh(cqe.flags_rqpn) >> 24) & 0xf, ((be32toh(cqe.flags_rqpn) >> 28) & 3) != 0,
	       be32toh(cqe.srqn_uidx) & 0xffffff, be32toh(cqe.byte_cnt), imm,
	       be32toh(cqe.imm_inval_pkey) & 0xffff, be16toh(cqe.wqe_counter),
	       be16toh(cqe.slid), cqe.ml_path & 0x7f, be64toh(cqe.timestamp),
	       be32toh(cqe.imm_inval_pkey));
	if (have_wc)
		printf(" wc %u %u %u", wc_opcode, wc_flags, byte_len);
	else
		printf(" nowc");
}

static void errcqe_cmd(void)
{
	struct mlx5_err_cqe e;

	memset(&e, 0, sizeof(e));
	e.srqn = htobe32((uint32_t)num());
	e.vendor_err_synd = (uint8_t)num();
	e.syndrome = (uint8_t)num();
	e.s_wqe_opcode_qpn = htobe32((uint32_t)num());
	e.wqe_counter = htobe16((uint16_t)num());
	e.signature = (uint8_t)num();
	e.op_own = (uint8_t)num();
	hex(&e, sizeof(e));
	printf(" %u %u %u %u %u %u %u", e.syndrome, e.vendor_err_synd, error_status(e.syndrome),
	       be32toh(e.s_wqe_opcode_qpn) & 0xffffff, be32toh(e.s_wqe_opcode_qpn) >> 24,
	       be16toh(e.wqe_counter),
	       mlx5dv_get_cqe_opcode((struct mlx5_cqe64 *)(void *)&e));
}

/* get_sw_cqe (cq.c): cq->verbs_cq.cq.cqe is ncqe - 1. */
static void own_cmd(void)
{
	uint32_t n = (uint32_t)num();
	uint32_t ncqe = (uint32_t)num();
	struct mlx5_cqe64 cqe;
	struct mlx5_cqe64 *cqe64 = &cqe;
	uint32_t cqe_field = ncqe - 1;

	memset(&cqe, 0, sizeof(cqe));
	cqe.op_own = (uint8_t)num();
	printf("%d", mlx5dv_get_cqe_opcode(cqe64) != MLX5_CQE_INVALID &&
			     !((cqe64->op_own & MLX5_CQE_OWNER_MASK) ^ !!(n & (cqe_field + 1))));
}

static void setown_cmd(void)
{
	struct mlx5_cqe64 cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.op_own = (uint8_t)num();
	mlx5dv_set_cqe_owner(&cqe, (uint8_t)num());
	printf("%u", cqe.op_own);
}

/* update_cons_index and mlx5_arm_cq (cq.c) */
static void cqdb_cmd(void)
{
	uint32_t cons_index = (uint32_t)num();
	uint32_t arm_sn = (uint32_t)num();
	int solicited = (int)num();
	uint32_t cqn = (uint32_t)num();
	__be32 set_ci, arm;
	uint64_t doorbell;
	__be64 uar;
	uint32_t sn, ci, cmd;

	set_ci = htobe32(cons_index & 0xffffff);
	sn = arm_sn & 3;
	ci = cons_index & 0xffffff;
	cmd = solicited ? MLX5_CQ_DB_REQ_NOT_SOL : MLX5_CQ_DB_REQ_NOT;
	doorbell = sn << 28 | cmd | ci;
	doorbell <<= 32;
	doorbell |= cqn;
	arm = htobe32(sn << 28 | cmd | ci);
	uar = htobe64(doorbell);
	hex(&set_ci, 4);
	printf(" ");
	hex(&arm, 4);
	printf(" ");
	hex(&uar, 8);
}

static void ctrl_cmd(void)
{
	struct mlx5_wqe_ctrl_seg c;
	uint16_t pi = (uint16_t)num();
	uint8_t opcode = (uint8_t)num();
	uint8_t opmod = (uint8_t)num();
	uint32_t qpn = (uint32_t)num();
	uint8_t fm_ce_se = (uint8_t)num();
	uint8_t ds = (uint8_t)num();
	uint8_t signature = (uint8_t)num();
	uint32_t imm = (uint32_t)num();

	memset(&c, 0, sizeof(c));
	mlx5dv_set_ctrl_seg(&c, pi, opcode, opmod, qpn, fm_ce_se, ds, signature, htobe32(imm));
	hex(&c, sizeof(c));
}

static void data_cmd(void)
{
	struct mlx5_wqe_data_seg d;
	uint32_t len = (uint32_t)num();
	uint32_t lkey = (uint32_t)num();
	uint64_t addr = num();

	mlx5dv_set_data_seg(&d, len, lkey, (uintptr_t)addr);
	hex(&d, sizeof(d));
}

static void raddr_cmd(void)
{
	struct mlx5_wqe_raddr_seg r;

	r.raddr = htobe64(num());
	r.rkey = htobe32((uint32_t)num());
	r.reserved = 0;
	hex(&r, sizeof(r));
}

static void atomic_cmd(void)
{
	struct mlx5_wqe_atomic_seg a;

	a.swap_add = htobe64(num());
	a.compare = htobe64(num());
	hex(&a, sizeof(a));
}

static void inl_cmd(void)
{
	uint8_t buf[2048];
	struct mlx5_wqe_inl_data_seg *seg = (void *)buf;
	size_t len = (size_t)num();
	uint64_t seed = num();
	size_t i, total = (sizeof(*seg) + len + 15) & ~(size_t)15;

	if (total > sizeof(buf))
		exit(2);
	memset(buf, 0, sizeof(buf));
	seg->byte_count = htobe32((uint32_t)len | MLX5_INLINE_SEG);
	for (i = 0; i < len; i++)
		buf[sizeof(*seg) + i] = inline_byte(seed, i);
	hex(buf, total);
}

/* Reads the datagram fields of a command and fills *seg with mlx5dv_set_dgram_seg. */
static void read_dgram(struct mlx5_wqe_datagram_seg *seg, uint64_t key, uint32_t dqp, uint8_t ext)
{
	uint8_t stat_rate_sl = (uint8_t)num();
	uint8_t fl_mlid = (uint8_t)num();
	uint16_t rlid = (uint16_t)num();
	uint8_t rmac[6], rgid[16];
	uint8_t tclass, hop_limit;
	uint32_t grh_gid_fl;

	mac_from_u48(rmac, num());
	tclass = (uint8_t)num();
	hop_limit = (uint8_t)num();
	grh_gid_fl = (uint32_t)num();
	gid_from_seed(rgid, num());
	memset(seg, 0, sizeof(*seg));
	mlx5dv_set_dgram_seg(seg, key, dqp, ext, stat_rate_sl, fl_mlid, rlid, rmac, tclass,
			     hop_limit, grh_gid_fl, rgid);
}

static void dgram_cmd(void)
{
	struct mlx5_wqe_datagram_seg seg;
	uint64_t key = num();
	uint32_t dqp = (uint32_t)num();
	uint8_t ext = (uint8_t)num();

	read_dgram(&seg, key, dqp, ext);
	hex(&seg, sizeof(seg));
}

/*
 * The send queue: rdma-core's _mlx5_post_send placement and post_send_db's doorbell choice.
 */
static struct {
	uint8_t *buf;
	uint8_t *qend;
	uint32_t wqe_cnt;
	uint32_t qpn;
	int qp_type;
	int sig_all;
	uint32_t cur_post;
	/* since the last doorbell */
	int nreq;
	int inl;
	int size;
	uint8_t *ctrl;
	uint32_t start;
} sq;

static const uint32_t mlx5_ib_opcode[] = {
	[IBV_WR_SEND] = MLX5_OPCODE_SEND,
	[IBV_WR_SEND_WITH_INV] = MLX5_OPCODE_SEND_INVAL,
	[IBV_WR_SEND_WITH_IMM] = MLX5_OPCODE_SEND_IMM,
	[IBV_WR_RDMA_WRITE] = MLX5_OPCODE_RDMA_WRITE,
	[IBV_WR_RDMA_WRITE_WITH_IMM] = MLX5_OPCODE_RDMA_WRITE_IMM,
	[IBV_WR_RDMA_READ] = MLX5_OPCODE_RDMA_READ,
	[IBV_WR_ATOMIC_CMP_AND_SWP] = MLX5_OPCODE_ATOMIC_CS,
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = MLX5_OPCODE_ATOMIC_FA,
};

static void *get_send_wqe(uint32_t n)
{
	return sq.buf + ((size_t)n << MLX5_SEND_WQE_SHIFT);
}

static void sq_cmd(void)
{
	free(sq.buf);
	memset(&sq, 0, sizeof(sq));
	sq.wqe_cnt = (uint32_t)num();
	sq.qpn = (uint32_t)num();
	sq.qp_type = (int)num();
	sq.sig_all = (int)num();
	sq.buf = calloc(sq.wqe_cnt, MLX5_SEND_WQE_BB);
	if (!sq.buf)
		exit(2);
	sq.qend = sq.buf + (size_t)sq.wqe_cnt * MLX5_SEND_WQE_BB;
	printf("ok");
}

struct sge {
	uint32_t length;
	uint32_t lkey;
	uint64_t addr;
};

static void post(uint64_t wr_id, int opcode, unsigned flags, uint32_t imm, uint64_t raddr,
		 uint32_t rkey, uint64_t compare_add, uint64_t swap, size_t inline_len,
		 uint64_t inline_seed, int nsge, const struct sge *sg, int have_dgram,
		 const struct mlx5_wqe_datagram_seg *dgram)
{
	uint32_t idx = sq.cur_post & (sq.wqe_cnt - 1);
	uint8_t *ctrl = get_send_wqe(idx);
	uint8_t *seg = ctrl;
	int size, i;
	uint8_t fm_ce_se;
	uint32_t ieth = 0;
	uint32_t start = sq.cur_post;

	(void)wr_id;
	fm_ce_se = (sq.sig_all ? MLX5_WQE_CTRL_CQ_UPDATE : 0) |
		   (flags & IBV_SEND_FENCE ? MLX5_WQE_CTRL_FENCE : 0) |
		   (flags & IBV_SEND_SIGNALED ? MLX5_WQE_CTRL_CQ_UPDATE : 0) |
		   (flags & IBV_SEND_SOLICITED ? MLX5_WQE_CTRL_SOLICITED : 0);
	/* send_ieth: wr->imm_data is already big-endian; the invalidate rkey is converted */
	if (opcode == IBV_WR_SEND_WITH_IMM || opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
	    opcode == IBV_WR_SEND_WITH_INV)
		ieth = htobe32(imm);

	/* _mlx5_post_send clears signature and dci_stream_channel_id, which
	 * mlx5dv_set_ctrl_seg does not write: *(uint32_t *)(seg + 8) = 0 */
	memset(ctrl + 8, 0, 4);
	seg += sizeof(struct mlx5_wqe_ctrl_seg);
	size = sizeof(struct mlx5_wqe_ctrl_seg) / 16;

	switch (sq.qp_type) {
	case IBV_QPT_RC:
		switch (opcode) {
		case IBV_WR_RDMA_READ:
		case IBV_WR_RDMA_WRITE:
		case IBV_WR_RDMA_WRITE_WITH_IMM: {
			struct mlx5_wqe_raddr_seg *r = (void *)seg;

			r->raddr = htobe64(raddr);
			r->rkey = htobe32(rkey);
			r->reserved = 0;
			seg += sizeof(*r);
			size += sizeof(*r) / 16;
			break;
		}
		case IBV_WR_ATOMIC_CMP_AND_SWP:
		case IBV_WR_ATOMIC_FETCH_AND_ADD: {
			struct mlx5_wqe_raddr_seg *r = (void *)seg;
			struct mlx5_wqe_atomic_seg *a;

			r->raddr = htobe64(raddr);
			r->rkey = htobe32(rkey);
			r->reserved = 0;
			seg += sizeof(*r);
			a = (void *)seg;
			if (opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
				a->swap_add = htobe64(swap);
				a->compare = htobe64(compare_add);
			} else {
				a->swap_add = htobe64(compare_add);
				a->compare = 0; /* rdma-core leaves it */
			}
			seg += sizeof(*a);
			size += (sizeof(*r) + sizeof(*a)) / 16;
			break;
		}
		default:
			break;
		}
		break;
	case IBV_QPT_UC:
		if (opcode == IBV_WR_RDMA_WRITE || opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
			struct mlx5_wqe_raddr_seg *r = (void *)seg;

			r->raddr = htobe64(raddr);
			r->rkey = htobe32(rkey);
			r->reserved = 0;
			seg += sizeof(*r);
			size += sizeof(*r) / 16;
		}
		break;
	case IBV_QPT_UD:
		if (!have_dgram)
			exit(2);
		memcpy(seg, dgram, sizeof(*dgram));
		seg += sizeof(struct mlx5_wqe_datagram_seg);
		size += sizeof(struct mlx5_wqe_datagram_seg) / 16;
		if (seg == sq.qend)
			seg = get_send_wqe(0);
		break;
	default:
		exit(2);
	}

	if ((flags & IBV_SEND_INLINE) && inline_len) {
		/* set_data_inl_seg, one source buffer */
		struct mlx5_wqe_inl_data_seg *hdr = (void *)seg;
		uint8_t *wqe = seg + sizeof(*hdr);
		size_t pad = ((sizeof(*hdr) + inline_len + 15) & ~(size_t)15) - sizeof(*hdr) -
			     inline_len;
		size_t k;

		for (k = 0; k < inline_len; k++) {
			if (wqe == sq.qend)
				wqe = get_send_wqe(0);
			*wqe++ = inline_byte(inline_seed, k);
		}
		for (k = 0; k < pad; k++) { /* rdma-core leaves the padding */
			if (wqe == sq.qend)
				wqe = get_send_wqe(0);
			*wqe++ = 0;
		}
		hdr->byte_count = htobe32((uint32_t)inline_len | MLX5_INLINE_SEG);
		size += (int)((sizeof(*hdr) + inline_len + 15) / 16);
		sq.inl = 1;
	} else {
		struct mlx5_wqe_data_seg *dpseg = (void *)seg;

		sq.inl = 0;
		for (i = 0; i < nsge; i++) {
			if ((uint8_t *)dpseg == sq.qend)
				dpseg = get_send_wqe(0);
			if (sg[i].length) {
				if (opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
				    opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
					mlx5dv_set_data_seg(dpseg, 8, sg[i].lkey,
							    (uintptr_t)sg[i].addr);
				else
					mlx5dv_set_data_seg(dpseg, sg[i].length, sg[i].lkey,
							    (uintptr_t)sg[i].addr);
				++dpseg;
				size += sizeof(struct mlx5_wqe_data_seg) / 16;
			}
		}
	}

	mlx5dv_set_ctrl_seg((struct mlx5_wqe_ctrl_seg *)(void *)ctrl, sq.cur_post & 0xffff,
			    (uint8_t)mlx5_ib_opcode[opcode], 0, sq.qpn, fm_ce_se, (uint8_t)size, 0,
			    ieth);
	sq.cur_post += (size * 16 + MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB;
	sq.nreq++;
	sq.size = size;
	sq.ctrl = ctrl;
	sq.start = start;
}

static void post_cmd(void)
{
	static struct sge sg[128];
	struct mlx5_wqe_datagram_seg dgram;
	uint64_t wr_id = num();
	int opcode = (int)num();
	unsigned flags = (unsigned)num();
	uint32_t imm = (uint32_t)num();
	uint64_t raddr = num();
	uint32_t rkey = (uint32_t)num();
	uint64_t compare_add = num();
	uint64_t swap = num();
	size_t inline_len = (size_t)num();
	uint64_t inline_seed = num();
	int nsge = (int)num();
	int i, have_dgram = 0;

	if (nsge > 128)
		exit(2);
	for (i = 0; i < nsge; i++) {
		sg[i].length = (uint32_t)num();
		sg[i].lkey = (uint32_t)num();
		sg[i].addr = num();
	}
	if (sq.qp_type == IBV_QPT_UD) {
		uint32_t remote_qpn = (uint32_t)num();
		uint32_t qkey = (uint32_t)num();

		/* _set_datagram_seg: the AH's vector, dqp_dct = qpn | EXTENDED_UD_AV, the Q_Key;
		 * with mlx5dv_set_dgram_seg the Q_Key is the high half of the 64-bit key. */
		read_dgram(&dgram, (uint64_t)qkey << 32, remote_qpn, 1);
		have_dgram = 1;
	}
	post(wr_id, opcode, flags, imm, raddr, rkey, compare_add, swap, inline_len, inline_seed,
	     nsge, sg, have_dgram, &dgram);
	printf("%u %d %u", sq.start, sq.size, sq.cur_post);
}

/* `repeat N`: N signaled one-entry sends (one basic block each). */
static void repeat_cmd(void)
{
	uint64_t n = num(), i;
	struct sge one;

	for (i = 0; i < n; i++) {
		one.length = 1;
		one.lkey = 1;
		one.addr = i;
		post(i, IBV_WR_SEND, IBV_SEND_SIGNALED, 0, 0, 0, 0, 0, 0, 0, 1, &one, 0, NULL);
	}
	printf("%u", sq.cur_post);
}

/* post_send_db: the doorbell record, then BlueFlame copy or the 8-byte doorbell. */
static void ring_cmd(void)
{
	unsigned buf_size = (unsigned)num(); /* 0: bfreg 0 (uuarn 0), doorbell only */
	int prefer_bf = (int)num();
	__be32 dbrec = htobe32(sq.cur_post & 0xffff);

	if (!sq.nreq) {
		printf("none");
		return;
	}
	hex(&dbrec, 4);
	if (buf_size && sq.nreq == 1 && (sq.inl || prefer_bf) && sq.size > 1 &&
	    sq.size <= (int)(buf_size / 16)) {
		/* mlx5_bf_copy: 64-byte chunks, the source wrapping at the ring end */
		int bytecnt = (sq.size * 16 + 63) & ~63;
		const uint8_t *src = sq.ctrl;

		printf(" bf ");
		do {
			hex(src, 64);
			bytecnt -= 64;
			src += 64;
			if (src == sq.qend)
				src = sq.buf;
		} while (bytecnt > 0);
	} else {
		printf(" db ");
		hex(sq.ctrl, 8); /* mmio_write64_be(bf->reg + bf->offset, *(__be64 *)ctrl) */
	}
	sq.nreq = 0;
}

static void dump_cmd(void)
{
	hex(sq.buf, (size_t)sq.wqe_cnt * MLX5_SEND_WQE_BB);
}

int main(void)
{
	static char line[1 << 16];

	while (fgets(line, sizeof(line), stdin)) {
		char *cmd = strtok_r(line, " \t\r\n", &tok_state);

		if (!cmd)
			continue;
		if (!strcmp(cmd, "layout")) {
			char *what = strtok_r(NULL, " \t\r\n", &tok_state);

			layout(what ? what : "");
		} else if (!strcmp(cmd, "consts"))
			consts();
		else if (!strcmp(cmd, "ctrl"))
			ctrl_cmd();
		else if (!strcmp(cmd, "data"))
			data_cmd();
		else if (!strcmp(cmd, "raddr"))
			raddr_cmd();
		else if (!strcmp(cmd, "atomic"))
			atomic_cmd();
		else if (!strcmp(cmd, "inl"))
			inl_cmd();
		else if (!strcmp(cmd, "dgram"))
			dgram_cmd();
		else if (!strcmp(cmd, "cqe"))
			cqe_cmd();
		else if (!strcmp(cmd, "errcqe"))
			errcqe_cmd();
		else if (!strcmp(cmd, "own"))
			own_cmd();
		else if (!strcmp(cmd, "setown"))
			setown_cmd();
		else if (!strcmp(cmd, "cqdb"))
			cqdb_cmd();
		else if (!strcmp(cmd, "sq"))
			sq_cmd();
		else if (!strcmp(cmd, "post"))
			post_cmd();
		else if (!strcmp(cmd, "repeat"))
			repeat_cmd();
		else if (!strcmp(cmd, "ring"))
			ring_cmd();
		else if (!strcmp(cmd, "dump"))
			dump_cmd();
		else {
			fprintf(stderr, "mlx5_golden: unknown command '%s'\n", cmd);
			return 2;
		}
		printf("\n");
	}
	free(sq.buf);
	return 0;
}
