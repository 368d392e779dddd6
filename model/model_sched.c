/* model_sched.c: the model's schedule pass: every op of every iteration list-scheduled on its engine or DMA queue, with its dependencies. */
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nkir.pb-c.h"

#include "model/model.h"
#include "model/model_impl.h"
#include "sim/sim.h"

/* ------------------------------------------------------------ schedule */

struct model_dep {
	double		 t;
	uint32_t	 id;
};

static void
model_dep_max(struct model_dep *d, double t, uint32_t id)
{
	if (t > d->t) {
		d->t = t;
		d->id = id;
	}
}

static struct model_tbuf *
model_buf_cur(struct model_tensor *x)
{
	return (&x->bufs[x->version % (uint64_t)x->nbuf]);
}

/* Whether ranges a and b share an element (as far as they tell). */
static int
model_rng_meet(const struct model_rng *a, const struct model_rng *b)
{
	return (a->lo <= b->hi && b->lo <= a->hi && a->plo <= b->phi &&
	    b->plo <= a->phi);
}

/* RAW: when r of x's current buffer was last written. */
static void
model_dep_read(struct model_tensor *x, const struct model_rng *r,
    struct model_dep *d)
{
	struct model_tbuf	*b = model_buf_cur(x);
	int			 i;

	for (i = 0; i < b->nw; i++)
		if (model_rng_meet(&b->w[i].r, r))
			model_dep_max(d, b->w[i].ready, b->w[i].id);
}

/* WAR and WAW for a write of r (after a version change if new). */
static void
model_dep_write(struct model_tensor *x, const struct model_rng *r, int newv,
    struct model_dep *d)
{
	struct model_tbuf	*b;
	int			 i;

	if (newv && x->space != NKIR__V1__SPACE__SPACE_HBM &&
	    x->space != NKIR__V1__SPACE__SPACE_SHARED_HBM) {
		x->version++;
		b = model_buf_cur(x);
		model_dep_max(d, b->read_done, b->read_id);
		for (i = 0; i < b->nw; i++)
			model_dep_max(d, b->w[i].ready, b->w[i].id);
		b->nw = b->nr = 0;
		b->read_done = 0.0;
		return;
	}
	b = model_buf_cur(x);
	for (i = 0; i < b->nr; i++)
		if (model_rng_meet(&b->r[i].r, r))
			model_dep_max(d, b->r[i].ready, b->r[i].id);
	for (i = 0; i < b->nw; i++)
		if (model_rng_meet(&b->w[i].r, r))
			model_dep_max(d, b->w[i].ready, b->w[i].id);
}

/*
 * Add record (r, t, id) to the ring v of *n: records it covers and that
 * end no later go; when full, the two oldest merge into their bounding
 * box with the later time (conservative).
 */
static void
model_rec_add(struct model_wrec *v, int *n, const struct model_rng *r,
    double t, uint32_t id)
{
	struct model_rng	*o;
	int			 i, j;

	for (i = j = 0; i < *n; i++) {
		o = &v[i].r;
		if (!(r->lo <= o->lo && o->hi <= r->hi && r->plo <= o->plo &&
		    o->phi <= r->phi && v[i].ready <= t))
			v[j++] = v[i];
	}
	*n = j;
	if (*n == MODEL_NWREC) {
		o = &v[0].r;
		o->lo = o->lo < v[1].r.lo ? o->lo : v[1].r.lo;
		o->hi = o->hi > v[1].r.hi ? o->hi : v[1].r.hi;
		o->plo = o->plo < v[1].r.plo ? o->plo : v[1].r.plo;
		o->phi = o->phi > v[1].r.phi ? o->phi : v[1].r.phi;
		if (v[1].ready > v[0].ready) {
			v[0].ready = v[1].ready;
			v[0].id = v[1].id;
		}
		memmove(&v[1], &v[2], (size_t)(MODEL_NWREC - 2) * sizeof v[0]);
		(*n)--;
	}
	v[*n].r = *r;
	v[*n].ready = t;
	v[(*n)++].id = id;
}

