"""Fusion, scheduling and lowering: graph -> kernels -> loop IR (imports only ir)."""
