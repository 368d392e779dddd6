"""The compile targets NKI names (NEURON_PLATFORM_TARGET_OVERRIDE in
aws-neuron-sdk nki/api/nki/__init__.py: ``trn1|inf2|gen2``, ``trn2|gen3``,
``trn3|gen4``), the ones nkid's NeuronCore model takes (model/model.h,
MODEL_TARGET_NAMES; docs/model.md).  An empty target is the default
(trn1)."""

#: every name NKI accepts -> the NeuronCore the model costs it on
TARGETS = {"trn1": "trn1", "inf2": "trn1", "gen2": "trn1",
           "trn2": "trn2", "gen3": "trn2",
           "trn3": "trn3", "gen4": "trn3"}

#: as the daemon and nkictl list them
NAMES = "trn1 (inf2, gen2), trn2 (gen3), trn3 (gen4)"


def check(target):
    """target itself if NKI names it (or it is empty), else ValueError
    naming it and listing the targets NKI names."""
    if target and target not in TARGETS:
        raise ValueError("unknown target '%s': NKI names %s" % (target, NAMES))
    return target
