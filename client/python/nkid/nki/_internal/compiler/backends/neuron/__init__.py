"""``nkid.nki.compiler.backends.neuron`` (see nkid.nki._internal)."""
