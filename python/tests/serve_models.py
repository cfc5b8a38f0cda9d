"""The models python/tests/test_serve.py serves, exported to ONNX in PyTorch's environment
(random, seeded weights; nothing downloaded):

    .venvs/torch/bin/python python/tests/serve_models.py OUT_DIR

writes OUT_DIR/cnn.onnx, a small image classifier (x: f32[batch, 3, 32, 32] -> logits), and
OUT_DIR/encoder.onnx, a two-layer BERT-style encoder (ids: i64[batch, seq] and mask:
f32[batch, seq] -> hidden: f32[batch, seq, 64]). Both are small so that thousands of requests
through a local Ray cluster take seconds, and both keep `batch` symbolic (the encoder `seq`
too) so that the server's batching has a dim to merge along and shapes to tell apart.
"""
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_models import BertEncoder  # noqa: E402


class SmallCnn(nn.Module):
    """Convolutions with batch norm (statistics set, so that folding them is checked),
    pooling and a classifier: the ops of a ResNet in a few milliseconds."""

    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1))
        self.classifier = nn.Linear(32, classes)
        generator = torch.Generator().manual_seed(1)
        for module in self.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.copy_(torch.randn(module.num_features, generator=generator) * 0.1)
                module.running_var.copy_(torch.rand(module.num_features, generator=generator) + 0.5)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


def export(model, path, args, input_names, output_names, dynamic_axes):
    with torch.no_grad():
        torch.onnx.export(model.eval(), args, path, input_names=input_names, output_names=output_names,
                          dynamic_axes=dynamic_axes, opset_version=17, dynamo=False)


def main(directory):
    torch.manual_seed(0)
    export(SmallCnn(), os.path.join(directory, "cnn.onnx"), (torch.randn(2, 3, 32, 32),), ["x"], ["logits"],
           {"x": {0: "batch"}, "logits": {0: "batch"}})
    ids = torch.randint(0, 100, (2, 16))
    mask = torch.ones(2, 16)
    export(BertEncoder(), os.path.join(directory, "encoder.onnx"), (ids, mask), ["ids", "mask"], ["hidden"],
           {"ids": {0: "batch", 1: "seq"}, "mask": {0: "batch", 1: "seq"}, "hidden": {0: "batch", 1: "seq"}})


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: serve_models.py OUT_DIR")
    main(sys.argv[1])
