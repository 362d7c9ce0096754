"""The cpu backend: LLVM IR rendered from loop IR, compiled by llvmlite, run on host threads."""
from .compiler import LLVMCompiler
from .device import CPUDevice
from .render import render

__all__ = ["CPUDevice", "LLVMCompiler", "render"]
