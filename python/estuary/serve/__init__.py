"""Serving Estuary models on Ray Serve (docs/serving.md).

From the command line, on this machine or joining a Ray cluster:

    python -m estuary.serve resnet50.eom --replicas 2 --max-batch 16 --port 8000
    curl -H 'Content-Type: application/json' -d '{"inputs": {"x": [[...]]}}' localhost:8000/

From Python, as an application to run or to compose with others:

    from ray import serve
    import estuary.serve
    handle = serve.run(estuary.serve.application("resnet50.eom", replicas=2, max_batch=16))
    outputs = handle.infer.remote({"x": images}).result()      # {"logits": array}

`estuary.serve.EstuaryModel` is the deployment itself, for `.options(...).bind(...)`.
Importing this package imports Ray; `import estuary` alone does not.
"""
try:
    import ray.serve  # noqa: F401
except ImportError as error:
    raise ImportError(f"estuary.serve needs Ray Serve, which this Python ({__import__('sys').executable}) cannot "
                      f"import ({error}): pip install 'ray[serve]' (python/envs/ray.txt pins the tested version)") \
        from error

from .codec import parse_size  # noqa: E402
from .deployment import EstuaryModel, application  # noqa: E402

__all__ = ["EstuaryModel", "application", "parse_size"]