/* A write of r ready at ready: it waited on the writes it covers. */
static void
model_note_write(struct model_tensor *x, const struct model_rng *r,
    double ready, uint32_t id)
{
	struct model_tbuf	*b = model_buf_cur(x);

	model_rec_add(b->w, &b->nw, r, ready, id);
}

/*
 * A read of r done at done: later writes that meet r wait for it (WAR);
 * a new version of the buffer waits for every read (read_done).
 */
static void
model_note_read(struct model_tensor *x, const struct model_rng *r,
    double done, uint32_t id)
{
	struct model_tbuf	*b = model_buf_cur(x);

	if (done > b->read_done) {
		b->read_done = done;
		b->read_id = id;
	}
	model_rec_add(b->r, &b->nr, r, done, id);
}

/* A new instruction id with its critical-path link; UINT32_MAX: none. */
static uint32_t
model_inst(struct model_ctx *m, int track, double start, double end,
    uint32_t pred, int busy)
{
	struct model_result	*r = m->r;
	uint32_t		 id = (uint32_t)r->instructions;

	if (busy)
		r->busy_ns[track] += end - start;
	if (m->crit != NULL && r->instructions < MODEL_CRIT_MAX) {
		m->crit[id].pred = pred;
		m->crit[id].track = (uint8_t)track;
		m->crit[id].dur = (float)(end - start);
	}
	if (end > m->last_end) {
		m->last_end = end;
		m->last_id = id;
	}
	r->instructions++;
	return (r->instructions <= MODEL_CRIT_MAX ? id : UINT32_MAX);
}

static void
model_event(struct model_ctx *m, const struct model_op *op, const char *name,
    int track, double start, double dur, uint64_t bytes)
{
	struct model_event	ev;

	if (m->opts == NULL || m->opts->event_cb == NULL)
		return;
	ev.op = name;
	ev.track = track;
	ev.queue = track >= MODEL_TRACK_DMA0 ? op->dma_q : 0;
	ev.file = op->file;
	ev.line = op->line;
	ev.program = m->program;
	ev.start_ns = start;
	ev.dur_ns = dur;
	ev.bytes = bytes;
	m->opts->event_cb(m->opts->event_arg, &ev);
}

/*
 * Issue an instruction of dur ns on engine track once dep is met: in the
 * first gap of the engine's busy intervals that holds it (the compiler
 * schedules an engine's instructions; one whose inputs are ready early,
 * e.g. of a later iteration of an affine_range loop, which declares its
 * iterations independent, runs in the engine's idle time before later
 * ones), else after its last. Its end; *id its instruction. (Until model
 * 5: in program order, after the engine's previous instruction.)
 */
static double
model_issue(struct model_ctx *m, const struct model_op *op, const char *name,
    int track, struct model_dep dep, double dur, uint32_t *id)
{
	double	end;

	if (track >= 0 && track < 4) {
		struct model_busy *b = &m->busy[track];
		int	i, k;

		model_dep_max(&dep, b->floor, b->floor_id);
		for (i = 0; i < b->n; i++) {
			if (dep.t + dur <= b->s[i])
				break;
			model_dep_max(&dep, b->e[i], b->id[i]);
		}
		end = dep.t + dur;
		*id = model_inst(m, track, dep.t, end, dep.id, 1);
		if (b->n == MODEL_ENG_IVALS) {
			if (b->e[0] > b->floor) {
				b->floor = b->e[0];
				b->floor_id = b->id[0];
			}
			memmove(&b->s[0], &b->s[1], (size_t)(b->n - 1) *
			    sizeof b->s[0]);
			memmove(&b->e[0], &b->e[1], (size_t)(b->n - 1) *
			    sizeof b->e[0]);
			memmove(&b->id[0], &b->id[1], (size_t)(b->n - 1) *
			    sizeof b->id[0]);
			b->n--;
			if (i > 0)
				i--;
		}
		for (k = b->n; k > i; k--) {
			b->s[k] = b->s[k - 1];
			b->e[k] = b->e[k - 1];
			b->id[k] = b->id[k - 1];
		}
		b->s[i] = dep.t;
		b->e[i] = end;
		b->id[i] = *id;
		b->n++;
		if (end > m->track_free[track])
			m->track_free[track] = end;
		m->track_last[track] = *id;
		model_event(m, op, name, track, dep.t, dur, 0);
		return (end);
	}
	model_dep_max(&dep, m->track_free[track], m->track_last[track]);
	end = dep.t + dur;
	*id = model_inst(m, track, dep.t, end, dep.id, 1);
	m->track_free[track] = end;
	m->track_last[track] = *id;
	model_event(m, op, name, track, dep.t, dur, 0);
	return (end);
}

