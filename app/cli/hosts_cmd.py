"""``neuronbench hosts add|list|remove|test|import-ssh-config``: the machines runs go to."""
from __future__ import annotations

import argparse
import json
import sys

from app.cli.hosts_resolve import prompts_for, transport_for_profile
from app.core.ec2_launch import Ec2Launch
from app.core.errors import BadSpecError, NeuronBenchError
from app.core.hosts import SSH_PORT, HostProfile
from app.core.quoting import SENTENCE_LIMIT, clean, quoted
from app.core.slurm import SlurmSettings
from app.paths import AppPaths
from app.services.deploy import MODEL_LIBRARIES
from app.services.ec2.aws import AwsClients
from app.services.ec2.inventory import import_running, require_region
from app.services.host_access import check_host, import_ssh_config
from app.services.hosts_store import HostsStore
from app.services.key_files import key_file_problem
from app.services.ssh_prompts import TIMM_FROM_PYPI, TIMM_FROM_WHEEL

_HELP = {name: meta["help"] for name, meta in HostProfile.field_help().items()}
_EC2_HELP = {name: meta["help"] for name, meta in Ec2Launch.field_help().items()}
_EC2_ONLY = ("key_name", "spot", "subnet", "security_group", "ami", "max_minutes")
_SLURM_HELP = {name: meta["help"] for name, meta in SlurmSettings.field_help().items()}
_SLURM_ONLY = ("partition", "account", "time", "exclusive")


def register(commands, common: argparse.ArgumentParser) -> None:
    hosts = commands.add_parser("hosts", help="add, list, remove and test the hosts runs go to",
                                description="Hosts are reached over SSH (keys from the ssh-agent or files; host "
                                            "keys checked like OpenSSH). `local` is this computer.")
    sub = hosts.add_subparsers(dest="hosts_command", metavar="SUBCOMMAND")
    hosts.set_defaults(handler=lambda args: _usage(hosts))

    add = sub.add_parser("add", parents=[common], help="save a host profile")
    add.add_argument("name", metavar="NAME", help=_HELP["name"])
    where = add.add_mutually_exclusive_group(required=True)
    where.add_argument("--hostname", metavar="H", help=_HELP["hostname"])
    where.add_argument("--local", action="store_true", help=_HELP["local"])
    where.add_argument("--ec2", action="store_true", help=_HELP["ec2"])
    add.add_argument("--port", type=int, default=SSH_PORT, metavar="P", help=_HELP["port"])
    add.add_argument("--user", default="", metavar="U", help=_HELP["user"])
    add.add_argument("--identity", default="", metavar="FILE", help=_HELP["identity_file"])
    add.add_argument("--proxy-jump", default="", metavar="J", help=_HELP["proxy_jump"])
    add.add_argument("--python", default="", metavar="PATH", help=_HELP["python"])
    add.add_argument("--instance-type", default="", metavar="T", help=_HELP["instance_type"])
    add.add_argument("--region", default="", metavar="R", help=_HELP["region"])
    launch = add.add_argument_group("with --ec2 (also --instance-type, --region and --identity, the key pair's "
                                    "private key)")
    launch.add_argument("--key-name", default="", metavar="K", help=_EC2_HELP["key_name"])
    launch.add_argument("--spot", action="store_true", help=_EC2_HELP["spot"])
    launch.add_argument("--subnet", default="", metavar="S", help=_EC2_HELP["subnet"])
    launch.add_argument("--security-group", default="", metavar="G", help=_EC2_HELP["security_group"])
    launch.add_argument("--ami", default="", metavar="AMI", help=_EC2_HELP["ami"])
    launch.add_argument("--max-minutes", type=int, default=0, metavar="M", help=_EC2_HELP["max_minutes"])
    slurm = add.add_argument_group("with --slurm (the --hostname is the cluster's SSH login node)")
    slurm.add_argument("--slurm", action="store_true", help=_HELP["slurm"])
    slurm.add_argument("--partition", default="", metavar="P", help=_SLURM_HELP["partition"])
    slurm.add_argument("--account", default="", metavar="A", help=_SLURM_HELP["account"])
    slurm.add_argument("--time", type=int, default=0, metavar="MIN", help=_SLURM_HELP["time_minutes"])
    slurm.add_argument("--exclusive", action="store_true", help=_SLURM_HELP["exclusive"])
    add.set_defaults(handler=handle_add)

    listing = sub.add_parser("list", parents=[common], help="list the hosts")
    listing.add_argument("--json", action="store_true", help="print the profiles as JSON on stdout")
    listing.set_defaults(handler=handle_list)

    show = sub.add_parser("show", parents=[common], help="show one host profile")
    show.add_argument("name", metavar="NAME")
    show.add_argument("--json", action="store_true", help="print the profile as JSON on stdout")
    show.set_defaults(handler=handle_show)

    remove = sub.add_parser("remove", parents=[common], help="forget a host profile")
    remove.add_argument("name", metavar="NAME")
    remove.set_defaults(handler=handle_remove)

    test = sub.add_parser("test", parents=[common], help="connect, check the host key and Python, deploy the "
                          "agent and describe the host")
    test.add_argument("name", metavar="NAME")
    test.add_argument("--install", type=_libraries, default=(), metavar="LIB[,LIB]",
                      help=f"the model libraries to pip-install on the host if they are missing there "
                           f"({', '.join(MODEL_LIBRARIES)}, or all), into ~/.cache/neuronbench/site, for the agent "
                           f"only; torchvision is the build for the host's torch, optimum-neuron (generate on the "
                           f"Neuron SDK <= 2.31 stack) the release for its torch-neuronx; the host needs internet")
    test.add_argument("--install-timm", choices=(TIMM_FROM_PYPI, TIMM_FROM_WHEEL),
                      help="if timm is missing there: pip-install it on the host (pypi) or upload the wheel this "
                           "app carries (wheel, no internet needed); either goes to ~/.cache/neuronbench/site, for "
                           "the agent only")
    test.add_argument("--json", action="store_true", help="print what was found as JSON on stdout")
    test.set_defaults(handler=handle_test)

    imp = sub.add_parser("import-ssh-config", parents=[common], help="add the hosts of an OpenSSH config file")
    imp.add_argument("--config", default="~/.ssh/config", metavar="F", help="the file to read (default %(default)s)")
    imp.set_defaults(handler=handle_import)

    ec2 = sub.add_parser("import-ec2", parents=[common], help="add the running EC2 instances of a region as hosts "
                         "(instance type and region filled in, so runs are priced)")
    ec2.add_argument("--region", metavar="R", help="the region to look in (default: AWS's configured region)")
    ec2.add_argument("--tag", action="append", default=[], metavar="K=V",
                     help="only instances with this tag (repeat for several; K alone: the tag is set)")
    ec2.add_argument("--identity", default="", metavar="FILE", help=_HELP["identity_file"])
    ec2.set_defaults(handler=handle_import_ec2)


