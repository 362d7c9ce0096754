"""OpenCL backend (pyopencl, imported only here)."""