/*
 * Engine e moves occ ns of bytes for queue class c from t on, in the gaps
 * between the other queue's transfers (dma intro: queues are "scheduled
 * in a round robin fashion", so a transfer's bytes interleave with the
 * other queue's; one queue's own transfers never overlap: it runs them in
 * order). Returns when the last byte moved; records [first byte, last
 * byte] for the other queue.
 */
static double
model_dma_place(struct model_dmaeng *e, int c, double t, double occ)
{
	unsigned	o = !c, i, k;
	double		first = -1.0, left = occ;

	if (t < e->last_e[o])
		for (i = e->pos[o] > MODEL_DMA_IVALS ? e->pos[o] -
		    MODEL_DMA_IVALS : 0; i < e->pos[o] && left > 0; i++) {
			k = i % MODEL_DMA_IVALS;
			if (e->e[o][k] <= t)
				continue;
			if (e->s[o][k] > t) {
				if (first < 0)
					first = t;
				if (t + left <= e->s[o][k]) {
					t += left;
					left = 0.0;
					break;
				}
				left -= e->s[o][k] - t;
			}
			t = e->e[o][k];
		}
	if (first < 0)
		first = t;
	t += left;
	k = e->pos[c]++ % MODEL_DMA_IVALS;
	e->s[c][k] = first;
	e->e[c][k] = e->last_e[c] = t;
	return (t);
}

/* How much of [a, b) the kept transfers of queue class c overlap. */
static double
model_dma_overlap(const struct model_dmaeng *e, int c, double a, double b)
{
	double		ov = 0.0, x;
	unsigned	i, k, n;

	if (e->last_e[c] <= a)
		return (0.0);
	n = e->pos[c] > MODEL_DMA_IVALS ? MODEL_DMA_IVALS : e->pos[c];
	for (i = 0; i < n; i++) {
		k = (e->pos[c] - 1 - i) % MODEL_DMA_IVALS;
		if (e->e[c][k] <= a)
			break;
		x = (b < e->e[c][k] ? b : e->e[c][k]) -
		    (a > e->s[c][k] ? a : e->s[c][k]);
		if (x > 0)
			ov += x;
	}
	return (ov);
}

/*
 * The on-chip RAM port op takes that another engine shares (trn1 only):
 * arch (NeuronCore-v2), "Vector Engine and GpSimd Engine cannot access
 * SBUF in parallel", "Vector Engine and Scalar Engine cannot access PSUM
 * in parallel"; trn2 arch: both "lifted" on NeuronCore-v3. Returns
 * MODEL_PORT_SBUF, MODEL_PORT_PSUM or -1.
 */
static int
model_port(const struct model_ctx *m, const struct model_op *op, int track)
{
	int	i, sb = 0, ps = 0;

	if (!m->t->shared_ports)
		return (-1);
	sb = op->dst->space == NKIR__V1__SPACE__SPACE_SBUF;
	ps = op->dst->space == NKIR__V1__SPACE__SPACE_PSUM;
	for (i = 0; i < op->nsrc; i++) {
		sb |= op->src[i]->space == NKIR__V1__SPACE__SPACE_SBUF;
		ps |= op->src[i]->space == NKIR__V1__SPACE__SPACE_PSUM;
	}
	if (track == ENG_G || (track == ENG_V && sb && !ps))
		return (MODEL_PORT_SBUF);
	if ((track == ENG_V || track == ENG_S) && ps)
		return (MODEL_PORT_PSUM);
	return (-1);
}

