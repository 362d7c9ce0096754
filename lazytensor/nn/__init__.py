"""Neural networks: modules with registered parameters (`lt.nn.Linear`, `lt.nn.Conv2d`, ...) and
the functions they are made of (`lt.nn.functional`, PyTorch's names); `lt.nn.init` and
`lt.nn.utils` as torch.nn's."""
from . import functional, init, utils
from .modules import (AvgPool2d, BatchNorm1d, BatchNorm2d, Conv2d, CrossEntropyLoss, Dropout, Embedding, Flatten,
                      GELU, Identity, LayerNorm, LeakyReLU, Linear, LogSoftmax, MaxPool2d, Module, ModuleList,
                      MSELoss, Parameter, ReLU, Sequential, Sigmoid, SiLU, Softmax, Tanh)
from .transformer import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer

__all__ = ["functional", "init", "utils", "AvgPool2d", "BatchNorm1d", "BatchNorm2d", "Conv2d", "CrossEntropyLoss",
           "Dropout", "Embedding", "Flatten", "GELU", "Identity", "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax",
           "MaxPool2d", "Module", "ModuleList", "MSELoss", "MultiheadAttention", "Parameter", "ReLU", "Sequential",
           "Sigmoid", "SiLU", "Softmax", "Tanh", "TransformerEncoder", "TransformerEncoderLayer"]
