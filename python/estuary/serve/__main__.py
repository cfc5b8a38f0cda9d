"""python -m estuary.serve MODEL [options]: serve a model over HTTP on Ray Serve.

Without --address it starts a Ray cluster on this machine (and stops it on exit); with one
it joins that cluster (and removes only its application on exit). It returns to the shell
on Ctrl-C or SIGTERM. POST {"inputs": {NAME: nested lists}} as JSON, or an .npz archive with
Content-Type: application/octet-stream, to http://HOST:PORT/ROUTE; GET it for the model's
inputs and outputs. GET /-/healthz answers 200 once every replica is ready.
"""
import argparse
import os
import signal
import sys
import time
import uuid

from .codec import parse_size


def parse_dims(text):
    """{"x": [1, 3, 224, 224], "y": [-1, 128]} from "x:1,3,224,224;y:-1,128" (the form of
    `estuary convert --input-shape`); ValueError naming the part that is not."""
    dims = {}
    for part in filter(None, (piece.strip() for piece in (text or "").split(";"))):
        name, colon, values = part.partition(":")
        try:
            if not colon or not name.strip():
                raise ValueError
            dims[name.strip()] = [int(value) for value in values.split(",")]
        except ValueError:
            raise ValueError(f"takes NAME:N,N,...;NAME:N,... (e.g. x:1,3,224,224), got '{part}'") from None
    return dims


