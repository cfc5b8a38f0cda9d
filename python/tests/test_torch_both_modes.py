"""The four benchmark models and a torchvision detection network in both modes, graph engine and FX, compiled with dynamic sizes:
results equal to eager PyTorch for every size, and one compilation for all of them.

The CNNs get a dynamic batch (torch._dynamo.mark_dynamic): with dynamic=True their spatial
sizes turn symbolic too, and AOT autograd's symbolic trace of MobileNetV2 alone then takes
25 s. The transformers are compiled with dynamic=True (batch and sequence)."""
import pytest
import torch

from test_torch_ge import CountingBackend
from torch_models import BertEncoder, LlamaBlock, import_torchvision

TOLERANCE = dict(rtol=1e-4, atol=1e-4)

# A fallback to eager is a failure here.
pytestmark = [pytest.mark.usefixtures("fresh_dynamo"), pytest.mark.filterwarnings("error:estuary")]


def torchvision_runs(name):
    model = getattr(import_torchvision().models, name)().eval()
    runs = []
    for batch in (2, 3, 5):
        x = torch.randn(batch, 3, 64, 64)
        torch._dynamo.mark_dynamic(x, 0)
        runs.append((x,))
    return model, model, runs, None


class DetectionNetwork(torch.nn.Module):
    """A torchvision detection model up to its head's outputs (box regressions and class
    logits per anchor). The postprocessing after it (box decoding, NMS) calls torchvision's
    C++ ops, which do not load with the CPU build of torch, so neither eager nor compiled
    runs can reach it here."""

    def __init__(self, model):
        super().__init__()
        self.backbone, self.head = model.backbone, model.head

    def forward(self, x):
        outputs = self.head(list(self.backbone(x).values()))
        return outputs["bbox_regression"], outputs["cls_logits"]


def detection_runs():
    detection = import_torchvision().models.detection
    model = DetectionNetwork(detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)).eval()
    runs = []
    for batch in (2, 3):  # a batch of 1 would be specialized (Dynamo's 0/1 rule)
        x = torch.randn(batch, 3, 320, 320)
        torch._dynamo.mark_dynamic(x, 0)
        runs.append((x,))
    return model, model, runs, None


def bert_runs():
    model = BertEncoder().eval()
    runs = []
    for batch, seq in [(2, 8), (3, 5), (4, 12)]:
        mask = torch.ones(batch, seq)
        mask[:, seq - 2:] = 0.0
        runs.append((torch.randint(0, 100, (batch, seq)), mask))
    return model, model, runs, True


def llama_runs():
    # Two copies with the same weights: each updates its own KV cache in place.
    eager, model = LlamaBlock().eval(), LlamaBlock().eval()
    model.load_state_dict(eager.state_dict())
    runs, position = [], 0
    for seq in (3, 5, 2):
        runs.append((torch.randn(2, seq, 64), torch.tensor(position)))
        position += seq
    return eager, model, runs, True


MODELS = {
    "resnet18": lambda: torchvision_runs("resnet18"),
    "mobilenet_v2": lambda: torchvision_runs("mobilenet_v2"),
    "ssdlite_detection": detection_runs,
    "bert": bert_runs,
    "llama": llama_runs,
}


@pytest.mark.parametrize("mode", ["ge", "fx"])
@pytest.mark.parametrize("name", list(MODELS))
def test_matches_eager_for_every_size_with_one_compilation(name, mode):
    eager, model, runs, dynamic = MODELS[name]()
    counting = CountingBackend(mode=mode)
    compiled = torch.compile(model, backend=counting, dynamic=dynamic)
    with torch.no_grad():
        for inputs in runs:
            torch.testing.assert_close(compiled(*inputs), eager(*inputs), **TOLERANCE)
    for name_, buffer in eager.named_buffers():  # the KV caches, where the model has them
        torch.testing.assert_close(dict(model.named_buffers())[name_], buffer, **TOLERANCE)
    assert counting.calls == 1