/*
 * Place DMA op's transfers (it may start at dep) on the DMA engines and
 * their queues; returns when its last transfer lands, *id its
 * instruction.
 */
static double
model_exec_dma(struct model_ctx *m, const struct model_op *op,
    struct model_dep dep, uint32_t *id)
{
	struct model_result	*r = m->r;
	struct model_op	 masked;
	const struct model_op *dop = op;
	uint32_t q0 = m->dma_rr, j;
	double	 bstart = 0.0;
	int	 bq = MODEL_TRACK_DMA0, c = op->dma_q;
	struct model_dep best = { -1.0, UINT32_MAX };

	/*
	 * Hardware DGE (trn2, trn3): the instruction's descriptors
	 * are made, in program order, on the DGE instance of its
	 * queue's trigger engine (loads one, stores the other; dma
	 * intro: a queue "is typically tied to the trigger engine")
	 * before its transfers start (model_targets). Descriptors
	 * need addresses, not data: a DGE works ahead of the
	 * instruction's dependencies (dge: "descriptor generation
	 * overlaps with earlier compute instructions").
	 */
	/* Only the partitions its masks leave active move. */
	if (op->dma_side != NULL && op->kind !=
	    NKIR__V1__OP_KIND__OP_ALL_REDUCE) {
		uint64_t ap = model_acc_active_parts(m, op->dma_side);

		if (ap < op->dma_side->parts) {
			masked = *op;
			model_dma_split(&masked, ap);
			dop = &masked;
		}
	}
	if (m->t->dge_ns > 0) {
		double	*g = &m->dge_free[c % MODEL_DGE_UNITS];

		*g += m->t->dge_ns;
		if (*g > dep.t)
			dep.t = *g;
	}

	for (j = 0; j < dop->pieces; j++) {
		int	 e = (int)((q0 + j) % MODEL_DMA_QUEUES);
		int	 q = MODEL_TRACK_DMA0 + e;
		int	 lastp = j + 1 == dop->pieces;
		double	 t = lastp ? dop->last_ns : dop->piece_ns;
		double	 occ = lastp ? dop->last_occ : dop->piece_occ;
		uint64_t by = lastp ? dop->last_bytes : dop->piece_bytes;
		struct model_dmaeng *de = &m->dmaeng[e];
		struct model_dep s = dep;
		double	 mv, fin, qend;

		/* In order on its queue; bytes in the engine's gaps. */
		model_dep_max(&s, m->dmaq_free[c][e],
		    m->dmaq_last[c][e]);
		mv = model_dma_place(de, c, s.t, occ);
		/*
		 * A pipelining queue's transfer lands the target's fixed
		 * cost after its bytes moved (model_targets); a queue held
		 * for the knee (nkimodel -U) ends it no sooner than that.
		 */
		fin = m->t->dma_lat > 0 ? mv + m->t->dma_lat :
		    s.t + t > mv ? s.t + t : mv;
		/* A pipelining queue is free once the bytes moved. */
		qend = m->t->dma_lat > 0 ? mv : fin;
		m->dmaq_free[c][e] = qend;
		if (qend > m->track_free[q])
			m->track_free[q] = qend;
		/*
		 * busy_ns: time the engine moves bytes or a queue waits
		 * out its floor; the other queue's moves count once.
		 */
		r->busy_ns[q] += qend - s.t - model_dma_overlap(de, !c,
		    s.t, qend);
		r->dma_bytes += by;
		model_event(m, op, op->name, q, s.t, qend - s.t, by);
		if (fin > best.t) {
			best.t = fin;
			best.id = s.id;
			bstart = s.t;
			bq = q;
		}
	}
	*id = model_inst(m, bq, bstart, best.t, best.id, 0);
	for (j = 0; j < dop->pieces && j < MODEL_DMA_QUEUES; j++)
		m->dmaq_last[c][(q0 + j) % MODEL_DMA_QUEUES] = *id;
	m->dma_rr = (q0 + dop->pieces) % MODEL_DMA_QUEUES;
	return (best.t);
}

