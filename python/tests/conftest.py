import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import conformance_report  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def fresh_dynamo():
    """Dynamo's caches empty and torch's seed fixed around a test (the torch tests use it
    through pytestmark; torch is imported only by them)."""
    import torch
    torch._dynamo.reset()
    torch.manual_seed(0)
    yield
    torch._dynamo.reset()


def pytest_terminal_summary(terminalreporter):
    if not conformance_report.TALLY:
        return
    terminalreporter.section("ONNX node conformance per op")
    terminalreporter.write_line(conformance_report.table())
    if os.environ.get("ESTUARY_CONFORMANCE_REPORT"):
        conformance_report.write(os.environ["ESTUARY_CONFORMANCE_REPORT"])