def arguments(argv, prog):
    parser = argparse.ArgumentParser(prog=prog, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="an offline model (.eom), or a model file a frontend reads (converted at start)")
    parser.add_argument("--replicas", type=int, default=1, help="replicas serving the model (default 1)")
    parser.add_argument("--max-batch", type=int, default=16,
                        help="most rows one merged run holds; 1 turns batching off (default 16)")
    parser.add_argument("--batch-wait-ms", type=float, default=5.0,
                        help="when the model is free and fewer than --max-batch rows wait, how long the oldest request "
                        "waits for others (default 5)")
    parser.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP address to listen on (default 127.0.0.1; "
                        "0.0.0.0 for every interface)")
    parser.add_argument("--address", help="a running Ray cluster to join (e.g. auto, or HEAD:6379); "
                        "without it a local cluster is started")
    parser.add_argument("--name", help="the Ray Serve application's name (default: the model file's name)")
    parser.add_argument("--route-prefix", default="/", help="the HTTP path the model answers on (default /)")
    parser.add_argument("--replica-cpus", type=float, default=1.0,
                        help="CPUs Ray reserves for each replica (default 1)")
    parser.add_argument("--threads", type=int, help="model threads per replica (default: its CPUs, rounded up)")
    parser.add_argument("--max-replicas-per-node", type=int, help="at most this many replicas on one node")
    parser.add_argument("--input-shape", help="for a model converted at start: x:1,3,224,224;y:-1,128 "
                        "(-1 keeps a dim symbolic)")
    parser.add_argument("--warm-dims", help="sizes of the other symbolic dims to build plans for at start, "
                        "e.g. seq:16,128 (the batch sizes are built for each)")
    parser.add_argument("--tuning", choices=("on", "off"), default="off",
                        help="on: each plan a replica builds times the kernels a node could run on this machine "
                        "and keeps the fastest (start-up takes up to --tuning-budget longer); off: the built-in "
                        "rules choose (default off)")
    parser.add_argument("--timing-cache", metavar="FILE", help="with --tuning on: a file on each replica's node keeping the "
                        "measurements, so that a replica finding them there does not measure again")
    parser.add_argument("--tuning-budget", type=float, default=60.0, metavar="SECONDS",
                        help="the most seconds a replica spends measuring; later plans get the rules' choice "
                        "(default 60)")
    parser.add_argument("--max-body-size", default="64MiB", help="the largest request body (default 64MiB)")
    parser.add_argument("--object-store-memory", default="256MiB",
                        help="the local cluster's object store (default 256MiB; not used with --address)")
    args = parser.parse_args(argv)
    for name in ("replicas", "max_batch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.replica_cpus <= 0:
        parser.error(f"--replica-cpus must be more than 0, got {args.replica_cpus}")
    for name in ("max_body_size", "object_store_memory"):
        try:
            setattr(args, name, parse_size(getattr(args, name)))
        except ValueError as error:
            parser.error(f"--{name.replace('_', '-')}: {error}")
    for name in ("input_shape", "warm_dims"):
        try:
            setattr(args, name, parse_dims(getattr(args, name)))
        except ValueError as error:
            parser.error(f"--{name.replace('_', '-')} {error}")
    if args.timing_cache and args.tuning == "off":
        parser.error("--timing-cache is read and written only with --tuning on")
    if args.tuning_budget < 0:
        parser.error(f"--tuning-budget must be 0 or more, got {args.tuning_budget:g}")
    if not os.path.exists(args.model):
        parser.error(f"{args.model}: no such file or directory")
    args.model = os.path.abspath(args.model)
    return args


def check_room(args, ray):
    """Stops with a message when the cluster has fewer CPUs than the replicas ask for (Ray
    would wait for them forever), and warns when fewer are free now (the replicas wait for
    them, or for nodes an autoscaler adds)."""
    needed = args.replicas * args.replica_cpus
    total = ray.cluster_resources().get("CPU", 0)
    free = ray.available_resources().get("CPU", 0)
    if needed > total:
        raise SystemExit(f"error: {args.replicas} replicas of {args.replica_cpus:g} CPUs need {needed:g} CPUs, the Ray "
                         f"cluster has {total:g}: lower --replicas or --replica-cpus")
    if needed > free:
        print(f"warning: {args.replicas} replicas of {args.replica_cpus:g} CPUs need {needed:g} CPUs, {free:g} of the "
              "cluster's are free: the replicas start as others free theirs", file=sys.stderr, flush=True)


def main(argv=None, prog="python -m estuary.serve"):
    args = arguments(sys.argv[1:] if argv is None else argv, prog)
    import ray
    from ray import serve

    import estuary.serve

    if args.address:
        ray.init(address=args.address)
    else:
        # "local": a new cluster even when RAY_ADDRESS names a running one.
        ray.init(address="local", object_store_memory=args.object_store_memory, include_dashboard=False)
    check_room(args, ray)
    name = args.name or os.path.basename(args.model.rstrip("/"))
    # One version for both deployments below, so that the second keeps the replicas the first
    # started; a new one each time the command runs, so that a rerun replaces them.
    app = estuary.serve.application(
        args.model, version=uuid.uuid4().hex, replicas=args.replicas, replica_cpus=args.replica_cpus,
        max_replicas_per_node=args.max_replicas_per_node, threads=args.threads, max_batch=args.max_batch,
        batch_wait_ms=args.batch_wait_ms, max_body_bytes=args.max_body_size, input_shapes=args.input_shape,
        warm_dims=args.warm_dims, tuning=args.tuning == "on", timing_cache=args.timing_cache,
        tuning_budget_s=args.tuning_budget)

    def stop(signum, frame):
        raise KeyboardInterrupt

    # After ray.init, which installs a SIGTERM handler of its own that exits at once.
    signal.signal(signal.SIGTERM, stop)
    try:
        serve.start(http_options={"host": args.host, "port": args.port})
        # Ray Serve's /-/healthz answers 200 as soon as an application has a route, before
        # its replicas are up. Deploying without a route first, and adding the route once
        # serve.run has seen every replica ready, makes 200 mean "ready".
        serve.run(app, name=name, route_prefix=None)
        serve.run(app, name=name, route_prefix=args.route_prefix)
        print(f"estuary.serve: {args.model} is served at http://{args.host}:{args.port}{args.route_prefix} by "
              f"{args.replicas} replica{'s' if args.replicas > 1 else ''} (application '{name}'); Ctrl-C stops",
              flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        if args.address:
            serve.delete(name)
        else:
            serve.shutdown()
        ray.shutdown()


if __name__ == "__main__":
    main()