/*
 * Reload the spilled tile op reads through its source i (MODEL_NSRC: its
 * destination): a DMA into the region, once the op where it did not fit
 * ended and its earlier readers are done.
 */
static void
model_exec_reload(struct model_ctx *m, struct model_op *op, int i)
{
	const struct model_acc	*x = i < MODEL_NSRC ? op->src[i] : op->dst;
	struct model_tensor	*t = &m->tensors[x->tensor];
	const struct model_op	*aft = &m->ops[op->reload_after[i]];
	struct model_dep	 d = { 0.0, UINT32_MAX };
	struct model_rng	 rg;
	const struct model_op	*rl = op->reload[i];
	uint32_t		 id;
	double			 end;

	model_acc_range(m, x, &rg);
	model_dep_write(t, &rg, 0, &d);
	model_dep_max(&d, aft->done, aft->done_id);
	end = model_exec_dma(m, rl, d, &id);
	model_note_write(t, &rg, end, id);
	m->r->spill_bytes += rl->piece_bytes * (rl->pieces - 1) +
	    rl->last_bytes;
}

/*
 * When an instruction of dur ns on compute engine track, its inputs ready
 * at dep, would end: model_issue's placement, without placing it.
 */
static double
model_issue_end(const struct model_ctx *m, const struct model_op *op,
    int track, struct model_dep dep, double dur)
{
	const struct model_busy	*b = &m->busy[track];
	double			 t = dep.t > b->floor ? dep.t : b->floor;
	int			 i, port = model_port(m, op, track);

	if (port >= 0 && m->port_free[port] > t)
		t = m->port_free[port];
	for (i = 0; i < b->n; i++) {
		if (t + dur <= b->s[i])
			break;
		if (b->e[i] > t)
			t = b->e[i];
	}
	return (t + dur);
}

