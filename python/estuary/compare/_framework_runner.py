"""The half of a framework reference that runs in the framework's own Python (estuary.compare's
Framework starts it there): it opens the model with the framework, runs it on the given inputs
and hands back the values asked for, a batch at a time, as .npy files.

It never imports estuary: the frameworks bundle their own protobuf, oneDNN and OpenMP, which do
not share a process with Estuary's. Each framework's runner (_tensorflow_runner.py) opens its models;
this module is the protocol they share, over the runner's stdin and stdout:

    request (argv[1], JSON): {"model", "feeds" (an .npz), "folder", "wanted": [[name, bytes]...],
                              "budget", "threads", and the framework's own keys}
    runner -> parent, a JSON object a line:
        {"producers": {value name: [node name, op type]}}       first
        {"value": name, "file": path}                           one per value of a batch
        {"batch_end": true}    then the runner waits for a line on stdin: the parent has read
                               the batch's files (and may have deleted them)
        {"done": true, "skipped": {name: why}}                  last
Values the model has no tensor of are left out silently; those it has but cannot fetch are
listed in "skipped". Anything written to stdout by the framework goes to stderr instead.
"""
import json
import os
import sys

import numpy as np


class Channel:
    """The protocol's stdout, kept apart from the framework's own prints (which go to stderr)."""

    def __init__(self):
        self.out = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr

    def send(self, **message):
        self.out.write(json.dumps(message) + "\n")
        self.out.flush()

    def wait_for_parent(self):
        if not sys.stdin.readline():
            sys.exit(0)  # the parent is gone: nothing is waiting for the rest


def batches(wanted, budget):
    """[[name, bytes]...] split into lists of names whose bytes stay within the budget (one at least)."""
    batch, batch_bytes = [], 0
    for name, size in wanted:
        if batch and batch_bytes + size > budget:
            yield batch
            batch, batch_bytes = [], 0
        batch.append(name)
        batch_bytes += size
    if batch:
        yield batch


def serve(open_model):
    """Runs the protocol. open_model(request, feeds) returns an object with
    producers {value name: (node, op)}, tensor_of(value name) -> the framework's handle or None,
    and fetch([handles]) -> [arrays], raising when one of them cannot be fetched."""
    with open(sys.argv[1]) as file:
        request = json.load(file)
    channel = Channel()
    with np.load(request["feeds"]) as archive:
        feeds = {name: archive[name] for name in archive.files}
    model = open_model(request, feeds)
    channel.send(producers={name: list(producer) for name, producer in model.producers.items()})
    known = [[name, size] for name, size in request["wanted"] if model.tensor_of(name) is not None]
    skipped = {}
    for number, batch in enumerate(batches(known, request["budget"])):
        for index, (name, array) in enumerate(_fetch(model, batch, skipped)):
            if array.dtype.kind not in "biufc":
                skipped[name] = f"dtype {array.dtype} is not numeric"
                continue
            path = os.path.join(request["folder"], f"{number}_{index}.npy")
            np.save(path, array)
            channel.send(value=name, file=path)
        channel.send(batch_end=True)
        channel.wait_for_parent()
    channel.send(done=True, skipped=skipped)


def _fetch(model, batch, skipped):
    """[(name, array)] of the batch; a value that cannot be fetched goes to `skipped` with why."""
    try:
        return list(zip(batch, map(np.asarray, model.fetch([model.tensor_of(name) for name in batch]))))
    except Exception:  # one of them cannot be fetched (inside a loop, a resource...): each on its own
        fetched = []
        for name in batch:
            try:
                fetched.append((name, np.asarray(model.fetch([model.tensor_of(name)])[0])))
            except Exception as error:
                skipped[name] = f"{type(error).__name__}: {(str(error).splitlines() or [''])[0]}"
        return fetched
