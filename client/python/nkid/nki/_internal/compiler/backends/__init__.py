"""``nkid.nki.compiler.backends`` (see nkid.nki._internal)."""
