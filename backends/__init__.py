"""Backends: render loop IR, compile through the kernel cache, run on a device."""
