import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import conformance_report  # noqa: E402


def pytest_terminal_summary(terminalreporter):
    if not conformance_report.TALLY:
        return
    terminalreporter.section("ONNX node conformance per op")
    terminalreporter.write_line(conformance_report.table())
    if os.environ.get("ESTUARY_CONFORMANCE_REPORT"):
        conformance_report.write(os.environ["ESTUARY_CONFORMANCE_REPORT"])
