"""Device backends: how one workload runs on cpu, cuda, xla (any PJRT device) or neuron.

Every backend imports torch and its device library inside its methods only, so
the agent can load this package on a host that has no torch at all.
"""