def _libraries(text: str) -> tuple[str, ...]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if names == ["all"]:
        return MODEL_LIBRARIES
    unknown = [name for name in names if name not in MODEL_LIBRARIES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"{', '.join(unknown) or 'nothing'}: not a model library NeuronBench "
                                         f"installs (name {', '.join(MODEL_LIBRARIES)} or all)")
    return tuple(names)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _store(args: argparse.Namespace) -> tuple[AppPaths, HostsStore]:
    paths = AppPaths.resolve(args.data_dir)
    return paths, HostsStore(paths.config)


def _launch_from(args: argparse.Namespace) -> Ec2Launch | None:
    if not args.ec2:
        given = [f"--{name.replace('_', '-')}" for name in _EC2_ONLY if getattr(args, name)]
        if given:
            raise BadSpecError(f"{', '.join(given)} go with --ec2 (a host launched for each run)")
        return None
    missing = [flag for flag, value in (("--instance-type", args.instance_type), ("--region", args.region),
                                        ("--key-name", args.key_name), ("--identity", args.identity)) if not value]
    if missing:
        raise BadSpecError(f"an --ec2 host needs {', '.join(missing)}: the type and region to launch, the EC2 key "
                           f"pair to start it with and that key pair's private key file")
    return Ec2Launch(instance_type=args.instance_type, region=args.region, key_name=args.key_name, spot=args.spot,
                     subnet=args.subnet, security_group=args.security_group, ami=args.ami,
                     max_minutes=args.max_minutes)


def _slurm_from(args: argparse.Namespace) -> SlurmSettings | None:
    if not args.slurm:
        given = [f"--{name}" for name in _SLURM_ONLY if getattr(args, name)]
        if given:
            raise BadSpecError(f"{', '.join(given)} go with --slurm (a Slurm cluster's login node)")
        return None
    return SlurmSettings(partition=args.partition, account=args.account, time_minutes=args.time,
                         exclusive=args.exclusive)