static int
model_exec_op(struct model_ctx *m, struct model_op *op)
{
	struct model_result	*r = m->r;
	struct model_dep	 dep = { 0.0, UINT32_MAX }, pdep;
	struct model_rng	 sr[MODEL_NSRC], dr;
	double			 end, ready;
	uint32_t		 id = UINT32_MAX, p;
	int			 d, i, port;

	for (d = 0; d < op->depth; d++)
		if ((op->inv_mask >> d & 1) && m->iter[d] != 0)
			return (0);
	if (r->instructions >= m->max_inst)
		return (model_fail(m, MODEL_ELIMIT, "the kernel has more than "
		    "%llu instructions to model", (unsigned long long)
		    m->max_inst));
	if ((r->instructions & 4095) == 0 && m->opts != NULL &&
	    m->opts->cancel != NULL && *m->opts->cancel)
		return (model_fail(m, MODEL_ECANCELED, "canceled"));
	/* Reloads of spilled tiles it reads (model_tensors_spill). */
	for (i = 0; i < MODEL_NSRC + 1; i++)
		if (op->reload[i] != NULL)
			model_exec_reload(m, op, i);
	model_acc_range(m, op->dst, &dr);
	if (op->track == ENG_FUSED) {
		for (i = 0; i < op->nsrc; i++) {
			model_acc_range(m, op->src[i], &sr[i]);
			model_dep_read(&m->tensors[op->src[i]->tensor], &sr[i],
			    &dep);
		}
		model_dep_write(&m->tensors[op->dst->tensor], &dr,
		    op->new_version, &dep);
		model_note_write(&m->tensors[op->dst->tensor], &dr, dep.t,
		    dep.id);
		return (0);
	}
	if (op->track == ENG_NONE) {
		/* No instruction: a buffer declaration at most. */
		if (op->new_version)
			model_dep_write(&m->tensors[op->dst->tensor], &dr, 1,
			    &dep);
		return (0);
	}
	for (i = 0; i < op->nsrc; i++) {
		model_acc_range(m, op->src[i], &sr[i]);
		model_dep_read(&m->tensors[op->src[i]->tensor], &sr[i], &dep);
	}
	/* Implicit instructions (broadcasts, a transpose) feed the op. */
	pdep = dep;
	for (i = 0; i < op->npre; i++) {
		const struct model_pre	*pr = &op->pre[i];

		if (pr->chain)
			pdep = dep;
		end = model_issue(m, op, pr->name, pr->track, pdep, pr->dur_ns,
		    &p);
		model_dep_max(&dep, end + pr->lat_ns, p);
		if (op->kind == NKIR__V1__OP_KIND__OP_MATMUL)
			pdep = dep;	/* the copy waits for the transpose */
	}
	if (op->dst_read)
		model_dep_read(&m->tensors[op->dst->tensor], &dr, &dep);
	model_dep_write(&m->tensors[op->dst->tensor], &dr, op->new_version,
	    &dep);
	if (op->track == ENG_DMA) {
		end = ready = model_exec_dma(m, op, dep, &id);
	} else {
		int	 track = op->track;
		double	 dur = op->dur_ns, lat = op->lat_ns;

		if (op->flex && model_issue_end(m, op, op->alt_track, dep,
		    op->alt_dur_ns) < model_issue_end(m, op, track, dep, dur)) {
			track = op->alt_track;
			dur = op->alt_dur_ns;
			lat = op->alt_lat_ns;
		}
		port = model_port(m, op, track);
		if (port >= 0)
			model_dep_max(&dep, m->port_free[port],
			    m->port_last[port]);
		end = model_issue(m, op, op->name, track, dep, dur, &id);
		if (port >= 0 && end > m->port_free[port]) {
			m->port_free[port] = end;
			m->port_last[port] = id;
		}
		ready = end + lat;
		r->flops += op->flops;
	}
	for (i = 0; i < op->nsrc; i++)
		model_note_read(&m->tensors[op->src[i]->tensor], &sr[i], end,
		    id);
	model_note_write(&m->tensors[op->dst->tensor], &dr, ready, id);
	op->done = end;
	op->done_id = id;
	/* A spilled tile is stored once written. */
	if (op->spill != NULL) {
		struct model_dep sd = { 0.0, UINT32_MAX };

		model_dep_read(&m->tensors[op->dst->tensor], &dr, &sd);
		end = model_exec_dma(m, op->spill, sd, &id);
		model_note_read(&m->tensors[op->dst->tensor], &dr, end, id);
		r->spill_bytes += op->spill->piece_bytes *
		    (op->spill->pieces - 1) + op->spill->last_bytes;
	}
	return (0);
}

int
model_exec_body(struct model_ctx *m, uint32_t first, uint32_t n, int depth)
{
	uint32_t	i;
	uint64_t	it;

	for (i = 0; i < n; i++) {
		const struct model_node *nd = &m->nodes[first + i];

		if (!nd->loop) {
			if (model_exec_op(m, &m->ops[nd->op]) != 0)
				return (m->error);
			continue;
		}
		if (nd->loop == 2) {		/* an if: the side it takes */
			if (model_exec_body(m, model_holds(m, nd->br) ?
			    nd->first : nd->efirst, model_holds(m, nd->br) ?
			    nd->n : nd->en, depth) != 0)
				return (m->error);
			continue;
		}
		for (it = 0; it < nd->trip; it++) {
			m->vars[nd->var] = nd->start + (int64_t)it * nd->step;
			m->iter[depth] = it;
			if (model_exec_body(m, nd->first, nd->n, depth + 1) != 0)
				return (m->error);
		}
		m->iter[depth] = 0;
	}
	return (0);
}
