"""Neural networks: modules with registered parameters (`lt.nn.Linear`, `lt.nn.Conv2d`, ...) and
the functions they are made of (`lt.nn.functional`, PyTorch's names)."""
from . import functional
from .modules import (AvgPool2d, BatchNorm1d, BatchNorm2d, Conv2d, CrossEntropyLoss, Dropout, Embedding, Flatten,
                      GELU, Identity, LayerNorm, LeakyReLU, Linear, LogSoftmax, MaxPool2d, Module, ModuleList,
                      MSELoss, Parameter, ReLU, Sequential, Sigmoid, SiLU, Softmax, Tanh)

__all__ = ["functional", "AvgPool2d", "BatchNorm1d", "BatchNorm2d", "Conv2d", "CrossEntropyLoss", "Dropout",
           "Embedding", "Flatten", "GELU", "Identity", "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax", "MaxPool2d",
           "Module", "ModuleList", "MSELoss", "Parameter", "ReLU", "Sequential", "Sigmoid", "SiLU", "Softmax", "Tanh"]