def handle_add(args: argparse.Namespace) -> int:
    _paths, store = _store(args)
    profile = HostProfile(name=args.name, local=args.local, hostname=args.hostname or "", port=args.port,
                          user=args.user, identity_file=args.identity, proxy_jump=args.proxy_jump,
                          python=args.python, instance_type=args.instance_type, region=args.region,
                          ec2=_launch_from(args), slurm=_slurm_from(args))
    problem = key_file_problem(profile.identity_file) if profile.identity_file else None
    if problem and problem != "no such file":  # /dev/zero, a folder, a FIFO: no key, now or later
        raise BadSpecError(f"--identity {quoted(profile.identity_file)} {problem}")
    store.add(profile)
    if problem:
        print(f"neuronbench: warning: the key file {quoted(profile.identity_file)} does not exist (yet)",
              file=sys.stderr)
    print(clean(f"added {profile.name}: {_where(profile)}", SENTENCE_LIMIT), file=sys.stderr)
    return 0


def _where(profile: HostProfile) -> str:
    """The address, and for a Slurm login node what its jobs ask for."""
    if profile.slurm is None:
        return profile.address
    return f"{profile.address}, the login node of a Slurm cluster ({profile.slurm.describe()})"


def handle_list(args: argparse.Namespace) -> int:
    _paths, store = _store(args)
    profiles = store.list()
    if args.json:
        json.dump([p.to_dict() for p in profiles], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    rows = [("NAME", "ADDRESS", "VIA", "PYTHON", "INSTANCE", "REGION")]
    rows += [(p.name, p.address if p.slurm is None else f"{p.address} (Slurm login node)", p.proxy_jump or "-",
              p.python or ("the app's" if p.local else "auto"),
              p.instance_type or "-", p.region or "-")
             for p in profiles]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    return 0


def handle_show(args: argparse.Namespace) -> int:
    _paths, store = _store(args)
    profile = store.get(args.name)
    if args.json:
        json.dump(profile.to_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print(f"{profile.name}: {_where(profile)}")
    for name, value in profile.to_dict().items():
        if name not in ("name", "slurm", "ec2") and value not in ("", None, False, SSH_PORT):
            print(f"  {name.replace('_', ' ')}: {value}")
    if profile.ec2 is not None:
        print(f"  launched on EC2 for each run: {profile.ec2.describe()}")
    if profile.slurm is not None:
        print(f"  runs: sbatch on the login node ({profile.slurm.describe()}), srun starts the agent on every "
              f"node (run --nnodes N), scancel stops them")
    return 0


def handle_remove(args: argparse.Namespace) -> int:
    _paths, store = _store(args)
    store.remove(args.name)
    print(f"removed {args.name}", file=sys.stderr)
    return 0


def handle_test(args: argparse.Namespace) -> int:
    paths, store = _store(args)
    profile = store.get(args.name)
    transport = transport_for_profile(profile, paths, prompts_for(args), store)

    def say(text: str) -> None:
        print(clean(f"{profile.name}: {text}", SENTENCE_LIMIT), file=sys.stderr)  # the host's answers

    try:
        report = check_host(transport, profile, say)
    finally:
        transport.close()
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        from app.cli.text import format_env

        print(format_env(profile.name, report["env"]))
    return 0


def handle_import_ec2(args: argparse.Namespace) -> int:
    _paths, store = _store(args)
    added, skipped = [], []
    for region in require_region(args.region, []):
        got, why = import_running(store, AwsClients(region), args.tag, args.identity)
        added += got
        skipped += why
    for profile in added:
        print(f"added {profile.name}: {profile.address} ({profile.instance_type} in {profile.region})",
              file=sys.stderr)
    for reason in skipped:
        print(clean(f"skipped {reason}", SENTENCE_LIMIT), file=sys.stderr)
    if not added and not skipped:
        raise NeuronBenchError("no running instance matched" + (f" the tag(s) {', '.join(args.tag)}" if args.tag
                                                                 else ""))
    return 0


def handle_import(args: argparse.Namespace) -> int:
    _paths, store = _store(args)
    added, skipped = import_ssh_config(store, args.config)
    for profile in added:
        print(f"added {profile.name}: {profile.address}" + (f" via {profile.proxy_jump}" if profile.proxy_jump else ""),
              file=sys.stderr)
    for reason in skipped:
        print(clean(f"skipped {reason}", SENTENCE_LIMIT), file=sys.stderr)  # quotes the ssh config
    if not added and not skipped:
        raise NeuronBenchError(f"{args.config} names no concrete Host (only wildcards or nothing)")
    return 0
