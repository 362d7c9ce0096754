"""The cpu backend: LLVM IR rendered from loop IR (render.py), compiled by llvmlite
(compiler.py), run on host threads (device.py)."""
