"""estuary compare: python -m estuary.compare MODEL [options]; `estuary compare` runs this."""
import argparse
import os
import sys

import numpy as np

EXIT_CLEAN, EXIT_DRIFTED, EXIT_ERROR = 0, 1, 2


def parser(prog):
    p = argparse.ArgumentParser(
        prog=prog,
        description="Runs a model with Estuary and with a reference on the same inputs and reports, node by node, "
                    "how far they are apart (cosine similarity, max absolute and relative error), and the first "
                    "node past the thresholds with its inputs' figures. Exit status: 0 clean, 1 a node past the "
                    "thresholds, 2 an error.",
        epilog="Example: %(prog)s resnet50.onnx --precision-mode bf16 --plot errors.png --json errors.json")
    p.add_argument("model", help="the model: an .onnx file, or anything `estuary convert` reads")
    p.add_argument("--reference", default="auto", choices=["auto", "onnxruntime", "framework", "estuary-f64"],
                   help="what to compare with: ONNX Runtime (ONNX files); the framework itself, in a Python of its "
                        "own (TensorFlow SavedModels and frozen .pb, Paddle inference.json and .pdmodel programs, "
                        "MindSpore .mindir); or "
                        "Estuary's own run of the model as translated, unoptimized, in f64 on the reference device "
                        "(any model). auto: ONNX Runtime for an ONNX file, the framework for its models when a Python "
                        "with it is found, else estuary-f64")
    p.add_argument("--framework-python", metavar="PATH",
                   help="the Python that runs the framework for --reference framework (default: "
                        "$ESTUARY_PYTHON_ENVS/<framework>/bin/python, else this Python if it has the framework)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE",
                   help="an input's data, a .npy file (repeatable); inputs not given are drawn at random")
    p.add_argument("--inputs", metavar="FILE.npz", help="inputs' data by name, an .npz file")
    p.add_argument("--input-shape", metavar="SPEC", help="fixes symbolic dims, as estuary convert takes it: "
                                                         "'x:1,3,224,224;ids:1,128'")
    p.add_argument("--seed", type=int, default=0, help="of the random inputs (default 0)")
    p.add_argument("--precision-mode", default="origin", help="as estuary convert takes it (origin, fp32, bf16, fp16, "
                                                              "mixed-bf16, mixed-fp16, or ATC's names)")
    p.add_argument("--allow-slow-precision", action="store_true", help="as estuary convert takes it")
    p.add_argument("--pipeline", default="O2", help="the pipeline of the model under test (default O2)")
    p.add_argument("--device", default="cpu", help="the device of the model under test (default cpu)")
    p.add_argument("--threads", type=int, default=0, help="threads of each run (default: every core)")
    p.add_argument("--framework", help="the frontend, when the file does not tell")
    p.add_argument("--plugin", action="append", default=[], metavar="PATH",
                   help="a plugin to load first (its kernels, ops, frontends); repeatable")
    p.add_argument("--cosine", type=float, metavar="C",
                   help="a node whose cosine similarity is below C is past the thresholds "
                        "(default by precision mode: 0.99999 for f32, 0.9999 fp16, 0.999 bf16)")
    p.add_argument("--max-rel", type=float, metavar="R",
                   help="a node whose max |estuary - reference| / max |reference| is above R is past the "
                        "thresholds (default by precision mode: 1e-3 f32, 1e-2 fp16, 5e-2 bf16)")
    p.add_argument("--rows", type=int, default=40, help="table rows on the terminal, around the first node past "
                                                        "the thresholds (0: all; default 40)")
    p.add_argument("--json", metavar="FILE", help="write the whole report as JSON")
    p.add_argument("--csv", metavar="FILE", help="write a row per compared result as CSV")
    p.add_argument("--plot", metavar="FILE.png", help="draw the error of every node along the graph")
    p.add_argument("--spool-dir", metavar="DIR", help="where Estuary's results wait for the reference's "
                                                      "(default: a temporary folder)")
    p.add_argument("--memory-budget", type=int, default=256, metavar="MIB",
                   help="the most MiB of reference tensors held at once (default 256)")
    return p


def _load_inputs(args):
    inputs = {}
    if args.inputs:
        with np.load(args.inputs) as archive:
            inputs.update({name: archive[name] for name in archive.files})
    for entry in args.input:
        name, separator, path = entry.partition("=")
        if not separator or not name or not path:
            raise ValueError(f"--input {entry!r}: expected NAME=FILE.npy")
        inputs[name] = np.load(path)
    return inputs


def main(argv=None, prog="python -m estuary.compare"):
    args = parser(prog).parse_args(argv)
    import estuary
    import estuary.compare as compare
    try:
        for plugin in args.plugin:
            estuary.load_plugin(plugin)
        load_kwargs = {"framework": args.framework} if args.framework else {}
        report = compare.compare(
            args.model, _load_inputs(args), reference=args.reference, input_shapes=args.input_shape,
            pipeline=args.pipeline, device=args.device, precision_mode=args.precision_mode, threads=args.threads,
            min_cosine=args.cosine, max_rel=args.max_rel, seed=args.seed, memory_budget=args.memory_budget << 20,
            spool_dir=args.spool_dir, allow_slow_precision=args.allow_slow_precision,
            framework_python=args.framework_python, **load_kwargs)
    except (estuary.EstuaryError, ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_ERROR
    print(report.table(args.rows))
    for path, write in ((args.json, report.to_json), (args.csv, report.to_csv), (args.plot, report.plot)):
        if path:
            write(path)
            print(f"wrote {os.path.abspath(path)}")
    return EXIT_CLEAN if report.clean else EXIT_DRIFTED


if __name__ == "__main__":
    sys.exit(main())
