"""Loads exported jobs with the loaders of the tools that run them and prints
what those loaders read, as one JSON object, for test_export_loaders and
test_export_runs.

    load_exports.py accelerate CONFIG.yaml
    load_exports.py azureml JOB.yaml
    load_exports.py serve

A file the loader rejects (a schema error, an unknown key) ends the script
with the loader's own message on stderr and exit status 1. `serve` answers
one request per line of stdin, a JSON list [TOOL, FILE], with one JSON line
{"loaded": ..., "problem": null} or {"loaded": null, "problem": MESSAGE}, so
a suite imports azure-ai-ml (tens of seconds on a loaded machine) once.
"""

import json
import os
import sys


def accelerate_config(path):
    from accelerate.commands.config.config_args import load_config_from_file

    config = load_config_from_file(path)
    return {
        "class": type(config).__name__,
        "compute_environment": config.compute_environment.value,
        "distributed_type": config.distributed_type.value,
        "num_machines": config.num_machines,
        "num_processes": config.num_processes,
        "machine_rank": config.machine_rank,
        "main_process_ip": config.main_process_ip,
        "main_process_port": config.main_process_port,
        "mixed_precision": config.mixed_precision,
        "use_cpu": config.use_cpu,
        "deepspeed_config": config.deepspeed_config,
        "fsdp_config": config.fsdp_config,
    }


def azureml_job(path):
    from azure.ai.ml import load_job

    job = load_job(source=path)
    environment = job.environment
    return {
        "class": type(job).__name__,
        "type": job.type,
        "display_name": job.display_name,
        "command": job.command,
        "code": str(job.code) if job.code is not None else None,
        "environment": environment if isinstance(environment, str) else None,
        "image": getattr(environment, "image", None),
        "compute": job.compute,
        "instance_count": job.resources.instance_count,
        "instance_type": job.resources.instance_type,
        "distribution": job.distribution.type if job.distribution else None,
        "process_count_per_instance": (
            job.distribution.process_count_per_instance if job.distribution else None
        ),
        "environment_variables": dict(job.environment_variables or {}),
    }


LOADERS = {"accelerate": accelerate_config, "azureml": azureml_job}


def load(tool, path):
    """What `tool`'s loader read from `path`, as (loaded, None), or (None,
    the loader's message) when it refused the file."""
    try:
        return LOADERS[tool](path), None
    except Exception as error:  # the loader's own message is the point
        return None, f"{path}: {type(error).__name__}: {error}"


def serve():
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stdout carries answers only
    for line in sys.stdin:
        request = json.loads(line)
        if len(request) != 2 or request[0] not in LOADERS:
            loaded, problem = None, f"load_exports.py: bad request {request}"
        else:
            loaded, problem = load(*request)
        answers.write(json.dumps({"loaded": loaded, "problem": problem}, default=str) + "\n")
        answers.flush()


def main(argv):
    if argv[1:] == ["serve"]:
        serve()
        return 0
    if len(argv) != 3 or argv[1] not in LOADERS:
        print("usage: load_exports.py accelerate|azureml FILE | serve", file=sys.stderr)
        return 2
    loaded, problem = load(argv[1], argv[2])
    if problem:
        print(problem, file=sys.stderr)
        return 1
    print(json.dumps(loaded, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
