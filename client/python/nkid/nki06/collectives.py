"""nkid.nki06.collectives: NKI 0.6's ``nki.collectives`` on one host.

nkid runs a kernel as one rank (rank 0) of a world of one: a replica group
must be ``[[0]]`` (or ``ReplicaGroup([[0]])``), and every collective is then
what it is for a group of one: all-reduce, all-gather, reduce-scatter and
all-to-all copy each source into its destination; ``collective_permute``
takes the pair (0, 0).  A group naming another rank is an error that says
so.  (The legacy language's ``nl.all_reduce`` over the programs of a
launch grid is the multi-program collective nkid models.)
"""

from ..errors import NKIError
from ..tracer.builder import loc_suffix as _loc
from . import _lang
from . import isa as _isa

__all__ = ["ReplicaGroup", "all_reduce", "all_gather", "all_gather_v", "reduce_scatter",
           "all_to_all", "all_to_all_v", "collective_permute", "collective_permute_implicit",
           "collective_permute_implicit_reduce",
           "collective_permute_implicit_current_processing_rank_id", "rank_id"]


class ReplicaGroup:
    """Groups of ranks taking part in a collective (lists without overlap)."""

    def __init__(self, groups=((0,),)):
        self.groups = [list(g) for g in groups]

    def __repr__(self):
        return "ReplicaGroup(%r)" % (self.groups,)


def _group(rg, what):
    groups = rg.groups if isinstance(rg, ReplicaGroup) else rg
    try:
        flat = [int(r) for g in groups for r in g]
    except TypeError:
        raise NKIError("replica_group of '%s' must be a ReplicaGroup or a list of rank lists,"
                       " got %r%s" % (what, rg, _loc())) from None
    if flat != [0]:
        raise NKIError("'%s' on replica group %r: nkid runs a kernel as one rank (rank 0) on"
                       " one host, so the group must be [[0]]%s" % (what, groups, _loc()))


def _pairs(srcs, dsts, what):
    srcs, dsts = list(srcs), list(dsts)
    if len(srcs) != len(dsts) or not srcs:
        raise NKIError("'%s' needs as many destinations as sources (got %d and %d)%s"
                       % (what, len(srcs), len(dsts), _loc()))
    spaces = {s._space in _isa._CHIP for s in srcs + dsts}
    if len(spaces) > 1:
        raise NKIError("'%s': all tensors must be on HBM or all on SBUF (mixing memory spaces"
                       " is not supported)%s" % (what, _loc()))
    return zip(srcs, dsts)


def _copy_all(srcs, dsts, what):
    for s, d in _pairs(srcs, dsts, what):
        if s.size != d.size:
            raise NKIError("'%s' on one rank: destination %s and source %s must have as many"
                           " elements%s" % (what, list(d.shape), list(s.shape), _loc()))
        if s._space in _isa._CHIP and d._space in _isa._CHIP:
            _isa.tensor_copy(dst=d, src=s)
        else:
            _isa.dma_copy(dst=d, src=s)


def all_reduce(srcs, dsts, replica_group, op, priority=None, name=None):
    """Reduce ``srcs`` over the group's ranks into ``dsts`` (one rank: a copy)."""
    _lang.require("nki.collectives.all_reduce")
    _isa._I._alu(op, "op")
    _group(replica_group, "all_reduce")
    _copy_all(srcs, dsts, "all_reduce")


def all_gather(srcs, dsts, replica_group, collective_dim, priority=None, name=None):
    """Concatenate every rank's ``srcs`` along ``collective_dim`` (one rank: a copy)."""
    _lang.require("nki.collectives.all_gather")
    _group(replica_group, "all_gather")
    _copy_all(srcs, dsts, "all_gather")


def all_gather_v(srcs, dsts, replica_group, metadata_tensor, recv_counts_known=False,
                 has_rdispls=False, priority=None, name=None):
    """Variable-length all-gather (one rank: a copy)."""
    _lang.require("nki.collectives.all_gather_v")
    _group(replica_group, "all_gather_v")
    _copy_all(srcs, dsts, "all_gather_v")


def reduce_scatter(srcs, dsts, replica_group, collective_dim, op, priority=None, name=None):
    """Reduce over ranks and scatter the parts (one rank: a copy)."""
    _lang.require("nki.collectives.reduce_scatter")
    _isa._I._alu(op, "op")
    _group(replica_group, "reduce_scatter")
    _copy_all(srcs, dsts, "reduce_scatter")


def all_to_all(srcs, dsts, replica_group, collective_dim, priority=None, name=None):
    """Exchange parts between every pair of ranks (one rank: a copy)."""
    _lang.require("nki.collectives.all_to_all")
    _group(replica_group, "all_to_all")
    _copy_all(srcs, dsts, "all_to_all")


def all_to_all_v(srcs, dsts, replica_group, metadata_tensor, recv_counts_known=False,
                 has_rdispls=False, priority=None, name=None):
    """Variable-length all-to-all (one rank: a copy)."""
    _lang.require("nki.collectives.all_to_all_v")
    _group(replica_group, "all_to_all_v")
    _copy_all(srcs, dsts, "all_to_all_v")


def collective_permute(srcs, dsts, source_target_pairs, priority=None, name=None):
    """Send each source rank's data to its target (one rank: the pair (0, 0))."""
    _lang.require("nki.collectives.collective_permute")
    pairs = [tuple(int(x) for x in p) for p in source_target_pairs]
    if pairs != [(0, 0)]:
        raise NKIError("'collective_permute' with pairs %r: nkid runs one rank, so the only"
                       " pair is (0, 0)%s" % (pairs, _loc()))
    _copy_all(srcs, dsts, "collective_permute")


def collective_permute_implicit(srcs_by_channel, dsts_by_channel, replica_group,
                                channel_ids=(0,), priority=None, name=None):
    """Ring permute over the group (one rank: each channel's copy)."""
    _lang.require("nki.collectives.collective_permute_implicit")
    _group(replica_group, "collective_permute_implicit")
    for s, d in zip(srcs_by_channel, dsts_by_channel):
        _copy_all(s, d, "collective_permute_implicit")


def collective_permute_implicit_reduce(srcs0_by_channel, srcs1_by_channel, dsts_by_channel,
                                       replica_group, op, channel_ids=(0,), priority=None,
                                       name=None):
    """Ring permute with a reduction (one rank: dst = op(srcs0, srcs1))."""
    _lang.require("nki.collectives.collective_permute_implicit_reduce")
    _group(replica_group, "collective_permute_implicit_reduce")
    for s0, s1, d in zip(srcs0_by_channel, srcs1_by_channel, dsts_by_channel):
        for a, b, c in zip(s0, s1, d):
            _isa.dma_compute(dst=c, srcs=[a, b], reduce_op=op)


def collective_permute_implicit_current_processing_rank_id(iteration_id, replica_group,
                                                           channel_id=0, name=None):
    """The rank whose data this rank processes at ``iteration_id`` (one
    rank: 0)."""
    _lang.require("nki.collectives.collective_permute_implicit_current_processing_rank_id")
    _group(replica_group, "collective_permute_implicit_current_processing_rank_id")
    return _isa.register_alloc(0)


def rank_id(name=None):
    """This rank's id in the collective group: 0 (a register)."""
    _lang.require("nki.collectives.rank_id")
    return _isa.register_alloc(0)
