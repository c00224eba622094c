"""NeuronBench agent: a small stdlib-only program shipped to each host as one zipapp.

It probes the host, runs the benchmark workloads in a detached run directory and
streams protocol v1 events (``remote_agent.protocol``) on stdout.  torch, timm,
torch_xla and torch_neuronx are imported only inside the functions of
``workloads/`` and ``backends/``, so ``probe`` works on a bare Python >= 3.8.
"""
__version__ = "0.1.0"
