/*
 * The operation stream: the model's next operation that needs an io_u,
 * the markers between operations (phases, transactions, PostMark's own
 * skips) handled where PostMark reads its timers, an operation's class
 * and name, and the model's file sizes. engine.c, uring.c and
 * locations.c call into it; it calls none of the engine's other files.
 */
#include "pmengine.h"

void pm_stamp_phase(struct pm_data *pd, enum pm_phase ph)
{
	pd->t_ns[ph] = now_ns();
	pd->t_sec[ph] = time(NULL);
}

/* Time-based runs end the transaction phase at a transaction boundary. */
void pm_check_tx_limit(struct pm_data *pd)
{
	if (pd->tx_limit_ns && pd->t_ns[PM_PHASE_TRANSACTIONS] &&
	    now_ns() - pd->t_ns[PM_PHASE_TRANSACTIONS] >= pd->tx_limit_ns)
		pm_sim_stop_transactions(pd->sim);
}

/* A phase marker passed by the lookahead: stamped once nothing is in flight. */
static void pm_uring_phase(struct pm_data *pd, enum pm_phase ph)
{
	pd->pending_phases |= 1u << ph;
	if (!pd->inflight)
		pm_stamp_pending_phases(pd);
}

/*
 * The transaction the next io_us belong to. Transactions complete out of
 * order (a later one may finish while an earlier one waits for a long
 * write), so records come from a pool: every open transaction but this new
 * one holds an io_u in flight (its TX_END is queued after its operations),
 * so at most iodepth + 1 are open.
 */
static void pm_uring_tx_begin(struct pm_data *pd, int txn)
{
	struct pm_tx *tx = NULL;
	int i;

	for (i = 0; i < pd->ntxs && !tx; i++)
		if (pd->txs[i].tx < 0)
			tx = &pd->txs[i];
	pd->cur_tx = tx;
	if (!tx) {
		pack_log_err("postmark: internal error: no record for transaction %d\n", txn);
		return;
	}
	memset(tx, 0, sizeof(*tx));
	tx->tx = txn;
	tx->fd[0] = tx->fd[1] = tx->dirfd[0] = tx->dirfd[1] = -1;
}

/*
 * Moves to the next operation that needs an io_u, handling the markers in
 * between at this moment (just after the previous operation ended, which is
 * where PostMark reads its timers). Operations PostMark drops without a
 * system call are counted and skipped.
 */

void pm_advance(struct pm_data *pd, int stamp)
{
	struct pm_op op;

	pd->have_next = 0;
	while (!pd->have_next && pm_sim_next(pd->sim, &op)) {
		if (pd->uring && op.kind == PM_OP_PHASE) {
			/* stamped when the phase's barrier clears */
			if (stamp)
				pm_uring_phase(pd, op.phase);
			continue;
		}
		if (pd->uring && op.kind == PM_OP_TX_BEGIN) {
			/* its start: when its first io_u is issued */
			pm_uring_tx_begin(pd, op.tx);
			continue;
		}
		switch (op.kind) {
		case PM_OP_PHASE:
			if (stamp)
				pm_stamp_phase(pd, op.phase);
			if (op.phase == PM_PHASE_TRANSACTIONS)
				pm_check_tx_limit(pd);
			if (op.phase == PM_PHASE_DONE)
				pd->finished = 1;
			break;
		case PM_OP_TX_BEGIN:
			pd->tx_start_ns = now_ns();
			/* fio's clock (it may be the TSC), as fio compares it with its own */
			fio_gettime(&pd->tx_start_ts, NULL);
			break;
		case PM_OP_OUT_OF_FILES:
			pd->out_of_files = 1;
			pack_log_err(
				"postmark: out of files after %d transactions (every file was deleted); "
				"PostMark would stop here without deleting or reporting: the engine goes on to the deletion phase\n",
				pm_sim_counters(pd->sim)->transactions_done);
			break;
		case PM_OP_CREATE:
			if (op.flags & PM_OPF_TABLE_FULL) {
				pd->table_full++;
				break;
			}
			pd->next = op;
			pd->have_next = 1;
			break;
		case PM_OP_APPEND:
			if (op.flags & PM_OPF_FILE_FULL) {
				pd->file_full++;
				break;
			}
			pd->next = op;
			pd->have_next = 1;
			break;
		default:
			pd->next = op;
			pd->have_next = 1;
		}
	}
}

enum op_class pm_class_of(const struct pm_op *op)
{
	switch (op->kind) {
	case PM_OP_CREATE:
		return OC_CREATE;
	case PM_OP_READ:
		return OC_READ;
	case PM_OP_APPEND:
		return OC_APPEND;
	case PM_OP_DELETE:
		return OC_DELETE;
	default:
		return OC_TRANSACTION;
	}
}

const char *pm_op_name(const struct pm_op *op)
{
	return class_names[pm_class_of(op)];
}

uint32_t pm_dist_size(void *ctx, int name)
{
	struct pm_data *pd = ctx;
	uint64_t v = size_dist_sample(&pd->sizes, hash_item(pd->cfg.seed, 1, (uint64_t)name));

	return v > PM_MAX_SIZE ? PM_MAX_SIZE : (uint32_t)v;
}

/* The phase markers passed while operations were in flight, stamped now. */
void pm_stamp_pending_phases(struct pm_data *pd)
{
	int ph;

	for (ph = PM_PHASE_CREATE; ph <= PM_PHASE_DONE; ph++) {
		if (!(pd->pending_phases & (1u << ph)))
			continue;
		pm_stamp_phase(pd, ph);
		if (ph == PM_PHASE_DONE)
			pd->finished = 1;
	}
	pd->pending_phases = 0;
}
