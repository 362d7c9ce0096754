"""CUDA backend (pycuda, imported only in device.py; compiles with nvcc)."""
